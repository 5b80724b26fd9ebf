// The trace hash. It covers a record as a run of 64-bit words:
//   header   object kind | object index << 8 | field count << 40
//   seq      the record's per-object sequence number
//   per field, its value:
//            integer, flag, object (kind | index << 8): one word;
//            text: min(length, 255) | first 7 bytes << 8 (a length of
//            255 or more follows in a word), then 8 bytes per word;
//            work requests: count, then 3 words each;
//            completions: count, then 4 words each
//   shape    the record's keys: per field, in order,
//            shape = rotl(shape, 7) ^ (key id ^ type << 56), from 0
//            (kept by CallRecord::add as fields are added)
// The keys are hashed by their compile-time ids (record::Key), folded into
// the one shape word, so the hash covers every key and its order at the
// cost of one word a record, and does not depend on where strings or
// records sit in memory; bytes are packed little-endian. The words are
// made and hashed on the fly, never stored.
#pragma once

#include "opcodes.h"

#include "call_record.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace verbfault::observers::encoding {

// The trace hash's running state: four lanes, so that the multiplies of
// four consecutive words overlap instead of forming one chain of dependent
// multiplies (a lane's step is about 5 cycles; with four lanes the words
// go in at about the multiplier's throughput). Hashed word i (counting
// from the first record of the trace) goes into lane i mod 4 (a, b, c, d):
//   lane = rotl(lane ^ word, 31) * 0x9e3779b97f4a7c15
// (the rotation brings high bits down, so every bit of a word reaches
// every bit of the lane over the next words). value() folds b, c and d
// into a with the same step and applies splitmix64's finalizer; it is a
// pure function of the hashed words.
struct Hash {
  std::uint64_t a = 0x243f6a8885a308d3ull;  // the first 256 bits of pi's fraction
  std::uint64_t b = 0x13198a2e03707344ull;
  std::uint64_t c = 0xa4093822299f31d0ull;
  std::uint64_t d = 0x082efa98ec4e6c89ull;
  std::uint64_t value() const;
};

namespace hash_detail {

using record::Value;
using Type = record::Value::Type;

constexpr std::uint64_t kNoQp = record::kUnknownIndex;
constexpr std::size_t kLongText = 0xff;

static_assert(std::endian::native == std::endian::little,
              "words are packed little-endian by copying bytes");

// Odd, with well-spread bits (2^64 / golden ratio): the lanes' multiplier.
constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15ull;

// splitmix64's finalizer (Steele, Lea, Flood 2014): full avalanche.
inline std::uint64_t finalize(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The first `count` (<= 8) bytes at `bytes`, little-endian, with loads of
// fixed size that may overlap: a byte-by-byte copy to the stack and a
// word load from it stalls store forwarding on every short text.
inline std::uint64_t load_bytes(const char* bytes, std::size_t count) {
  if (count >= 4) {
    std::uint32_t low;
    std::uint32_t high;
    std::memcpy(&low, bytes, 4);
    std::memcpy(&high, bytes + count - 4, 4);
    return low | std::uint64_t{high} << (8 * (count - 4));
  }
  if (count == 0) return 0;
  const auto byte = [&](std::size_t i) {
    return std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  };
  return byte(0) | byte(count / 2) | byte(count - 1);
}

// One lane's step.
inline std::uint64_t step(std::uint64_t lane, std::uint64_t word) {
  return std::rotl(lane ^ word, 31) * kMultiplier;
}

// The trace hash's lanes while a record is hashed (in registers). The
// lanes take turns: this word's multiply waits for the one four words
// back, not for the previous word's. The rotation of names is free (the
// registers are renamed).
struct Sink {
  std::uint64_t a;
  std::uint64_t b;
  std::uint64_t c;
  std::uint64_t d;
  void hashed(std::uint64_t word) {
    const std::uint64_t lane = step(a, word);
    a = b;
    b = c;
    c = d;
    d = lane;
  }
};

inline std::uint64_t object_word(ObjectRef ref) {
  return static_cast<std::uint64_t>(ref.kind) | std::uint64_t{ref.index} << 8;
}

inline void encode_value(const Value& value, Sink& out) {
  // Most fields are one word (an integer's bits either way, a flag's 0 or
  // 1, an object's kind | index << 8): a predictable branch, not the switch.
  if (value.is_one_word()) [[likely]] {
    out.hashed(value.unsigned_integer);
    return;
  }
  switch (value.type) {
    case Type::integer:
    case Type::boolean:
    case Type::object:
      return;  // one word, above
    case Type::text: {
      // Short texts (the usual names) take one word; a length of 255 or
      // more is written in a word of its own.
      const char* text = value.text;
      const std::size_t size = value.size;
      out.hashed(std::min(size, kLongText) | load_bytes(text, std::min<std::size_t>(7, size)) << 8);
      if (size >= kLongText) out.hashed(size);
      for (std::size_t at = 7; at < size; at += 8)
        out.hashed(load_bytes(text + at, std::min<std::size_t>(8, size - at)));
      return;
    }
    case Type::wrs:
      out.hashed(value.size);
      for (const record::WrSummary& wr : value.as_wrs()) {
        out.hashed(wr.wr_id);
        out.hashed(wr.length);
        out.hashed(wr.flags | std::uint64_t{wr.opcode} << 32 | std::uint64_t{wr.has_flags} << 40 |
                   std::uint64_t{wr.has_length} << 41);
      }
      return;
    case Type::completions: {
      const record::Completions c = value.as_completions();
      out.hashed(c.count);
      for (std::size_t i = 0; i < c.count; ++i) {
        const ibv_wc& wc = c.wc[i];
        // status and opcode are enums of fewer than 256 values in
        // practice; an application's or provider's odd value still
        // changes the word (it is xored in, not masked).
        out.hashed(wc.wr_id);
        // Read as integers (record::raw_value): an error completion's
        // opcode is undefined (ibv_poll_cq(3)), the harness poisons it.
        out.hashed((std::uint64_t{static_cast<std::uint32_t>(record::raw_value(wc.status))} |
                    std::uint64_t{static_cast<std::uint32_t>(record::raw_value(wc.opcode))} << 8) ^
                   std::uint64_t{wc.wc_flags} << 16 ^ std::uint64_t{wc.vendor_err} << 32);
        out.hashed(wc.byte_len | std::uint64_t{wc.imm_data} << 32);
        const ObjectRef qp = c.qps[i].ref;
        out.hashed(qp.index == record::kUnknownIndex ? kNoQp | std::uint64_t{wc.qp_num} << 32
                                                     : qp.index);
      }
      return;
    }
  }
}

}  // namespace hash_detail

inline std::uint64_t Hash::value() const {
  using hash_detail::step;
  return hash_detail::finalize(step(step(step(a, b), c), d));
}

// Hashes `record` with sequence number `seq` into `hash`. Inline: it runs
// for every record, with or without a trace file.
inline void encode(const record::CallRecord& record, std::uint64_t seq, Hash& hash) {
  using namespace hash_detail;
  Sink sink{hash.a, hash.b, hash.c, hash.d};
  const auto fields = record.fields();
  sink.hashed(object_word(record.object().ref) | std::uint64_t{fields.size()} << 40);
  sink.hashed(seq);
  for (const record::Field& field : fields) encode_value(field.value, sink);
  sink.hashed(record.shape());
  hash.a = sink.a;
  hash.b = sink.b;
  hash.c = sink.c;
  hash.d = sink.d;
}

}  // namespace verbfault::observers::encoding

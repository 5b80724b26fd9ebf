// A trace record's hash and its JSON rendering.
//
// The hash covers a record as a run of 64-bit words:
//   header   object kind | object index << 8 | field count << 40
//   seq      the record's per-object sequence number
//   per field, its value:
//            integer, flag, object (kind | index << 8): one word;
//            text: min(length, 255) | first 7 bytes << 8 (a length of
//            255 or more follows in a word), then 8 bytes per word;
//            work requests: count, then 3 words each;
//            completions: count, then 5 words each
//   shape    the record's keys: per field, in order,
//            shape = rotl(shape, 7) ^ (key id ^ type << 56), from 0
// The keys are hashed by their compile-time ids (record::Key), folded into
// the one shape word, so the hash covers every key and its order at the
// cost of one word a record, and does not depend on where strings or
// records sit in memory; bytes are packed little-endian. The words are
// made and hashed on the fly, never stored. The JSON is rendered from the
// record itself, only when a file is written or records are captured.
#pragma once

#include "call_record.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace verbfault::observers::encoding {

// The trace hash's running state: two lanes, so that consecutive words'
// multiplies overlap instead of forming one chain of dependent multiplies.
// Hashed word i (counting from the first record of the trace) goes into
// lane a when i is even, lane b when it is odd:
//   lane = rotl(lane ^ word, 31) * 0x9e3779b97f4a7c15
// (the rotation brings high bits down, so every bit of a word reaches
// every bit of the lane over the next words). value() combines the lanes
// with splitmix64's finalizer; it is a pure function of the hashed words.
struct Hash {
  std::uint64_t a = 0x243f6a8885a308d3ull;  // the first 128 bits of pi's fraction
  std::uint64_t b = 0x13198a2e03707344ull;
  std::uint64_t value() const;
};

// Hashes `record` with sequence number `seq` into `hash`.
void encode(const record::CallRecord& record, std::uint64_t seq, Hash& hash);

// Where JSON is rendered: a growable byte buffer that is never zero-filled
// (rendering reserves room ahead, then writes through a pointer).
class TextBuffer {
 public:
  // Room for `bytes` more bytes: where to write them.
  char* reserve(std::size_t bytes) {
    if (capacity_ - size_ < bytes) grow(bytes);
    return data_.get() + size_;
  }
  // The bytes written up to `end` (a pointer reserve() returned, advanced)
  // are kept.
  void commit(const char* end) { size_ = static_cast<std::size_t>(end - data_.get()); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }

 private:
  void grow(std::size_t bytes);
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Renders `record` with sequence number `seq` as one JSON object and a
// newline, appended to `out`.
void render(const record::CallRecord& record, std::uint64_t seq, TextBuffer& out);

}  // namespace verbfault::observers::encoding

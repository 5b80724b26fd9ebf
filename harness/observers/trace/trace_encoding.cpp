#include "trace_encoding.h"

#include "opcodes.h"

#include "verbfault/plan.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <optional>

namespace verbfault::observers::encoding {

namespace {

using record::Value;
using Type = record::Value::Type;

constexpr std::uint64_t kNoQp = record::kUnknownIndex;
constexpr std::size_t kLongText = 0xff;

static_assert(std::endian::native == std::endian::little,
              "words are packed little-endian by copying bytes");
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

// Packs up to 8 bytes little-endian, starting at bit `shift`.
std::uint64_t pack(const char* bytes, std::size_t count, unsigned shift = 0) {
  std::uint64_t word = 0;
  std::memcpy(&word, bytes, count);
  return word << shift;
}

// Where encoded words go: always into the hash; into `out` too when the
// trace is written or kept.
// (A template, so that hashing alone compiles to one xor and one multiply
// a word.)
template <bool kStore>
struct Sink {
  std::uint64_t hash;
  std::vector<std::uint64_t>* out;
  void hashed(std::uint64_t word) {
    hash = (hash ^ word) * kFnvPrime;
    if constexpr (kStore) out->push_back(word);
  }
  void side(std::uint64_t word) {
    if constexpr (kStore) out->push_back(word);
  }
};

void unpack(std::uint64_t word, std::size_t count, unsigned shift, std::string& out) {
  for (std::size_t i = 0; i < count; ++i)
    out += static_cast<char>((word >> (shift + 8 * i)) & 0xff);
}

// The bytes after the first `first` ones, 8 per word.
template <class Sink>
void pack_rest(std::string_view text, std::size_t first, Sink& out) {
  for (std::size_t at = first; at < text.size(); at += 8)
    out.hashed(pack(text.data() + at, std::min<std::size_t>(8, text.size() - at)));
}

std::size_t unpack_rest(const std::uint64_t* words, std::size_t length, std::size_t first,
                        std::string& out) {
  std::size_t used = 0;
  for (std::size_t at = first; at < length; at += 8)
    unpack(words[used++], std::min<std::size_t>(8, length - at), 0, out);
  return used;
}

std::uint64_t object_word(ObjectRef ref) {
  return static_cast<std::uint64_t>(ref.kind) | std::uint64_t{ref.index} << 8;
}

ObjectRef object_of(std::uint64_t word) {
  return {static_cast<ObjectKind>(word & 0xff), static_cast<std::uint32_t>(word >> 8)};
}

void append_number(std::string& out, auto value) {
  char buffer[24];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  (void)error;
  out.append(buffer, end);
}

// A JSON string: quotes, backslashes and control characters escaped the
// way nlohmann::json writes them (the trace format before the compact form).
void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* const kHex = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_object(std::string& out, ObjectRef ref) {
  out += '"';
  out += to_string(ref.kind);
  out += '#';
  append_number(out, ref.index);
  out += '"';
}

template <class Sink>
void encode_value(const Value& value, Sink& out) {
  switch (value.type) {
    case Type::integer:
      out.hashed(value.unsigned_integer);  // the same bits either way
      return;
    case Type::boolean:
      out.hashed(value.boolean ? 1 : 0);
      return;
    case Type::text: {
      // Short texts (the usual names) take one word; a length of 255 or
      // more is written in a word of its own.
      const std::string_view text = value.as_text();
      out.hashed(std::min<std::size_t>(text.size(), kLongText) |
                 pack(text.data(), std::min<std::size_t>(7, text.size()), 8));
      if (text.size() >= kLongText) out.hashed(text.size());
      pack_rest(text, 7, out);
      return;
    }
    case Type::object:
      out.hashed(object_word(value.object));
      return;
    case Type::wrs:
      out.hashed(value.wrs.size);
      for (const record::WrSummary& wr : value.as_wrs()) {
        out.hashed(wr.wr_id);
        out.hashed(wr.length);
        out.hashed(wr.flags | std::uint64_t{wr.opcode} << 32 | std::uint64_t{wr.has_flags} << 40 |
                   std::uint64_t{wr.has_length} << 41);
      }
      return;
    case Type::completions: {
      const record::Completions& c = value.completions;
      out.hashed(c.count);
      for (std::size_t i = 0; i < c.count; ++i) {
        const ibv_wc& wc = c.wc[i];
        out.hashed(wc.wr_id);
        out.hashed(static_cast<std::uint64_t>(wc.status) |
                   std::uint64_t{static_cast<std::uint32_t>(wc.opcode)} << 32);
        out.hashed(wc.byte_len | std::uint64_t{wc.vendor_err} << 32);
        out.hashed(wc.imm_data | std::uint64_t{wc.wc_flags} << 32);
        const ObjectRef qp = c.qps[i].ref;
        out.hashed(qp.index == record::kUnknownIndex ? kNoQp | std::uint64_t{wc.qp_num} << 32
                                                     : qp.index);
      }
      return;
    }
  }
}

std::size_t render_wrs(const std::uint64_t* words, std::string& out) {
  const std::size_t count = words[0];
  out += '[';
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t* wr = words + 1 + 3 * i;
    if (i > 0) out += ',';
    out += "{\"wr_id\":";
    append_number(out, wr[0]);
    const auto opcode = static_cast<std::uint8_t>(wr[2] >> 32);
    if (opcode != record::WrSummary::kNoOpcode) {
      out += ",\"opcode\":";
      append_string(out, to_string(static_cast<Opcode>(opcode)));
    }
    if ((wr[2] >> 41) & 1) {
      out += ",\"len\":";
      append_number(out, wr[1]);
    }
    if ((wr[2] >> 40) & 1) {
      out += ",\"flags\":";
      append_number(out, static_cast<std::uint32_t>(wr[2]));
    }
    out += '}';
  }
  out += ']';
  return 1 + 3 * count;
}

std::size_t render_completions(const std::uint64_t* words, std::string& out) {
  const std::size_t count = words[0];
  out += '[';
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t* wc = words + 1 + 5 * i;
    if (i > 0) out += ',';
    const auto status = static_cast<ibv_wc_status>(wc[1] & 0xffffffff);
    const auto opcode = static_cast<std::uint32_t>(wc[1] >> 32);
    out += "{\"wr_id\":";
    append_number(out, wc[0]);
    out += ",\"status\":";
    append_string(out, to_string(status));
    out += ",\"qp\":";
    if ((wc[4] & 0xffffffff) == kNoQp) {
      out += "\"qpn:";
      append_number(out, static_cast<std::uint32_t>(wc[4] >> 32));
      out += '"';
    } else {
      append_object(out, {ObjectKind::qp, static_cast<std::uint32_t>(wc[4])});
    }
    // Error completions carry nothing else that is valid (ibv_poll_cq(3)).
    if (status != IBV_WC_SUCCESS) {
      out += ",\"vendor_err\":";
      append_number(out, static_cast<std::uint32_t>(wc[2] >> 32));
      out += '}';
      continue;
    }
    out += ",\"opcode\":";
    if (auto known = record::opcode_of(static_cast<ibv_wc_opcode>(opcode)))
      append_string(out, to_string(*known));
    else
      append_number(out, opcode);
    out += ",\"byte_len\":";
    append_number(out, static_cast<std::uint32_t>(wc[2]));
    const auto flags = static_cast<std::uint32_t>(wc[3] >> 32);
    if (flags & IBV_WC_WITH_IMM) {
      out += ",\"imm\":";
      append_number(out, static_cast<std::uint32_t>(wc[3]));
    }
    out += ",\"wc_flags\":";
    append_number(out, flags);
    out += '}';
  }
  out += ']';
  return 1 + 5 * count;
}

}  // namespace

namespace {

template <bool kStore>
std::uint64_t encode_with(const record::CallRecord& record, std::uint64_t seq, std::uint64_t hash,
                          std::vector<std::uint64_t>* out) {
  Sink<kStore> sink{hash, out};
  const auto fields = record.fields();
  sink.hashed(object_word(record.object().ref) | std::uint64_t{fields.size()} << 40);
  sink.hashed(seq);
  for (const record::Field& field : fields) {
    const std::uint64_t type =
        static_cast<std::uint8_t>(field.value.type) | std::uint64_t{field.value.is_unsigned} << 7;
    sink.hashed(field.key.id() ^ type << 56);
    if constexpr (kStore) {
      const std::string_view key = field.key.text();
      sink.side(reinterpret_cast<std::uintptr_t>(key.data()) |
                std::uint64_t{std::min<std::size_t>(key.size(), 0xff)} << 48 | type << 56);
    }
    encode_value(field.value, sink);
  }
  return sink.hash;
}

}  // namespace

void encode(const record::CallRecord& record, std::uint64_t seq, std::uint64_t& hash,
            std::vector<std::uint64_t>* out) {
  hash = out != nullptr ? encode_with<true>(record, seq, hash, out)
                        : encode_with<false>(record, seq, hash, nullptr);
}

std::size_t render(std::span<const std::uint64_t> words, std::string& out) {
  const std::uint64_t* at = words.data();
  const std::size_t count = (at[0] >> 40) & 0xff;
  out += "{\"obj\":";
  append_object(out, object_of(at[0] & 0xffffffffff));
  out += ",\"seq\":";
  append_number(out, at[1]);
  at += 2;
  for (std::size_t f = 0; f < count; ++f) {
    ++at;  // the key's id
    const std::uint64_t key_word = *at++;
    const auto* key = reinterpret_cast<const char*>(key_word & ((std::uint64_t{1} << 48) - 1));
    const std::size_t key_length = (key_word >> 48) & 0xff;
    const auto type = static_cast<Type>((key_word >> 56) & 0x7f);
    const bool is_unsigned = (key_word >> 63) & 1;
    out += ",\"";
    out.append(key, key_length);
    out += "\":";
    switch (type) {
      case Type::integer:
        if (is_unsigned)
          append_number(out, *at);
        else
          append_number(out, static_cast<std::int64_t>(*at));
        ++at;
        break;
      case Type::boolean:
        out += *at++ ? "true" : "false";
        break;
      case Type::text: {
        std::size_t length = *at & 0xff;
        const std::uint64_t first = *at++;
        if (length >= kLongText) length = *at++;
        std::string text;
        unpack(first, std::min<std::size_t>(7, length), 8, text);
        at += unpack_rest(at, length, 7, text);
        append_string(out, text);
        break;
      }
      case Type::object:
        append_object(out, object_of(*at++));
        break;
      case Type::wrs:
        at += render_wrs(at, out);
        break;
      case Type::completions:
        at += render_completions(at, out);
        break;
    }
  }
  out += '}';
  return static_cast<std::size_t>(at - words.data());
}

}  // namespace verbfault::observers::encoding

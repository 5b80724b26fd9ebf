#include "trace_encoding.h"

#include "opcodes.h"

#include "verbfault/plan.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <new>

namespace verbfault::observers::encoding {

namespace {

using record::Value;
using Type = record::Value::Type;

constexpr std::uint64_t kNoQp = record::kUnknownIndex;
constexpr std::size_t kLongText = 0xff;

static_assert(std::endian::native == std::endian::little,
              "words are packed little-endian by copying bytes");

// Odd, with well-spread bits (2^64 / golden ratio): the lanes' multiplier.
constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15ull;

// splitmix64's finalizer (Steele, Lea, Flood 2014): full avalanche.
std::uint64_t finalize(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The first `count` (<= 8) bytes at `bytes`, little-endian, with loads of
// fixed size that may overlap: a byte-by-byte copy to the stack and a
// word load from it stalls store forwarding on every short text.
std::uint64_t load_bytes(const char* bytes, std::size_t count) {
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

// Where encoded words go: always into the hash; into `out` too when the
// trace is written or kept. (A template, so that hashing alone stores
// nothing.)
template <bool kStore>
struct Sink {
  std::uint64_t a;
  std::uint64_t b;
  std::vector<std::uint64_t>* out;
  // The lanes alternate: this word's multiply does not wait for the
  // previous word's.
  void hash_only(std::uint64_t word) {
    const std::uint64_t lane = std::rotl(a ^ word, 31) * kMultiplier;
    a = b;
    b = lane;
  }
  void hashed(std::uint64_t word) {
    hash_only(word);
    if constexpr (kStore) out->push_back(word);
  }
  void side(std::uint64_t word) {
    if constexpr (kStore) out->push_back(word);
  }
};

std::uint64_t object_word(ObjectRef ref) {
  return static_cast<std::uint64_t>(ref.kind) | std::uint64_t{ref.index} << 8;
}

ObjectRef object_of(std::uint64_t word) {
  return {static_cast<ObjectKind>(word & 0xff), static_cast<std::uint32_t>(word >> 8)};
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
      const char* text = value.text.data;
      const std::size_t size = value.text.size;
      out.hashed(std::min(size, kLongText) | load_bytes(text, std::min<std::size_t>(7, size)) << 8);
      if (size >= kLongText) out.hashed(size);
      for (std::size_t at = 7; at < size; at += 8)
        out.hashed(load_bytes(text + at, std::min<std::size_t>(8, size - at)));
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
        const ObjectRef qp = c.qps[i];
        out.hashed(qp.index == record::kUnknownIndex ? kNoQp | std::uint64_t{wc.qp_num} << 32
                                                     : qp.index);
      }
      return;
    }
  }
}

template <bool kStore>
void encode_with(const record::CallRecord& record, std::uint64_t seq, Hash& hash,
                 std::vector<std::uint64_t>* out) {
  Sink<kStore> sink{hash.a, hash.b, out};
  const auto fields = record.fields();
  sink.hashed(object_word(record.object().ref) | std::uint64_t{fields.size()} << 40);
  sink.hashed(seq);
  std::uint64_t shape = 0;
  for (const record::Field& field : fields) {
    const std::uint64_t type =
        static_cast<std::uint8_t>(field.value.type) | std::uint64_t{field.value.is_unsigned} << 7;
    // Off the lanes' chains: one rotate and xor a field.
    shape = std::rotl(shape, 7) ^ field.key.id() ^ type << 56;
    if constexpr (kStore) {
      const std::string_view key = field.key.text();
      sink.side(reinterpret_cast<std::uintptr_t>(key.data()) |
                std::uint64_t{std::min<std::size_t>(key.size(), 0xff)} << 48 | type << 56);
    }
    encode_value(field.value, sink);
  }
  sink.hash_only(shape);
  hash.a = sink.a;
  hash.b = sink.b;
}

// ---- rendering ----------------------------------------------------------------------

// Names of the enums the trace writes, looked up once (the plan's tables
// are searched linearly); values past the cache go to the tables.
struct Names {
  std::array<std::string_view, 16> kinds;
  std::array<std::string_view, 32> statuses;
  std::array<std::string_view, 16> opcodes;
  Names() {
    for (std::size_t i = 0; i < kinds.size(); ++i) kinds[i] = to_string(static_cast<ObjectKind>(i));
    for (std::size_t i = 0; i < statuses.size(); ++i)
      statuses[i] = to_string(static_cast<ibv_wc_status>(i));
    for (std::size_t i = 0; i < opcodes.size(); ++i) opcodes[i] = to_string(static_cast<Opcode>(i));
  }
  std::string_view kind(ObjectKind kind) const {
    const auto i = static_cast<std::size_t>(kind);
    return i < kinds.size() ? kinds[i] : to_string(kind);
  }
  std::string_view status(ibv_wc_status status) const {
    const auto i = static_cast<std::size_t>(status);
    return i < statuses.size() ? statuses[i] : to_string(status);
  }
  std::string_view opcode(Opcode opcode) const {
    const auto i = static_cast<std::size_t>(opcode);
    return i < opcodes.size() ? opcodes[i] : to_string(opcode);
  }
};

const Names& names() {
  static const Names* const table = new Names();  // never destroyed: used at exit
  return *table;
}

// Bounds of what one value renders to, for TextBuffer::reserve: a number
// (sign and 20 digits), a name (every name of the plan's tables is shorter,
// quoted and unescaped), an object name, one work request, one completion.
constexpr std::size_t kNumberBytes = 21;
constexpr std::size_t kNameBytes = 64;
constexpr std::size_t kObjectBytes = kNameBytes + 16;
constexpr std::size_t kWrBytes = 64 + kNameBytes + 3 * kNumberBytes;
constexpr std::size_t kCompletionBytes = 128 + 2 * kNameBytes + 6 * kNumberBytes;

// Writes through a pointer into room reserved beforehand.
template <std::size_t N>
char* put(char* at, const char (&literal)[N]) {
  std::memcpy(at, literal, N - 1);
  return at + N - 1;
}

char* put(char* at, std::string_view text) {
  std::memcpy(at, text.data(), text.size());
  return at + text.size();
}

char* put_number(char* at, auto value) {
  return std::to_chars(at, at + kNumberBytes, value).ptr;
}

// A JSON string of at most 6 bytes a character: quotes, backslashes and
// control characters escaped the way nlohmann::json writes them (the trace
// format before the compact form).
char* put_escaped(char* at, const char* text, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && c != '"' && c != '\\') {
      *at++ = c;
      continue;
    }
    *at++ = '\\';
    switch (c) {
      case '"':
        *at++ = '"';
        break;
      case '\\':
        *at++ = '\\';
        break;
      case '\b':
        *at++ = 'b';
        break;
      case '\f':
        *at++ = 'f';
        break;
      case '\n':
        *at++ = 'n';
        break;
      case '\r':
        *at++ = 'r';
        break;
      case '\t':
        *at++ = 't';
        break;
      default: {
        static const char* const kHex = "0123456789abcdef";
        at = put(at, "u00");
        *at++ = kHex[(u >> 4) & 0xf];
        *at++ = kHex[u & 0xf];
      }
    }
  }
  return at;
}

char* put_string(char* at, std::string_view text) {
  *at++ = '"';
  at = put_escaped(at, text.data(), text.size());
  *at++ = '"';
  return at;
}

char* put_object(char* at, ObjectRef ref) {
  *at++ = '"';
  at = put(at, names().kind(ref.kind));
  *at++ = '#';
  at = put_number(at, ref.index);
  *at++ = '"';
  return at;
}

std::size_t render_wrs(const std::uint64_t* words, TextBuffer& out) {
  const std::size_t count = words[0];
  char* at = out.reserve(2 + count * kWrBytes);
  *at++ = '[';
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t* wr = words + 1 + 3 * i;
    if (i > 0) *at++ = ',';
    at = put(at, "{\"wr_id\":");
    at = put_number(at, wr[0]);
    const auto opcode = static_cast<std::uint8_t>(wr[2] >> 32);
    if (opcode != record::WrSummary::kNoOpcode) {
      at = put(at, ",\"opcode\":");
      at = put_string(at, names().opcode(static_cast<Opcode>(opcode)));
    }
    if ((wr[2] >> 41) & 1) {
      at = put(at, ",\"len\":");
      at = put_number(at, wr[1]);
    }
    if ((wr[2] >> 40) & 1) {
      at = put(at, ",\"flags\":");
      at = put_number(at, static_cast<std::uint32_t>(wr[2]));
    }
    *at++ = '}';
  }
  *at++ = ']';
  out.commit(at);
  return 1 + 3 * count;
}

std::size_t render_completions(const std::uint64_t* words, TextBuffer& out) {
  const std::size_t count = words[0];
  char* at = out.reserve(2 + count * kCompletionBytes);
  *at++ = '[';
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t* wc = words + 1 + 5 * i;
    if (i > 0) *at++ = ',';
    const auto status = static_cast<ibv_wc_status>(wc[1] & 0xffffffff);
    const auto opcode = static_cast<std::uint32_t>(wc[1] >> 32);
    at = put(at, "{\"wr_id\":");
    at = put_number(at, wc[0]);
    at = put(at, ",\"status\":");
    at = put_string(at, names().status(status));
    at = put(at, ",\"qp\":");
    if ((wc[4] & 0xffffffff) == kNoQp) {
      at = put(at, "\"qpn:");
      at = put_number(at, static_cast<std::uint32_t>(wc[4] >> 32));
      *at++ = '"';
    } else {
      at = put_object(at, {ObjectKind::qp, static_cast<std::uint32_t>(wc[4])});
    }
    // Error completions carry nothing else that is valid (ibv_poll_cq(3)).
    if (status != IBV_WC_SUCCESS) {
      at = put(at, ",\"vendor_err\":");
      at = put_number(at, static_cast<std::uint32_t>(wc[2] >> 32));
      *at++ = '}';
      continue;
    }
    at = put(at, ",\"opcode\":");
    if (auto known = record::opcode_of(static_cast<ibv_wc_opcode>(opcode)))
      at = put_string(at, names().opcode(*known));
    else
      at = put_number(at, opcode);
    at = put(at, ",\"byte_len\":");
    at = put_number(at, static_cast<std::uint32_t>(wc[2]));
    const auto flags = static_cast<std::uint32_t>(wc[3] >> 32);
    if (flags & IBV_WC_WITH_IMM) {
      at = put(at, ",\"imm\":");
      at = put_number(at, static_cast<std::uint32_t>(wc[3]));
    }
    at = put(at, ",\"wc_flags\":");
    at = put_number(at, flags);
    *at++ = '}';
  }
  *at++ = ']';
  out.commit(at);
  return 1 + 5 * count;
}

// A text value: its bytes lie in the words as they were packed, so they
// are escaped straight from there (the first word's low byte is the
// length; a long text's length word sits between its first 7 bytes and
// the rest).
std::size_t render_text(const std::uint64_t* words, TextBuffer& out) {
  const auto* bytes = reinterpret_cast<const char*>(words);
  std::size_t size = words[0] & 0xff;
  const char* rest = bytes + 8;
  std::size_t used = 1;
  if (size >= kLongText) {
    size = words[1];
    rest += 8;
    ++used;
  }
  char* at = out.reserve(2 + 6 * size);
  *at++ = '"';
  const std::size_t head = std::min<std::size_t>(7, size);
  at = put_escaped(at, bytes + 1, head);
  at = put_escaped(at, rest, size - head);
  *at++ = '"';
  out.commit(at);
  return used + (size - head + 7) / 8;
}

}  // namespace

std::uint64_t Hash::value() const {
  return finalize(a ^ std::rotl(b, 32));
}

void encode(const record::CallRecord& record, std::uint64_t seq, Hash& hash,
            std::vector<std::uint64_t>* out) {
  if (out != nullptr)
    encode_with<true>(record, seq, hash, out);
  else
    encode_with<false>(record, seq, hash, nullptr);
}

void TextBuffer::grow(std::size_t bytes) {
  const std::size_t capacity = std::max(size_ + bytes, 2 * capacity_);
  auto data = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

std::size_t render(std::span<const std::uint64_t> words, TextBuffer& out) {
  const std::uint64_t* at = words.data();
  const std::size_t count = (at[0] >> 40) & 0xff;
  char* to = out.reserve(16 + kObjectBytes + kNumberBytes);
  to = put(to, "{\"obj\":");
  to = put_object(to, object_of(at[0] & 0xffffffffff));
  to = put(to, ",\"seq\":");
  to = put_number(to, at[1]);
  at += 2;
  for (std::size_t f = 0; f < count; ++f) {
    const std::uint64_t key_word = *at++;
    const auto* key = reinterpret_cast<const char*>(key_word & ((std::uint64_t{1} << 48) - 1));
    const std::size_t key_length = (key_word >> 48) & 0xff;
    const auto type = static_cast<Type>((key_word >> 56) & 0x7f);
    const bool is_unsigned = (key_word >> 63) & 1;
    // Room for the key and a value of one word; longer values reserve
    // their own.
    out.commit(to);
    to = out.reserve(4 + key_length + kObjectBytes);
    *to++ = ',';
    *to++ = '"';
    to = put(to, std::string_view(key, key_length));
    *to++ = '"';
    *to++ = ':';
    switch (type) {
      case Type::integer:
        if (is_unsigned)
          to = put_number(to, *at);
        else
          to = put_number(to, static_cast<std::int64_t>(*at));
        ++at;
        break;
      case Type::boolean:
        to = *at++ ? put(to, "true") : put(to, "false");
        break;
      case Type::object:
        to = put_object(to, object_of(*at++));
        break;
      case Type::text:
        out.commit(to);
        at += render_text(at, out);
        to = out.reserve(0);
        break;
      case Type::wrs:
        out.commit(to);
        at += render_wrs(at, out);
        to = out.reserve(0);
        break;
      case Type::completions:
        out.commit(to);
        at += render_completions(at, out);
        to = out.reserve(0);
        break;
    }
  }
  out.commit(to);
  to = out.reserve(2);
  *to++ = '}';
  *to++ = '\n';
  out.commit(to);
  return static_cast<std::size_t>(at - words.data());
}

}  // namespace verbfault::observers::encoding

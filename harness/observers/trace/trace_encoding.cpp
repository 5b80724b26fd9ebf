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

// Built on first use, never destroyed (records are rendered at exit too).
// Rendering happens under the interposer lock (trace.h), so a plain
// pointer does: no guard on every name.
const Names* g_names = nullptr;

const Names& names() {
  if (g_names == nullptr) [[unlikely]]
    g_names = new Names();
  return *g_names;
}

// Bounds of what one value renders to, for TextBuffer::reserve: a number
// (sign and 20 digits), a name (every name of the plan's tables is shorter,
// quoted and unescaped), an object name, one work request, one completion.
constexpr std::size_t kNumberBytes = 21;
constexpr std::size_t kNameBytes = 64;
constexpr std::size_t kObjectBytes = kNameBytes + 16;
constexpr std::size_t kWrBytes = 64 + kNameBytes + 3 * kNumberBytes;
constexpr std::size_t kCompletionBytes = 128 + 2 * kNameBytes + 6 * kNumberBytes;

// Copies `size` bytes with a few fixed-size, possibly overlapping moves
// (no call to memcpy for the short names and keys of every record).
char* put(char* at, const char* text, std::size_t size) {
  if (size >= 8 && size <= 16) {
    std::memcpy(at, text, 8);
    std::memcpy(at + size - 8, text + size - 8, 8);
  } else if (size >= 4 && size < 8) {
    std::memcpy(at, text, 4);
    std::memcpy(at + size - 4, text + size - 4, 4);
  } else if (size > 0 && size < 4) {
    at[0] = text[0];
    at[size / 2] = text[size / 2];
    at[size - 1] = text[size - 1];
  } else if (size > 16) {
    std::memcpy(at, text, size);
  }
  return at + size;
}

char* put(char* at, std::string_view text) {
  return put(at, text.data(), text.size());
}

// Writes through a pointer into room reserved beforehand.
template <std::size_t N>
char* put(char* at, const char (&literal)[N]) {
  std::memcpy(at, literal, N - 1);
  return at + N - 1;
}

// Decimal, as std::to_chars writes it. Below 10^8 (sequence numbers,
// counts, lengths) the digits come in two independent halves of four, each
// two pairs from a table, instead of to_chars' chain of divisions.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (int i = 0; i < 100; ++i) {
    pairs[2 * i] = static_cast<char>('0' + i / 10);
    pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return pairs;
}();

char* put_number(char* at, std::uint64_t value) {
  if (value < 10) {
    *at = static_cast<char>('0' + value);
    return at + 1;
  }
  if (value < 100) {
    std::memcpy(at, &kDigitPairs[2 * value], 2);
    return at + 2;
  }
  if (value >= 100'000'000) return std::to_chars(at, at + kNumberBytes, value).ptr;
  const auto v = static_cast<std::uint32_t>(value);
  const std::size_t digits = v < 1'000        ? 3
                             : v < 10'000     ? 4
                             : v < 100'000    ? 5
                             : v < 1'000'000  ? 6
                             : v < 10'000'000 ? 7
                                              : 8;
  const std::uint32_t high = v / 10'000;
  const std::uint32_t low = v % 10'000;
  char eight[8];
  std::memcpy(eight, &kDigitPairs[2 * (high / 100)], 2);
  std::memcpy(eight + 2, &kDigitPairs[2 * (high % 100)], 2);
  std::memcpy(eight + 4, &kDigitPairs[2 * (low / 100)], 2);
  std::memcpy(eight + 6, &kDigitPairs[2 * (low % 100)], 2);
  return put(at, eight + 8 - digits, digits);
}

char* put_number(char* at, std::int64_t value) {
  if (value >= 0) return put_number(at, static_cast<std::uint64_t>(value));
  *at++ = '-';
  return put_number(at, std::uint64_t{0} - static_cast<std::uint64_t>(value));
}

char* put_number(char* at, std::uint32_t value) {
  return put_number(at, std::uint64_t{value});
}

// A JSON string of at most 6 bytes a character: quotes, backslashes and
// control characters escaped the way nlohmann::json writes them (the trace
// format before the compact form).
// Whether any of the 8 bytes of `word` is a control character, a quote or
// a backslash (the classic "has a byte less than n" and "has a zero byte"
// tests of Bit Twiddling Hacks).
bool needs_escape(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  constexpr std::uint64_t kHighs = 0x8080808080808080ull;
  const auto has_zero = [](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
  const std::uint64_t below_space = (word - 0x20 * kOnes) & ~word & kHighs;
  return (below_space | has_zero(word ^ ('"' * kOnes)) | has_zero(word ^ ('\\' * kOnes))) != 0;
}

// Whether `text` has any byte to escape, reading it 8 bytes at a time with
// loads that stay inside it (the last ones may overlap).
bool needs_escape(const char* text, std::size_t size) {
  if (size >= 8) {
    std::uint64_t word;
    for (std::size_t at = 0; at + 8 <= size; at += 8) {
      std::memcpy(&word, text + at, 8);
      if (needs_escape(word)) return true;
    }
    std::memcpy(&word, text + size - 8, 8);
    return needs_escape(word);
  }
  if (size >= 4) {
    std::uint32_t low;
    std::uint32_t high;
    std::memcpy(&low, text, 4);
    std::memcpy(&high, text + size - 4, 4);
    return needs_escape(low | std::uint64_t{high} << 32);
  }
  for (std::size_t i = 0; i < size; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x20 || u == '"' || u == '\\') return true;
  }
  return false;
}

char* put_escaped(char* at, const char* text, std::size_t size) {
  if (!needs_escape(text, size)) return put(at, text, size);
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

// A name from the tables (no character to escape in any of them).
char* put_name(char* at, std::string_view name) {
  *at++ = '"';
  at = put(at, name);
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

char* put_wrs(char* at, std::span<const record::WrSummary> wrs) {
  *at++ = '[';
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const record::WrSummary& wr = wrs[i];
    if (i > 0) *at++ = ',';
    at = put(at, "{\"wr_id\":");
    at = put_number(at, wr.wr_id);
    if (wr.opcode != record::WrSummary::kNoOpcode) {
      at = put(at, ",\"opcode\":");
      at = put_name(at, names().opcode(static_cast<Opcode>(wr.opcode)));
    }
    if (wr.has_length) {
      at = put(at, ",\"len\":");
      at = put_number(at, wr.length);
    }
    if (wr.has_flags) {
      at = put(at, ",\"flags\":");
      at = put_number(at, wr.flags);
    }
    *at++ = '}';
  }
  *at++ = ']';
  return at;
}

char* put_completions(char* at, const record::Completions& c) {
  *at++ = '[';
  for (std::size_t i = 0; i < c.count; ++i) {
    const ibv_wc& wc = c.wc[i];
    if (i > 0) *at++ = ',';
    at = put(at, "{\"wr_id\":");
    at = put_number(at, wc.wr_id);
    at = put(at, ",\"status\":");
    at = put_name(at, names().status(wc.status));
    at = put(at, ",\"qp\":");
    if (c.qps[i].ref.index == record::kUnknownIndex) {
      at = put(at, "\"qpn:");
      at = put_number(at, std::uint32_t{wc.qp_num});
      *at++ = '"';
    } else {
      at = put_object(at, {ObjectKind::qp, c.qps[i].ref.index});
    }
    // Error completions carry nothing else that is valid (ibv_poll_cq(3)).
    if (wc.status != IBV_WC_SUCCESS) {
      at = put(at, ",\"vendor_err\":");
      at = put_number(at, std::uint32_t{wc.vendor_err});
      *at++ = '}';
      continue;
    }
    at = put(at, ",\"opcode\":");
    if (auto known = record::opcode_of(wc.opcode))
      at = put_name(at, names().opcode(*known));
    else
      at = put_number(at, static_cast<std::uint32_t>(record::raw_value(wc.opcode)));
    at = put(at, ",\"byte_len\":");
    at = put_number(at, std::uint32_t{wc.byte_len});
    if (wc.wc_flags & IBV_WC_WITH_IMM) {
      at = put(at, ",\"imm\":");
      at = put_number(at, static_cast<std::uint32_t>(wc.imm_data));
    }
    at = put(at, ",\"wc_flags\":");
    at = put_number(at, static_cast<std::uint32_t>(wc.wc_flags));
    *at++ = '}';
  }
  *at++ = ']';
  return at;
}

// How many bytes a value renders to at most.
std::size_t bound(const Value& value) {
  switch (value.type) {
    case Type::text:
      return 2 + 6 * std::size_t{value.size};
    case Type::wrs:
      return 2 + kWrBytes * value.size;
    case Type::completions:
      return 2 + kCompletionBytes * value.size;
    default:
      return kObjectBytes;
  }
}

}  // namespace

void TextBuffer::grow(std::size_t bytes) {
  const std::size_t capacity = std::max(size_ + bytes, 2 * capacity_);
  auto data = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
  data_ = std::move(data);
  capacity_ = capacity;
}

void render(const record::CallRecord& record, std::uint64_t seq, TextBuffer& out) {
  const auto fields = record.fields();
  // One reservation for the record: its fields' bounds, keys included.
  std::size_t bytes = 32 + kObjectBytes + kNumberBytes;
  for (const record::Field& field : fields)
    bytes += 4 + field.key.text().size() + bound(field.value);
  char* at = out.reserve(bytes);
  at = put(at, "{\"obj\":");
  at = put_object(at, record.object().ref);
  at = put(at, ",\"seq\":");
  at = put_number(at, seq);
  for (const record::Field& field : fields) {
    *at++ = ',';
    *at++ = '"';
    at = put(at, field.key.text());
    *at++ = '"';
    *at++ = ':';
    const Value& value = field.value;
    switch (value.type) {
      case Type::integer:
        at = value.is_unsigned ? put_number(at, value.unsigned_integer)
                               : put_number(at, value.integer);
        break;
      case Type::boolean:
        at = value.as_bool() ? put(at, "true") : put(at, "false");
        break;
      case Type::text:
        *at++ = '"';
        at = put_escaped(at, value.text, value.size);
        *at++ = '"';
        break;
      case Type::object:
        at = put_object(at, value.as_object());
        break;
      case Type::wrs:
        at = put_wrs(at, value.as_wrs());
        break;
      case Type::completions:
        at = put_completions(at, value.as_completions());
        break;
    }
  }
  *at++ = '}';
  *at++ = '\n';
  out.commit(at);
}

}  // namespace verbfault::observers::encoding

// The call record: the unit that flows from the interposer to the
// observers (the trace, the runtime checks). One record per verbs call the
// interposer sees, and one per event, injected fault or finding it reports
// about an object.
//
// A record is a small fixed struct built on the caller's stack: the object
// it is about (its stable name and its slot) and its fields (a call's
// name is its "call" field) in the order the trace writes them. Values are numbers,
// flags, text, object names, or, by reference, the work requests of a post
// and the completions of a poll. Building one allocates nothing and formats
// nothing; the trace renders JSON only when it writes a file.
#pragma once

#include "object_id.h"

#include <infiniband/verbs.h>

#include <bit>
#include <new>
#include <type_traits>
#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace verbfault::record {

// A work request as the trace and the checks see it.
struct WrSummary {
  std::uint64_t wr_id = 0;
  std::uint64_t length = 0;         // sum of its SGE lengths
  std::uint32_t flags = 0;          // send_flags (send side only)
  std::uint8_t opcode = kNoOpcode;  // verbfault::Opcode, or kNoOpcode
  bool has_flags = false;           // a send WR (receive WRs have no flags)
  bool has_length = true;           // false: an ibv_wr_* builder (data set later)
  static constexpr std::uint8_t kNoOpcode = 0xff;
};

// Completions of a poll: each with the QP it belongs to (an invalid id
// with ref.index == kUnknownIndex: a QP number the process does not own).
struct Completions {
  const ibv_wc* wc = nullptr;
  const ObjectId* qps = nullptr;
  std::size_t count = 0;
};

// A field's name: a string literal, with its id computed at compile time
// (the trace hashes the id, not the bytes, on every record): the low 48
// bits of the FNV-1a 64 hash of its text, and its length above them. Two
// words, so that a record's fields stay small (they are built on the
// stack of every traced call and read back by the trace).
class Key {
 public:
  consteval Key(const char* text) : text_(text), id_(id_of(text)) {}
  // A key read back from a trace journal: its text (which must outlive the
  // record) and the id it was written with.
  static Key stored(const char* text, std::uint64_t id) { return Key(text, id, 0); }
  std::string_view text() const { return {text_, static_cast<std::size_t>(id_ >> kLengthShift)}; }
  std::uint64_t id() const { return id_; }
  bool operator==(std::string_view other) const { return text() == other; }

 private:
  constexpr Key(const char* text, std::uint64_t id, int) : text_(text), id_(id) {}
  static constexpr unsigned kLengthShift = 48;
  static consteval std::uint64_t id_of(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    if (text.size() >= (std::size_t{1} << (64 - kLengthShift))) throw "key too long";
    return (hash & ((std::uint64_t{1} << kLengthShift) - 1)) | std::uint64_t{text.size()}
                                                                   << kLengthShift;
  }
  const char* text_;
  std::uint64_t id_;
};

// One value; trivially copyable, built without initializing what its type
// does not use. Pointers and the one-word values share 16 bytes; the
// length of a text and the count of work requests or completions share
// `size`.
struct Value {
  enum class Type : std::uint8_t { integer, boolean, text, object, wrs, completions };
  union {
    std::int64_t integer;
    // Also the one word of a flag (0 or 1) and of an object (its kind |
    // index << 8): the three one-word types hash this word as it is.
    std::uint64_t unsigned_integer;
    const char* text;
    const WrSummary* wrs;
    struct {
      const ibv_wc* wc;
      const ObjectId* qps;
    } completions;
  };
  std::uint32_t size;
  Type type;
  bool is_unsigned = false;
  static constexpr unsigned kOneWordTypes = 1u << static_cast<unsigned>(Type::integer) |
                                            1u << static_cast<unsigned>(Type::boolean) |
                                            1u << static_cast<unsigned>(Type::object);

  template <class Int>
  requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool>) Value(Int value)
      : type(Type::integer), is_unsigned(std::is_unsigned_v<Int>) {
    if constexpr (std::is_unsigned_v<Int>)
      unsigned_integer = value;
    else
      integer = value;
  }
  template <class Enum>
  requires std::is_enum_v<Enum> Value(Enum value)
      : Value(static_cast<std::underlying_type_t<Enum>>(value)) {}
  Value(bool value) : unsigned_integer(value ? 1 : 0), type(Type::boolean) {}
  Value(std::string_view value)
      : text(value.data()), size(length(value.size())), type(Type::text) {}
  Value(const char* value) : Value(std::string_view(value)) {}
  // A view of the string: it must outlive the record. A temporary string
  // would not, so it is refused.
  Value(const std::string& value) : Value(std::string_view(value)) {}
  Value(std::string&&) = delete;
  Value(ObjectRef value)
      : unsigned_integer(static_cast<std::uint64_t>(value.kind) | std::uint64_t{value.index} << 8),
        type(Type::object) {}
  Value(std::span<const WrSummary> value)
      : wrs(value.data()), size(length(value.size())), type(Type::wrs) {}
  Value(Completions value)
      : completions{value.wc, value.qps}, size(length(value.count)), type(Type::completions) {}

  bool as_bool() const { return unsigned_integer != 0; }
  ObjectRef as_object() const {
    return {static_cast<ObjectKind>(unsigned_integer & 0xff),
            static_cast<std::uint32_t>(unsigned_integer >> 8)};
  }
  // Integers, flags and objects: one word, `unsigned_integer`.
  bool is_one_word() const { return ((1u << static_cast<unsigned>(type)) & kOneWordTypes) != 0; }
  // The type as the trace keeps it (shape word, journal): Type | is_unsigned << 7.
  std::uint8_t type_byte() const {
    return static_cast<std::uint8_t>(static_cast<std::uint8_t>(type) | (is_unsigned ? 0x80 : 0));
  }
  std::string_view as_text() const { return {text, size}; }
  std::span<const WrSummary> as_wrs() const { return {wrs, size}; }
  Completions as_completions() const { return {completions.wc, completions.qps, size}; }

 private:
  // Lengths and counts of a record are far below 2^32 (a text longer
  // is cut short).
  static std::uint32_t length(std::size_t n) {
    return n > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(n);
  }
};
static_assert(sizeof(Value) == 24);

struct Field {
  Key key;
  Value value;
};

class CallRecord {
 public:
  static constexpr std::size_t kMaxFields = 10;

  explicit CallRecord(ObjectId object) : object_(object) {}

  // Inline, so that a record built with literal keys gets its shape word
  // folded at compile time.
  CallRecord& add(Key key, Value value) {
    assert(count_ < kMaxFields);
    if (count_ < kMaxFields) {
      new (&storage_[count_++ * sizeof(Field)]) Field{key, value};
      shape_ = std::rotl(shape_, 7) ^ key.id() ^ std::uint64_t{value.type_byte()} << 56;
    }
    return *this;
  }
  ObjectId object() const { return object_; }
  // The record's keys and their types, in order, in one word (the trace
  // hashes it): per field, shape = rotl(shape, 7) ^ (key id ^ type << 56),
  // from 0, where type = Value::Type | is_unsigned << 7.
  std::uint64_t shape() const { return shape_; }
  std::span<const Field> fields() const {
    return {std::launder(reinterpret_cast<const Field*>(storage_)), count_};
  }

 private:
  ObjectId object_;
  std::uint64_t shape_ = 0;
  std::uint8_t count_ = 0;
  // Fields are constructed as they are added (nothing is initialized for
  // the ones a record does not use).
  alignas(Field) unsigned char storage_[kMaxFields * sizeof(Field)];
};

}  // namespace verbfault::record

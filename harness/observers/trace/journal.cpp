#include "journal.h"

#include "mapped_file.h"
#include "opcodes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>

namespace verbfault::observers::journal {

namespace {

using record::Value;
using Type = Value::Type;

static_assert(std::endian::native == std::endian::little, "the journal is little-endian");

template <class T>
char* put(char* at, T value) {
  std::memcpy(at, &value, sizeof value);
  return at + sizeof value;
}

// Most numbers of a trace are small (indexes, sequence numbers, counts,
// return values): one byte each.
constexpr std::size_t kMaxVarint = 10;
// An entry starts with a varint: 0 ends the journal, kShapeEntry defines a
// shape, kObjectEntry adds an object, kFirstRecordEntry + i is a record of
// shape i.
constexpr std::uint64_t kShapeEntry = 1;
constexpr std::uint64_t kObjectEntry = 2;
constexpr std::uint64_t kFirstRecordEntry = 3;
// Every entry ends with this byte, stored after the rest of the entry
// (journal.h): an entry a SIGKILL cut short has a zero there instead.
constexpr char kEntryEnd = static_cast<char>(0xe5);

// Ends an entry: the entry's other bytes are stored before its end byte.
// A signal fence is enough: a SIGKILL stops this thread between two of
// its instructions, and what it stored before is in the shared mapping;
// only the compiler could move a store past the end byte.
char* put_end(char* at) {
  std::atomic_signal_fence(std::memory_order_release);
  *at++ = kEntryEnd;
  return at;
}
static_assert(static_cast<int>(ObjectKind::thread) < 16, "an object kind fits 4 bits");
char* put_var(char* at, std::uint64_t value) {
  while (value >= 0x80) {
    *at++ = static_cast<char>(value | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}
std::uint64_t zigzag(std::int64_t value) {
  return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}

// The most bytes a value takes in a record entry.
std::size_t value_size(const Value& value) {
  switch (value.type) {
    case Type::integer:
      return kMaxVarint;
    case Type::boolean:
      return 1;
    case Type::text:
      return kMaxVarint + value.size;
    case Type::object:
      return 1 + kMaxVarint;
    case Type::wrs:
      return kMaxVarint + value.size * (2 + 3 * kMaxVarint);
    case Type::completions:
      return kMaxVarint + value.size * (1 + 8 * kMaxVarint);
  }
  return 0;
}

char* put_value(char* at, const Value& value) {
  switch (value.type) {
    case Type::integer:
      return put_var(at, value.is_unsigned ? value.unsigned_integer : zigzag(value.integer));
    case Type::boolean:
      return put(at, static_cast<std::uint8_t>(value.as_bool()));
    case Type::text:  // (Writer::append writes texts: they may repeat)
      at = put_var(at, value.size + 1);
      std::memcpy(at, value.text, value.size);
      return at + value.size;
    case Type::object:
      at = put(at, static_cast<std::uint8_t>(value.as_object().kind));
      return put_var(at, value.as_object().index);
    case Type::wrs:
      at = put_var(at, value.size);
      for (const record::WrSummary& wr : value.as_wrs()) {
        at = put(at, static_cast<std::uint8_t>((wr.has_flags ? 1 : 0) | (wr.has_length ? 2 : 0)));
        at = put(at, wr.opcode);
        at = put_var(at, wr.wr_id);
        at = put_var(at, wr.length);
        at = put_var(at, wr.flags);
      }
      return at;
    case Type::completions: {
      at = put_var(at, value.size);
      const record::Completions c = value.as_completions();
      for (std::size_t i = 0; i < c.count; ++i) {
        // The fields a trace record shows of a completion (trace_encoding.cpp),
        // not the whole ibv_wc.
        const ibv_wc& wc = c.wc[i];
        at = put(at, static_cast<std::uint8_t>(wc.status));
        at = put_var(at, wc.wr_id);
        at = put_var(at, static_cast<std::uint32_t>(record::raw_value(wc.opcode)));
        at = put_var(at, wc.byte_len);
        at = put_var(at, static_cast<std::uint32_t>(wc.wc_flags));
        at = put_var(at, wc.vendor_err);
        at = put_var(at, wc.imm_data);
        at = put_var(at, wc.qp_num);
        at = put_var(at, c.qps[i].ref.index);
      }
      return at;
    }
  }
  return at;
}

// The record's shape word (its keys and types, kept as fields are added):
// a shape is looked up by it, then compared field by field.
std::uint64_t fingerprint_of(const record::CallRecord& record) {
  return record.shape();
}

}  // namespace

bool is_journal(std::string_view bytes) {
  if (bytes.substr(0, kMagic.size()) == kMagic) return true;
  // Killed before or while its magic was stored: the part of the magic
  // stored, then zeros (the rest of a fresh mapping).
  std::size_t stored = 0;
  while (stored < kMagic.size() && stored < bytes.size() && bytes[stored] == kMagic[stored])
    ++stored;
  const std::string_view rest = bytes.substr(stored, kMagic.size() - stored);
  return !bytes.empty() && rest.find_first_not_of('\0') == std::string_view::npos;
}

template <class Out>
bool Writer::start(Out& out) {
  shapes_.clear();
  announced_.clear();
  table_.assign(256, 0);
  char* at = out.reserve(kMagic.size());
  if (at == nullptr) return false;
  std::memcpy(at, kMagic.data(), kMagic.size());
  out.commit(at + kMagic.size());
  return true;
}

std::uint32_t Writer::find(std::uint64_t fingerprint, const record::CallRecord& record) const {
  const auto fields = record.fields();
  for (std::size_t i = fingerprint & (table_.size() - 1);; i = (i + 1) & (table_.size() - 1)) {
    if (table_[i] == 0) return kFull;
    const Shape& shape = shapes_[table_[i] - 1];
    if (shape.fingerprint != fingerprint || shape.fields.size() != fields.size()) continue;
    bool same = true;
    for (std::size_t f = 0; f < fields.size() && same; ++f)
      same = shape.fields[f] == FieldShape{fields[f].key.id(), fields[f].value.type_byte()};
    if (same) return table_[i] - 1;
  }
}

void Writer::remember(std::uint64_t fingerprint, std::uint32_t index) {
  if (2 * (shapes_.size() + 1) > table_.size()) {
    table_.assign(table_.size() * 2, 0);
    for (std::uint32_t s = 0; s < index; ++s) remember(shapes_[s].fingerprint, s);
  }
  std::size_t i = fingerprint & (table_.size() - 1);
  while (table_[i] != 0) i = (i + 1) & (table_.size() - 1);
  table_[i] = index + 1;
}

template <class Out>
std::uint32_t Writer::shape_of(const record::CallRecord& record, Out& out) {
  const std::uint64_t fingerprint = fingerprint_of(record);
  if (const std::uint32_t known = find(fingerprint, record); known != kFull) return known;
  // A new shape (rare: a few dozen in a run): defined before its first record.
  std::size_t size = 1 + kMaxVarint + 1 + 1;
  for (const record::Field& field : record.fields())
    size += 8 + 1 + 1 + 2 + field.key.text().size();
  char* at = out.reserve(size);
  if (at == nullptr) return kFull;
  const auto index = static_cast<std::uint32_t>(shapes_.size());
  Shape shape{fingerprint, {}, {}};
  at = put_var(at, kShapeEntry);
  at = put_var(at, index);
  at = put(at, static_cast<std::uint8_t>(record.fields().size()));
  for (const record::Field& field : record.fields()) {
    const std::uint8_t type = field.value.type_byte();
    const std::string_view key = field.key.text();
    at = put(at, field.key.id());
    at = put(at, static_cast<std::uint8_t>(type & 0x7f));
    at = put(at, static_cast<std::uint8_t>(type >> 7));
    at = put(at, static_cast<std::uint16_t>(key.size()));
    std::memcpy(at, key.data(), key.size());
    at += key.size();
    shape.fields.push_back({field.key.id(), type});
  }
  out.commit(put_end(at));
  shape.last.resize(shape.fields.size());
  shapes_.push_back(std::move(shape));
  remember(fingerprint, index);
  return index;
}

namespace {
std::uint64_t object_word(ObjectRef ref) {
  return std::uint64_t{ref.index} << 4 | static_cast<std::uint64_t>(ref.kind);
}
}  // namespace

template <class Out>
bool Writer::object_added(record::ObjectId id, Out& out) {
  if (!id.valid()) return true;
  char* at = out.reserve(3 * kMaxVarint + 1);
  if (at == nullptr) return false;
  at = put_var(at, kObjectEntry);
  at = put_var(at, id.slot);
  at = put_var(at, object_word(id.ref));
  out.commit(put_end(at));
  if (id.slot >= announced_.size()) announced_.resize(id.slot + 1);
  announced_[id.slot] = true;
  return true;
}

template <class Out>
bool Writer::append(const record::CallRecord& record, std::uint64_t seq, Out& out) {
  const std::uint32_t shape = shape_of(record, out);
  if (shape == kFull) return false;
  std::size_t size = 1 + kMaxVarint + 1 + kMaxVarint + kMaxVarint + 1;
  for (const record::Field& field : record.fields()) size += value_size(field.value);
  char* at = out.reserve(size);
  if (at == nullptr) return false;
  const ObjectRef object = record.object().ref;
  at = put_var(at, kFirstRecordEntry + std::uint64_t{shape});
  const std::uint32_t slot = record.object().slot;
  if (slot < announced_.size() && announced_[slot]) {
    at = put_var(at, std::uint64_t{slot} + 1);  // the reader counts the sequence
  } else {
    at = put_var(at, 0);
    at = put_var(at, object_word(object));
    at = put_var(at, seq);
  }
  Shape& defined = shapes_[shape];
  const auto fields = record.fields();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const Value& value = fields[f].value;
    if (value.type != Type::text || value.size > kShortText) {
      at = put_value(at, value);
      continue;
    }
    // Compared by content: a caller's buffer may hold another text at the
    // same address next time.
    LastText& last = defined.last[f];
    if (last.size == value.size && std::memcmp(last.bytes, value.text, value.size) == 0) {
      at = put(at, std::uint8_t{0});
      continue;
    }
    last.size = static_cast<std::uint8_t>(value.size);
    std::memcpy(last.bytes, value.text, value.size);
    at = put_value(at, value);
  }
  out.commit(put_end(at));
  return true;
}

template bool Writer::start(encoding::TextBuffer&);
template bool Writer::start(MappedFile&);
template bool Writer::object_added(record::ObjectId, encoding::TextBuffer&);
template bool Writer::object_added(record::ObjectId, MappedFile&);
template bool Writer::append(const record::CallRecord&, std::uint64_t, encoding::TextBuffer&);
template bool Writer::append(const record::CallRecord&, std::uint64_t, MappedFile&);

// ---- reading -------------------------------------------------------------------------------

namespace {

// Reads values from the journal's bytes; `ok` turns false at the end.
struct Reader {
  const char* at;
  const char* end;
  bool ok = true;

  template <class T>
  T get() {
    T value{};
    if (static_cast<std::size_t>(end - at) < sizeof value) {
      ok = false;
      return value;
    }
    std::memcpy(&value, at, sizeof value);
    at += sizeof value;
    return value;
  }
  std::uint64_t var() {
    std::uint64_t value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (at >= end) break;
      const auto byte = static_cast<std::uint8_t>(*at++);
      value |= std::uint64_t{byte & 0x7fu} << shift;
      // put_var never ends a longer varint with a zero byte: that zero is
      // the unwritten rest of an entry cut short.
      if ((byte & 0x80) == 0) {
        if (byte == 0 && shift != 0) break;
        return value;
      }
    }
    ok = false;
    return 0;
  }
  // The end of an entry: whole (true), cut short (false: its end byte, or
  // a byte it read, was never written), or not a journal (`error` set).
  bool entry_end(std::string& error) {
    const char byte = ok && at < end ? *at++ : 0;
    if (byte == kEntryEnd) return true;
    if (byte != 0) error = "malformed journal: an entry without its end byte";
    ok = false;
    return false;
  }
  const char* bytes(std::size_t count) {
    if (static_cast<std::size_t>(end - at) < count) {
      ok = false;
      return nullptr;
    }
    const char* start = at;
    at += count;
    return start;
  }
};

// An object the journal added, by slot, and its next sequence number.
struct StoredObject {
  ObjectRef ref{};
  std::uint64_t next = 0;
  bool known = false;
};

ObjectRef object_of(std::uint64_t word) {
  return {static_cast<ObjectKind>(word & 0xf), static_cast<std::uint32_t>(word >> 4)};
}

struct StoredShape {
  std::vector<record::Key> keys;
  std::vector<std::uint8_t> types;
  std::vector<std::string> last;  // per field: the last text (Writer::LastText)
};

}  // namespace

namespace {

// How an error of the output (not of the journal) begins: it names no journal.
constexpr std::string_view kCannotWrite = "cannot write: ";

// Writes out what is rendered (out_fd < 0: keeps it in `out`).
bool write_out(int out_fd, encoding::TextBuffer& out, std::string& error) {
  if (out_fd < 0) return true;
  for (const char* at = out.data(); at < out.data() + out.size();) {
    const ssize_t n = ::write(out_fd, at, static_cast<std::size_t>(out.data() + out.size() - at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::string(kCannotWrite) + std::strerror(n < 0 ? errno : EIO);
      return false;
    }
    at += n;
  }
  out.clear();
  return true;
}

// Renders into `out`, written to `out_fd` every MiB when out_fd >= 0.
long long render_to(std::string_view journal, encoding::TextBuffer& out, int out_fd,
                    std::string& error) {
  if (!is_journal(journal)) {
    error = "not a verbfault trace journal (no " + std::string(kMagic) + " magic)";
    return -1;
  }
  if (journal.substr(0, kMagic.size()) != kMagic) return 0;  // killed before its magic was stored
  Reader in{journal.data() + kMagic.size(), journal.data() + journal.size()};
  std::vector<StoredShape> shapes;
  std::vector<StoredObject> objects;
  // Aligned copies of the work requests and completions of the record
  // being rendered (the journal's bytes are unaligned).
  std::vector<std::vector<record::WrSummary>> wrs(record::CallRecord::kMaxFields);
  std::vector<std::vector<ibv_wc>> wcs(record::CallRecord::kMaxFields);
  std::vector<std::vector<record::ObjectId>> qps(record::CallRecord::kMaxFields);
  long long records = 0;
  while (in.at < in.end) {
    if (*in.at == 0) break;  // the unwritten rest of a killed process's mapping
    const std::uint64_t entry = in.var();
    if (!in.ok) break;
    if (entry == kObjectEntry) {
      const std::uint64_t slot = in.var();
      const std::uint64_t word = in.var();
      if (!in.entry_end(error)) break;
      if (slot > UINT32_MAX) {
        error = "malformed journal: object slot " + std::to_string(slot);
        return -1;
      }
      if (slot >= objects.size()) objects.resize(slot + 1);
      objects[slot] = {object_of(word), 0, true};
      continue;
    }
    if (entry == kShapeEntry) {
      const auto index = in.var();
      const auto count = in.get<std::uint8_t>();
      StoredShape shape;
      for (unsigned f = 0; f < count && in.ok; ++f) {
        const auto id = in.get<std::uint64_t>();
        const auto type = in.get<std::uint8_t>();
        const auto is_unsigned = in.get<std::uint8_t>();
        const auto length = in.get<std::uint16_t>();
        const char* text = in.bytes(length);
        if (!in.ok) break;
        shape.keys.push_back(record::Key::stored(text, id));
        shape.types.push_back(static_cast<std::uint8_t>(type | (is_unsigned ? 0x80 : 0)));
      }
      if (!in.entry_end(error)) break;
      if (index != shapes.size() || count > record::CallRecord::kMaxFields) {
        error = "malformed journal: shape " + std::to_string(index) + " out of order";
        return -1;
      }
      shape.last.resize(shape.keys.size());
      shapes.push_back(std::move(shape));
      continue;
    }
    if (entry < kFirstRecordEntry) {
      error = "malformed journal: unknown entry " + std::to_string(entry);
      return -1;
    }
    const std::uint64_t shape_index = entry - kFirstRecordEntry;
    if (shape_index >= shapes.size()) {
      error = "malformed journal: record of undefined shape " + std::to_string(shape_index);
      return -1;
    }
    ObjectRef object_ref{};
    std::uint64_t seq = 0;
    StoredObject* counted = nullptr;  // its count moves on once the record is whole
    std::string bad_slot;             // an error only if the record turns out whole
    if (const std::uint64_t slot_plus_one = in.var(); slot_plus_one != 0) {
      const std::uint64_t slot = slot_plus_one - 1;
      if (slot >= objects.size() || !objects[slot].known) {
        bad_slot = "malformed journal: record of slot " + std::to_string(slot) +
                   ", where no object was added";
      } else {
        counted = &objects[slot];
        object_ref = counted->ref;
        seq = counted->next;
      }
    } else {
      object_ref = object_of(in.var());
      seq = in.var();
    }
    if (!in.ok) break;
    const StoredShape& shape = shapes[shape_index];
    record::CallRecord rebuilt({0, object_ref});
    for (std::size_t f = 0; f < shape.keys.size() && in.ok; ++f) {
      const auto type = static_cast<Type>(shape.types[f] & 0x7f);
      const bool is_unsigned = (shape.types[f] & 0x80) != 0;
      switch (type) {
        case Type::integer: {
          const auto bits = in.var();
          if (is_unsigned)
            rebuilt.add(shape.keys[f], bits);
          else  // zigzag
            rebuilt.add(shape.keys[f], static_cast<std::int64_t>(bits >> 1) ^
                                           -static_cast<std::int64_t>(bits & 1));
          break;
        }
        case Type::boolean:
          rebuilt.add(shape.keys[f], in.get<std::uint8_t>() != 0);
          break;
        case Type::text: {
          const auto coded = in.var();
          std::string& last = shapes[shape_index].last[f];
          if (coded == 0) {  // the same as this field's last text
            rebuilt.add(shape.keys[f], std::string_view(last));
            break;
          }
          const char* text = in.bytes(coded - 1);
          if (!in.ok) break;
          const std::string_view value(text, coded - 1);
          if (value.size() <= Writer::kShortText) last.assign(value);
          rebuilt.add(shape.keys[f], value);
          break;
        }
        case Type::object: {
          const auto object_kind = in.get<std::uint8_t>();
          const auto index = static_cast<std::uint32_t>(in.var());
          rebuilt.add(shape.keys[f], ObjectRef{static_cast<ObjectKind>(object_kind), index});
          break;
        }
        case Type::wrs: {
          const auto count = in.var();
          if (count > static_cast<std::size_t>(in.end - in.at) / 5) {  // 5 bytes at least each
            in.ok = false;
            break;
          }
          wrs[f].resize(count);
          for (std::size_t i = 0; i < count && in.ok; ++i) {
            record::WrSummary& wr = wrs[f][i];
            const auto bits = in.get<std::uint8_t>();
            wr.opcode = in.get<std::uint8_t>();
            wr.wr_id = in.var();
            wr.length = in.var();
            wr.flags = static_cast<std::uint32_t>(in.var());
            wr.has_flags = (bits & 1) != 0;
            wr.has_length = (bits & 2) != 0;
          }
          if (!in.ok) break;
          rebuilt.add(shape.keys[f], std::span<const record::WrSummary>(wrs[f]));
          break;
        }
        case Type::completions: {
          const auto count = in.var();
          if (count > static_cast<std::size_t>(in.end - in.at) / 9) {  // 9 bytes at least each
            in.ok = false;
            break;
          }
          wcs[f].resize(count);
          qps[f].resize(count);
          for (std::uint32_t i = 0; i < count && in.ok; ++i) {
            ibv_wc& wc = wcs[f][i];
            wc = {};
            wc.status = static_cast<ibv_wc_status>(in.get<std::uint8_t>());
            wc.wr_id = in.var();
            wc.opcode = static_cast<ibv_wc_opcode>(in.var());
            wc.byte_len = static_cast<std::uint32_t>(in.var());
            wc.wc_flags = static_cast<unsigned int>(in.var());
            wc.vendor_err = static_cast<std::uint32_t>(in.var());
            wc.imm_data = static_cast<__be32>(in.var());
            wc.qp_num = static_cast<std::uint32_t>(in.var());
            const auto index = static_cast<std::uint32_t>(in.var());
            qps[f][i] = {index == record::kUnknownIndex ? record::kNoSlot : 0,
                         {ObjectKind::qp, index}};
          }
          if (in.ok)
            rebuilt.add(shape.keys[f], record::Completions{wcs[f].data(), qps[f].data(), count});
          break;
        }
        default:
          error = "malformed journal: unknown value type in shape " + std::to_string(shape_index);
          return -1;
      }
    }
    // A record cut short (the process died writing it) ends the journal.
    if (!in.entry_end(error)) break;
    if (!bad_slot.empty()) {
      error = bad_slot;
      return -1;
    }
    if (counted != nullptr) ++counted->next;
    encoding::render(rebuilt, seq, out);
    ++records;
    if (out.size() >= (std::size_t{1} << 20) && !write_out(out_fd, out, error)) return -1;
  }
  if (!error.empty()) return -1;  // an entry whose end byte is another byte
  if (!write_out(out_fd, out, error)) return -1;
  return records;
}

}  // namespace

long long render(std::string_view journal, encoding::TextBuffer& out, std::string& error) {
  return render_to(journal, out, -1, error);
}

long long render_bytes(std::string_view journal, int out_fd, std::string& error) {
  encoding::TextBuffer text;
  return render_to(journal, text, out_fd, error);
}

long long render_file(const std::string& path, int out_fd, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "'" + path + "': " + std::strerror(errno);
    return -1;
  }
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    error = "'" + path + "': " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (status.st_size == 0) {  // killed between creating it and its first growth
    ::close(fd);
    return 0;
  }
  const auto size = static_cast<std::size_t>(status.st_size);
  void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    error = "'" + path + "': cannot be mapped: " + std::strerror(errno);
    return -1;
  }
  encoding::TextBuffer text;
  const long long records =
      render_to(std::string_view(static_cast<const char*>(mapped), size), text, out_fd, error);
  munmap(mapped, size);
  if (records < 0 && !error.starts_with(kCannotWrite)) error = "'" + path + "': " + error;
  return records;
}

}  // namespace verbfault::observers::journal

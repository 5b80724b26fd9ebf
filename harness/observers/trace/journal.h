// The trace journal: the records of a run in a compact binary form, written
// while the program runs, rendered as JSON Lines when it ends (the trace
// file) or, when it was killed first, by `verbfault run` or `verbfault
// trace`. Copying a record's values costs a fraction of rendering them
// (docs/trace-format.md), and a journal in a shared mapping
// survives the process: a SIGKILL loses nothing that was appended, and
// cuts no record in two (each entry's end byte is stored last; a reader
// takes an entry without it for the end of the journal).
//
// Format (little-endian, no padding; "var" is an unsigned LEB128 varint,
// "zig" a zigzag-coded signed one): the 8-byte magic "VFJOURN7", then
// entries, each starting with a var:
//   1: a record shape: var index, u8 field count, per field u64 key id,
//       u8 value type, u8 unsigned flag, u16 key length, the key's bytes;
//   2: an object added in a registry slot: var slot, var (object index
//       << 4 | object kind); its records' sequence numbers start at 0;
//   3 + i: a record of shape i: var (slot + 1), its sequence number being
//       the count of its slot's records since the object was added; or
//       var 0, var (object index << 4 | kind), var sequence number for an
//       object the journal has not seen added; then each field's value by
//       its shape's type:
//       unsigned integer var, signed zig; boolean u8; text var (length +
//       1) + bytes, or var 0: the same text as this field's in the shape's
//       previous record; object u8 kind + var index; work requests var count + per
//       WR u8 flags-present/length-present bits, u8 opcode, var wr_id,
//       length, send_flags; completions var count + per completion
//       u8 status, var wr_id, opcode, byte_len, wc_flags, vendor_err,
//       imm_data, qp_num and QP index (what a trace record shows of it).
// An empty poll's record takes about 16 bytes (its JSON line about 60).
// A zero where an entry is expected ends the journal (the rest of the
// mapping a killed process left), and so does an entry whose end byte (or
// a byte before it) is still zero: a SIGKILL stopped its writer inside it.
// A varint of several bytes never ends with a zero byte, so a varint cut
// short is seen as one.
#pragma once

#include "call_record.h"
#include "trace_encoding.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::observers::journal {

inline constexpr std::string_view kMagic{"VFJOURN8", 8};

// Whether `bytes` are a journal: its magic, or (a process killed before
// its magic was stored) a part of it followed by zeros, a journal of no
// records.
bool is_journal(std::string_view bytes);

// Appends records to a journal, defining each record shape (its keys and
// value types, in order) once, the first time it is seen. `Out` is a byte
// sink with reserve(n) -> char* (nullptr: full) and commit(end):
// encoding::TextBuffer or MappedFile.
class Writer {
 public:
  // Texts up to this long are remembered per field (LastText).
  static constexpr std::size_t kShortText = 31;

  // The journal's first bytes (the magic); forgets the shapes defined.
  template <class Out>
  bool start(Out& out);
  // A new object in `id.slot`: its records are numbered from 0 again.
  template <class Out>
  bool object_added(record::ObjectId id, Out& out);
  // False when `out` could not take the record (a full disk). `seq` is the
  // trace's sequence number of the record: written only for an object
  // not seen added (the journal counts the others itself).
  template <class Out>
  bool append(const record::CallRecord& record, std::uint64_t seq, Out& out);

 private:
  struct FieldShape {
    std::uint64_t key_id = 0;
    std::uint8_t type = 0;  // Value::Type, and 0x80 when unsigned
    bool operator==(const FieldShape&) const = default;
  };
  // The last short text written in one field of a shape: a text equal to
  // it is written as "the same" (one byte); the call's name of every
  // record of a shape is.
  struct LastText {
    std::uint8_t size = 0xff;  // 0xff: none yet
    char bytes[kShortText];
  };
  struct Shape {
    std::uint64_t fingerprint = 0;
    std::vector<FieldShape> fields;
    std::vector<LastText> last;  // per field
  };
  static constexpr std::uint32_t kFull = UINT32_MAX;
  // The record's shape index, defined in `out` first if new (kFull when
  // `out` could not take the definition).
  template <class Out>
  std::uint32_t shape_of(const record::CallRecord& record, Out& out);
  std::uint32_t find(std::uint64_t fingerprint, const record::CallRecord& record) const;
  void remember(std::uint64_t fingerprint, std::uint32_t index);

  std::vector<Shape> shapes_;
  std::vector<bool> announced_;       // by slot: an object entry was written for it
  std::vector<std::uint32_t> table_;  // open addressing by fingerprint: shape index + 1, or 0
};

// Renders every record of `journal` as JSON Lines appended to `out` (the
// same text the trace file has). Returns the number of records; a journal
// that ends inside a record (killed mid-write) ends before it. Returns -1
// and sets `error` (one line) when the bytes are not a journal or are
// malformed.
long long render(std::string_view journal, encoding::TextBuffer& out, std::string& error);

// Renders the journal `journal` (a process's own, still mapped) into
// `out_fd` as JSON Lines: the records, or -1 with `error` set.
long long render_bytes(std::string_view journal, int out_fd, std::string& error);

// Renders the journal file at `path` into `out_fd` as JSON Lines. Returns
// the number of records, or -1 with `error` set: "cannot write: <why>"
// when `out_fd` refused the text, "'<path>': <why>" for the journal.
long long render_file(const std::string& path, int out_fd, std::string& error);

}  // namespace verbfault::observers::journal

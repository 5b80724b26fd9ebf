// The trace: one record per verbs call, completion batch, event, injected
// fault and finding, with stable object names ("qp#1") and per-object
// sequence numbers; no pointers, no times. The same seed, plan and binary
// give the same records, summarized by the trace hash.
//
// Records arrive as CallRecords. The hash is computed over each one's
// words (trace_hash.h), so it costs the same whether or not a file is
// written. With a trace file, each record is appended to a journal beside
// it (journal.h: "<file>.journal", a shared mapping, so it survives any
// end of the process) and rendered as JSON Lines into the file when the
// run ends (close()); `verbfault run` renders the journal of a process
// killed before that. A Session keeps the records in memory as JSON lines.
//
// A trace that cannot be written is not a result: a write error (the
// journal cannot grow, the file cannot take the rendered records) ends the
// process with one line naming VERBFAULT_TRACE and exit status
// exit_status::kUsage, whatever the program's own status would have been.
//
// Owner: the interposer, which calls every member under its lock, so
// records are whole and in one order. A fatal signal's handler only reads
// hash(), journaled_records() and path(): the journal already holds every
// record appended (interposer/run.cpp, Run::finish_on_signal).
#pragma once

#include "call_record.h"
#include "verbfault/exit_status.h"
#include "journal.h"
#include "mapped_file.h"
#include "trace_encoding.h"
#include "trace_hash.h"

#include <cstdint>
#include <string>
#include <vector>

namespace verbfault::observers {

// Opens `path` for writing the trace: -1 with `error` set (one phrase,
// e.g. "a FIFO with no reader: ...") when it cannot be. A FIFO is opened
// only when a reader has it open, never waited for.
int open_trace_file(const std::string& path, std::string& error);

class Trace {
 public:
  // Without a path the trace is only hashed, not written. Throws
  // std::runtime_error with a one-line message when the file or its
  // journal cannot be opened.
  void open(const std::string& path);
  // A new object in `id.slot`: its sequence numbers start again from 0.
  void object_added(record::ObjectId id);
  void append(const record::CallRecord& record);
  // An empty poll of `cq` for up to `max` completions that returned 0.
  // Consecutive ones of the same CQ and max are one record, written when
  // any other record comes (or the run ends): {"call":"poll_cq","max":M,
  // "ret":0,"times":N}, without "times" when N is 1 (the record a single
  // empty poll always had). A program spinning on a CQ then costs a counter,
  // not a record per poll.
  void empty_poll(record::ObjectId cq, int max) {
    if (idle_.times != 0 && idle_.cq.slot == cq.slot && idle_.cq.ref == cq.ref && idle_.max == max)
        [[likely]] {
      ++idle_.times;
      return;
    }
    flush_idle();
    idle_ = {cq, max, 1};
  }
  // Writes the pending empty polls as their record (Session, end of run).
  void flush_idle();
  // The end of the run: renders the journal into the trace file and
  // removes it; when it cannot, ends the process (exit_status::kUsage).
  // Idempotent. Not for a signal handler (it allocates).
  void close() noexcept;
  // In the child of a fork: the journal and the file are the parent's (a
  // shared mapping the child would write over), so the child lets go of
  // them without writing, and its own trace starts: the hash and the
  // record count from zero, the objects' sequence numbers going on. A
  // parent that writes a trace gives the child one at `path`
  // (record::forked_trace_path), created at the child's first record: a
  // child that execs first makes none. Empty `path`: hashed only.
  void restart_in_child(std::string path) noexcept;
  // Where this process's trace goes (empty: not written).
  const std::string& path() const { return path_; }

  // Over the records written so far (flush_idle() first to count pending
  // empty polls).
  std::uint64_t hash() const { return hash_.value(); }
  // Records so far, the pending empty polls' one included: the position
  // of the next record.
  std::uint64_t records() const { return records_ + (idle_.times != 0 ? 1 : 0); }
  // Records in the journal (and the hash) so far, without the pending
  // empty polls: what a fatal signal's handler reports.
  std::uint64_t journaled_records() const { return records_; }
  // Keeps the records in memory as JSON lines from now on (and restarts
  // the hash), for a Session; stop_capture() goes back to the file only.
  void start_capture();
  void stop_capture();
  const std::vector<std::string>& captured() const { return captured_; }

 private:
  // A record could not be journaled (a full disk): said once, then the
  // file is no longer written.
  void journal_failed() noexcept;
  void write(const record::CallRecord& record);

  // Empty polls not yet written (times 0: none).
  struct Idle {
    record::ObjectId cq;
    int max = 0;
    std::uint64_t times = 0;
  } idle_;

  // Opens the trace a forked child was given, at its first record.
  void open_child_trace();

  int fd_ = -1;                         // the trace file, written at close()
  bool opens_at_first_record_ = false;  // restart_in_child with a path
  std::string path_;                    // its name, as VERBFAULT_TRACE gave it
  std::string journal_path_;            // where the records go meanwhile
  MappedFile journal_;
  journal::Writer writer_;
  encoding::TextBuffer line_;       // the record being captured (reused)
  std::vector<std::uint64_t> seq_;  // next sequence number, per slot
  encoding::Hash hash_;
  std::uint64_t records_ = 0;
  bool capturing_ = false;
  std::vector<std::string> captured_;
};

}  // namespace verbfault::observers

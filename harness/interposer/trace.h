// The trace: one JSON object per line for every verbs call, completion,
// event, injected fault and diagnosis, with stable object ids ("qp#1") and
// per-object sequence numbers; no pointers, no times. The same seed, plan
// and binary give a byte-identical trace, summarized by its hash.
//
// Owner: the interposer, which calls append() under its own lock, so lines
// are whole and in one order; the signal path reads the buffer without a
// lock (best effort, the process is dying anyway).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace verbfault::interposer {

class Trace {
 public:
  // Without a path the trace is only hashed, not written.
  void open(const std::string& path);
  void append(const std::string& line);
  // Writes what is buffered; safe from a signal handler (write(2) only).
  void flush() noexcept;
  std::uint64_t hash() const { return hash_; }
  // Keeps the records in memory from now on (and restarts the hash), for a
  // Session; stop_capture() goes back to the file only.
  void start_capture();
  void stop_capture();
  const std::vector<std::string>& captured() const { return captured_; }
  std::uint64_t records() const { return records_; }

 private:
  int fd_ = -1;
  std::string buffer_;
  std::uint64_t hash_ = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  std::uint64_t records_ = 0;
  bool capturing_ = false;
  std::vector<std::string> captured_;
};

}  // namespace verbfault::interposer

#include "trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace verbfault::observers {

int open_trace_file(const std::string& path, std::string& error) {
  // O_NONBLOCK: a FIFO nobody reads would block open(2) forever (fifo(7));
  // it fails with ENXIO instead. Blocking again once open: a reader that is
  // slow to read must not lose records.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    error = errno == ENXIO ? "a FIFO with no reader: expected a file, or a FIFO that a reader "
                             "has open"
                           : std::string("cannot open for writing: ") + std::strerror(errno);
    return -1;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    error = std::string("cannot open for writing: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

void Trace::open(const std::string& path) {
  std::string error;
  fd_ = open_trace_file(path, error);
  if (fd_ < 0) throw std::runtime_error("VERBFAULT_TRACE='" + path + "': " + error);
  path_ = path;
  // Beside a regular file (where `verbfault run` recovers it after a
  // SIGKILL). A trace that is a device or a FIFO (/dev/full, /dev/null, a
  // pipe), or a file in a folder that takes no new files, has its journal
  // in the temporary folder, named for this process: not a new file in
  // /dev, and not one path shared by every process that traces to the
  // same device at once.
  struct stat status {};
  const bool regular = fstat(fd_, &status) == 0 && S_ISREG(status.st_mode);
  const char* tmp = std::getenv("TMPDIR");
  const std::string private_journal = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") +
                                      "/verbfault-" + std::to_string(getpid()) + ".journal";
  std::vector<std::string> candidates;
  if (regular) candidates.push_back(path + ".journal");
  candidates.push_back(private_journal);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    journal_path_ = candidates[i];
    try {
      journal_.open(journal_path_);
      break;
    } catch (const std::runtime_error& error) {
      if (i + 1 == candidates.size())
        throw std::runtime_error("VERBFAULT_TRACE='" + path + "': its journal " + error.what());
    }
  }
  if (!writer_.start(journal_)) journal_failed();
}

void Trace::object_added(record::ObjectId id) {
  if (opens_at_first_record_) [[unlikely]]
    open_child_trace();
  if (idle_.times != 0 && idle_.cq.slot == id.slot) flush_idle();  // the slot's old object
  if (journal_.is_open() && !writer_.object_added(id, journal_)) journal_failed();
  if (id.slot >= seq_.size()) seq_.resize(std::max<std::size_t>(id.slot + 1, 2 * seq_.size()));
  seq_[id.slot] = 0;
}

void Trace::append(const record::CallRecord& record) {
  flush_idle();
  write(record);
}

void Trace::flush_idle() {
  if (idle_.times == 0) return;
  record::CallRecord polls(idle_.cq);
  polls.add("call", "poll_cq").add("max", idle_.max).add("ret", 0);
  if (idle_.times > 1) polls.add("times", idle_.times);
  idle_.times = 0;
  write(polls);
}

void Trace::write(const record::CallRecord& record) {
  if (opens_at_first_record_) [[unlikely]]
    open_child_trace();
  const std::uint32_t slot = record.object().slot;
  const std::uint64_t seq = slot < seq_.size() ? seq_[slot]++ : 0;
  ++records_;
  encoding::encode(record, seq, hash_);
  if (capturing_) {
    line_.clear();
    encoding::render(record, seq, line_);
    captured_.emplace_back(line_.view().substr(0, line_.size() - 1));  // without the newline
  }
  if (journal_.is_open() && !writer_.append(record, seq, journal_)) journal_failed();
}

void Trace::journal_failed() noexcept {
  const int error = errno;
  journal_.close();
  std::fprintf(stderr,
               "verbfault: VERBFAULT_TRACE='%s': its journal '%s' cannot grow (%s) at record %llu: "
               "the run stops (exit status %d)\n",
               path_.c_str(), journal_path_.c_str(), std::strerror(error),
               static_cast<unsigned long long>(records_), exit_status::kUsage);
  std::fflush(nullptr);
  std::_Exit(exit_status::kUsage);
}

void Trace::start_capture() {
  flush_idle();  // the environment's run's, before the session's
  capturing_ = true;
  captured_.clear();
  hash_ = {};
  records_ = 0;
}

void Trace::stop_capture() {
  flush_idle();  // the session's, before the environment's run's
  capturing_ = false;
}

void Trace::restart_in_child(std::string path) noexcept {
  journal_.abandon();
  journal_path_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  idle_ = {};
  hash_ = {};
  records_ = 0;
  path_ = std::move(path);
  opens_at_first_record_ = !path_.empty();
}

void Trace::open_child_trace() {
  opens_at_first_record_ = false;
  try {
    open(path_);
  } catch (const std::runtime_error& error) {
    // As a trace that cannot be written anywhere: not a result.
    std::fprintf(stderr, "verbfault: a forked child's trace: %s (exit status %d)\n", error.what(),
                 exit_status::kUsage);
    std::fflush(nullptr);
    std::_Exit(exit_status::kUsage);
  }
}

void Trace::close() noexcept {
  try {
    flush_idle();
  } catch (...) {
    // Out of memory while dying (a Session's list): the file still gets what it has.
  }
  if (fd_ < 0) return;
  bool written = true;
  std::string error;
  if (journal_.is_open()) {
    // Rendered from this process's own mapping (no second open and read of
    // the file), then removed without first being cut to size.
    try {
      written = journal::render_bytes(journal_.view(), fd_, error) >= 0;
      if (written && ::unlink(journal_path_.c_str()) == 0) journal_.abandon();
    } catch (...) {
      // Out of memory while dying: the journal stays for `verbfault trace`.
      written = false;
      error = "out of memory";
    }
    if (!written && !error.starts_with("cannot write")) error = "'" + journal_path_ + "': " + error;
  }
  journal_.close();  // kept (not rendered, or not removed): cut to what it holds
  if (::close(fd_) != 0 && written && errno != EINTR) {  // NFS reports a full disk here
    written = false;
    error = std::string("cannot write: ") + std::strerror(errno);
  }
  fd_ = -1;
  if (written) return;
  std::fprintf(stderr,
               "verbfault: VERBFAULT_TRACE='%s': %s (its journal '%s' is kept): exit status %d\n",
               path_.c_str(), error.c_str(), journal_path_.c_str(), exit_status::kUsage);
  std::fflush(nullptr);
  std::_Exit(exit_status::kUsage);
}

}  // namespace verbfault::observers

#include "trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace verbfault::observers {

namespace {
// JSON buffered before it is written: large writes, few system calls.
constexpr std::size_t kFlushAtBytes = std::size_t{1} << 17;
}  // namespace

void Trace::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("VERBFAULT_TRACE='" + path +
                             "': cannot open for writing: " + std::strerror(errno));
  pending_.reserve(2 * kFlushAtBytes);
}

void Trace::object_added(record::ObjectId id) {
  if (id.slot >= seq_.size()) seq_.resize(std::max<std::size_t>(id.slot + 1, 2 * seq_.size()));
  seq_[id.slot] = 0;
}

void Trace::append(const record::CallRecord& record) {
  const std::uint32_t slot = record.object().slot;
  const std::uint64_t seq = slot < seq_.size() ? seq_[slot]++ : 0;
  ++records_;
  encoding::encode(record, seq, hash_);
  if (capturing_) {
    line_.clear();
    encoding::render(record, seq, line_);
    captured_.emplace_back(line_.view().substr(0, line_.size() - 1));  // without the newline
    if (fd_ >= 0) {
      char* to = pending_.reserve(line_.size());
      std::memcpy(to, line_.data(), line_.size());
      pending_.commit(to + line_.size());
    }
  } else if (fd_ >= 0) {
    encoding::render(record, seq, pending_);
  }
  if (fd_ >= 0 && pending_.size() >= kFlushAtBytes) flush();
}

void Trace::start_capture() {
  capturing_ = true;
  captured_.clear();
  hash_ = {};
  records_ = 0;
}

void Trace::stop_capture() {
  capturing_ = false;
}

void Trace::flush() noexcept {
  if (fd_ < 0 || pending_.size() == 0) return;
  const char* data = pending_.data();
  std::size_t left = pending_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  pending_.clear();
}

}  // namespace verbfault::observers

#include "trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace verbfault::interposer {

namespace {
constexpr std::size_t kFlushAt = 1 << 16;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;
}  // namespace

void Trace::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("VERBFAULT_TRACE='" + path +
                             "': cannot open for writing: " + std::strerror(errno));
}

void Trace::append(const std::string& line) {
  for (unsigned char c : line) hash_ = (hash_ ^ c) * kFnvPrime;
  hash_ = (hash_ ^ '\n') * kFnvPrime;
  ++records_;
  if (capturing_) captured_.push_back(line);
  if (fd_ < 0) return;
  buffer_ += line;
  buffer_ += '\n';
  if (buffer_.size() >= kFlushAt) flush();
}

void Trace::start_capture() {
  capturing_ = true;
  captured_.clear();
  hash_ = 0xcbf29ce484222325ull;
  records_ = 0;
}

void Trace::stop_capture() {
  capturing_ = false;
}

void Trace::flush() noexcept {
  if (fd_ < 0) return;
  const char* data = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

}  // namespace verbfault::interposer

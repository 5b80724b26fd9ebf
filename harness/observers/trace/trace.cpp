#include "trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace verbfault::observers {

namespace {
// Words buffered before they are rendered and written (about 128 KiB of
// JSON for busy polling).
constexpr std::size_t kFlushAtWords = 1 << 13;
}  // namespace

void Trace::open(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("VERBFAULT_TRACE='" + path +
                             "': cannot open for writing: " + std::strerror(errno));
  pending_.reserve(kFlushAtWords + 1024);
  rendered_.reserve(kFlushAtWords * 16);
}

void Trace::object_added(record::ObjectId id) {
  if (id.slot >= seq_.size()) seq_.resize(std::max<std::size_t>(id.slot + 1, 2 * seq_.size()));
  seq_[id.slot] = 0;
}

void Trace::append(const record::CallRecord& record) {
  const std::uint32_t slot = record.object().slot;
  const std::uint64_t seq = slot < seq_.size() ? seq_[slot]++ : 0;
  ++records_;
  // The hash over the record's words (trace_encoding.h); the words
  // themselves are kept only to be rendered.
  if (capturing_) {
    encoded_.clear();
    encoding::encode(record, seq, hash_, &encoded_);
    encoding::TextBuffer& line = rendered_;
    line.clear();
    encoding::render(encoded_, line);
    captured_.emplace_back(line.view().substr(0, line.size() - 1));  // without the newline
    if (fd_ >= 0) pending_.insert(pending_.end(), encoded_.begin(), encoded_.end());
  } else {
    encoding::encode(record, seq, hash_, fd_ >= 0 ? &pending_ : nullptr);
  }
  if (fd_ >= 0 && pending_.size() >= kFlushAtWords) flush();
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
  if (fd_ < 0 || pending_.empty()) return;
  rendered_.clear();
  try {
    for (std::size_t at = 0; at < pending_.size();)
      at += encoding::render(std::span(pending_).subspan(at), rendered_);
  } catch (...) {
    // Out of memory while dying: write what was rendered.
  }
  pending_.clear();
  const char* data = rendered_.data();
  std::size_t left = rendered_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace verbfault::observers

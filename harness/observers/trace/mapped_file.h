// A file written through a shared mapping: appending is a copy into memory
// the kernel owns, so what was appended survives the process however it
// ends (a SIGKILL included), and no system call is made per write. The
// file grows in reserved chunks (posix_fallocate, so a full disk is an
// error at growth, not a SIGBUS at a later store) and is cut to what was
// written when it is closed.
//
// Owner: the trace, under the interposer lock.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace verbfault::observers {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { close(); }

  // Creates or truncates `path`. Throws std::runtime_error with a one-line
  // message naming the file.
  void open(const std::string& path);
  bool is_open() const { return base_ != nullptr; }
  // Room for `bytes` more bytes: where to write them, or nullptr when the
  // file cannot grow (errno set: ENOSPC, EFBIG...).
  char* reserve(std::size_t bytes) {
    if (capacity_ - size_ < bytes && !grow(bytes)) return nullptr;
    return base_ + size_;
  }
  // The bytes up to `end` (a pointer reserve() returned, advanced) are kept.
  void commit(const char* end) { size_ = static_cast<std::size_t>(end - base_); }
  std::size_t size() const { return size_; }
  // What was committed, while the file is open.
  std::string_view view() const { return {base_, size_}; }
  // Cuts the file to what was committed and unmaps it; safe to call twice
  // and from a signal handler (munmap and ftruncate are).
  void close() noexcept;
  // Unmaps and closes without cutting the file (it is another process's).
  void abandon() noexcept;

 private:
  bool grow(std::size_t bytes);
  int fd_ = -1;
  char* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace verbfault::observers

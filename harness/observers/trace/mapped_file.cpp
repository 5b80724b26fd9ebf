#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace verbfault::observers {

namespace {
// The first size, and the largest growth step (a few growths a second at
// the fastest call rates). Small first: most runs are short (a sweep's
// seed of the sample journals ~4 KiB), and reserving and populating 1 MiB
// cost such a run about 1 ms, a third of the run.
constexpr std::size_t kFirst = std::size_t{64} << 10;
constexpr std::size_t kChunk = std::size_t{64} << 20;
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14
#endif
}  // namespace

void MappedFile::open(const std::string& path) {
  close();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("'" + path + "': cannot open for writing: " + std::strerror(errno));
  size_ = capacity_ = 0;
  if (!grow(1)) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("'" + path +
                             "': cannot be mapped for writing: " + std::strerror(error));
  }
}

bool MappedFile::grow(std::size_t bytes) {
  if (fd_ < 0) return errno = EBADF, false;
  // Small first (most runs are short), then doubling up to kChunk a step.
  std::size_t capacity = capacity_ == 0 ? kFirst : capacity_;
  while (capacity - size_ < bytes || capacity == capacity_) capacity += std::min(capacity, kChunk);
  // Blocks reserved now: a full disk fails here, not in a later store.
  if (const int error = posix_fallocate(fd_, 0, static_cast<off_t>(capacity)))
    return errno = error, false;
  void* base = base_ == nullptr
                   ? mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0)
                   : mremap(base_, capacity_, capacity, MREMAP_MAYMOVE);
  if (base == MAP_FAILED) return false;
  base_ = static_cast<char*>(base);
  // The new pages made writable in one call rather than one fault each on
  // first store (a fault per 4 KiB page costs more than the records
  // written into it). Older kernels lack it: then each page faults.
  (void)madvise(base_ + capacity_, capacity - capacity_, kPopulateWrite);
  capacity_ = capacity;
  return true;
}

void MappedFile::abandon() noexcept {
  if (base_ != nullptr) munmap(base_, capacity_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
  capacity_ = size_ = 0;
}

void MappedFile::close() noexcept {
  if (fd_ >= 0) (void)ftruncate(fd_, static_cast<off_t>(size_));
  abandon();
}

}  // namespace verbfault::observers

#include "readiness_fd.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace verbfault::sim {

ReadinessFd::ReadinessFd() : fd_(eventfd(0, EFD_CLOEXEC)) {}

ReadinessFd::~ReadinessFd() {
  if (fd_ >= 0) close(fd_);
}

void ReadinessFd::set_ready(bool ready) {
  if (ready == ready_ || fd_ < 0) return;
  uint64_t value = 1;
  // Neither call can block: the counter is 0 before the write and 1 before
  // the read, and nobody else reads or writes this eventfd.
  // By the system call: the connection manager's files are eventfds that
  // the harness's write(2) and read(2) serve as the CM device (sim/cm.h).
  ssize_t n = ready ? syscall(SYS_write, fd_, &value, sizeof value)
                    : syscall(SYS_read, fd_, &value, sizeof value);
  if (n == static_cast<ssize_t>(sizeof value)) ready_ = ready;
}

bool ReadinessFd::nonblocking() const {
  int flags = fcntl(fd_, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK);
}

}  // namespace verbfault::sim

#include "cm_files.h"

#include "cm_faults.h"
#include "interposer.h"

#include "connection_manager.h"
#include "libc.h"
#include "thread_calls.h"

#include <fcntl.h>
#include <netinet/in.h>  // before the kernel header: see sim/cm/connection_manager.h
#include <rdma/rdma_user_cm.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace verbfault::interposer::cm_files {

ssize_t write(int fd, const void* buffer, std::size_t length) {
  if (!provider::cm_file(fd)) return libc::real().write(fd, buffer, length);
  rdma_ucm_cmd_hdr header{};
  const bool blocking_get_event = [&] {
    if (length < sizeof header || buffer == nullptr) return false;
    std::memcpy(&header, buffer, sizeof header);
    const int flags = fcntl(fd, F_GETFL);
    return header.cmd == RDMA_USER_CM_CMD_GET_EVENT && flags >= 0 && (flags & O_NONBLOCK) == 0;
  }();
  for (;;) {
    // A blocking GET_EVENT is a wait on the file's readability, which the
    // thread scheduler models as a wait on a completion channel's: the
    // thread waits in the scheduler, not in the device, while the others
    // run.
    if (blocking_get_event) {
      cm_faults::waiting(fd, true);
      const auto readable = thread_calls::wait_readable(fd, "rdma_get_cm_event");
      cm_faults::waiting(fd, false);
      if (readable == thread_calls::Readable::interrupted) {
        errno = EINTR;
        return -1;
      }
    }
    const cm_faults::Executed executed = cm_faults::execute(process_run(), fd, buffer, length);
    // A relayed file (a kernel's) answers EAGAIN when it has nothing: a
    // blocking GET_EVENT waits for it as a read(2) of the kernel's file
    // would, and asks again.
    if (blocking_get_event && executed.result < 0 && errno == EAGAIN && provider::cm_relayed(fd)) {
      if (thread_calls::wait_readable_outside(fd) == thread_calls::Readable::interrupted) {
        errno = EINTR;
        return -1;
      }
      continue;
    }
    // An event the plan made never happen: the next one is the answer (a
    // non-blocking file's GET_EVENT then finds none: EAGAIN).
    if (!executed.withdrawn) return executed.result;
  }
}

int close(int fd, const void* caller) {
  if (!provider::cm_file(fd)) return libc::for_caller(caller).close(fd);
  cm_faults::closed(process_run(), fd);  // before the number can be another file's
  return provider::cm_close(fd);
}

bool fstat(int fd, struct stat* out) {
  return provider::cm_file(fd) && provider::cm_stat(fd, out);
}

bool refuses_read(int fd) {
  if (!provider::cm_file(fd)) return false;
  errno = EINVAL;
  return true;
}

}  // namespace verbfault::interposer::cm_files

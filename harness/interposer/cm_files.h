// The C library's descriptor calls on a CM file of the simulated fabric's
// connection manager (provider/connection_manager.h): librdmacm writes
// every command to /dev/infiniband/rdma_cm with write(2), checks the node
// with fstat(2) and closes it with close(2). Every other descriptor goes to
// the C library after one load.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>

namespace verbfault::interposer::cm_files {

ssize_t write(int fd, const void* buffer, std::size_t length);
// `caller` picks the C library's entry (libc::for_caller): TSan's close
// interceptor for a program's call, the C library's for TSan's own.
int close(int fd, const void* caller);
// fstat(2)'s answer for a CM file (a character device, 0666, the node's
// numbers); false: not one, ask the C library.
bool fstat(int fd, struct stat* out);
// read(2) of a CM file: the kernel's rdma_cm has no read, so EINVAL; false:
// not one.
bool refuses_read(int fd);

}  // namespace verbfault::interposer::cm_files

// The connection manager of the simulated fabric, as the kernel serves it
// to librdmacm: the character device /dev/infiniband/rdma_cm and the
// command interface written to it (<rdma/rdma_user_cm.h>, ABI version 4;
// drivers/infiniband/core/ucma.c). librdmacm itself runs unmodified on top,
// so everything built on it (rsockets, rdma_create_ep, rdma_getaddrinfo)
// is served as the kernel's users are (docs/architecture.md, "The
// connection manager").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>

namespace verbfault::sim::cm {

// The node librdmacm opens, and the misc class directory it reads the ABI
// version from (check_abi_version_sysfs: class/misc/rdma_cm/abi_version).
inline constexpr std::string_view kDevicePath = "/dev/infiniband/rdma_cm";
inline constexpr std::string_view kMiscClass = "/sys/class/misc/rdma_cm";
// rdma_cm is a misc device (major 10) whose minor the kernel hands out at
// load time; librdmacm compares it only with what RDMA netlink says, which
// the simulated fabric does not answer, so any fixed number serves.
inline constexpr unsigned kMiscMajor = 10;
inline constexpr unsigned kMinor = 250;

// Whether the system has a connection manager of its own (a real
// /dev/infiniband/rdma_cm, e.g. rxe's): then the simulated one is not
// served and librdmacm talks to the kernel as before.
bool real_device_present();

// open(2) of kDevicePath: a descriptor of a new CM file (an eventfd whose
// readability says events wait), with `flags`' O_NONBLOCK and O_CLOEXEC;
// -1 with errno set.
int open_file(int flags);
// Whether `fd` is an open CM file. Lock-free: asked on every write(2) and
// close(2) of the process.
bool is_file(int fd);
// write(2) of a command to a CM file: the command's return as the kernel's
// ucma_write gives it (`length` on success; -1 with errno set). A blocking
// GET_EVENT waits here until an event comes.
ssize_t write(int fd, const void* buffer, std::size_t length);
// close(2) of a CM file: its ids are destroyed, as at the kernel's release
// of the file. Returns what close(2) of the descriptor returns.
int close_file(int fd);

}  // namespace verbfault::sim::cm

// verbfault/sim/cm.h: the CM files of the process, found by descriptor on
// every write(2) and close(2) without a lock.
#include "verbfault/sim/cm.h"

#include "connection_manager.h"
#include "fabric.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace verbfault::sim::cm {

namespace {

// One bit per descriptor below kTracked: set while it is a CM file. A CM
// file's eventfd above that is refused at open (EMFILE), so the check
// stays one load for every descriptor.
constexpr int kTracked = 4096;
std::array<std::atomic<uint64_t>, kTracked / 64> cm_fds{};

void mark(int fd, bool on) {
  const uint64_t bit = uint64_t{1} << (fd % 64);
  if (on)
    cm_fds[static_cast<std::size_t>(fd / 64)].fetch_or(bit, std::memory_order_release);
  else
    cm_fds[static_cast<std::size_t>(fd / 64)].fetch_and(~bit, std::memory_order_release);
}

}  // namespace

bool real_device_present() {
  struct stat node {};
  return ::stat(std::string(kDevicePath).c_str(), &node) == 0 && S_ISCHR(node.st_mode);
}

int open_file(int flags) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  fabric.rejoin_after_fork();  // a forked child's first CM file
  const int fd = fabric.connection_manager().open_file(flags);
  if (fd < 0) return -1;
  if (fd >= kTracked) {
    fabric.connection_manager().close_file(fd);
    ::close(fd);
    errno = EMFILE;
    return -1;
  }
  mark(fd, true);
  return fd;
}

bool is_file(int fd) {
  if (fd < 0 || fd >= kTracked) return false;
  return (cm_fds[static_cast<std::size_t>(fd / 64)].load(std::memory_order_acquire) >> (fd % 64) &
          1) != 0;
}

ssize_t write(int fd, const void* buffer, std::size_t length, Fault fault) {
  Fabric& fabric = process_fabric();
  std::unique_lock guard(fabric.mutex);
  if (!is_file(fd)) {  // closed by another thread meanwhile
    errno = EBADF;
    return -1;
  }
  fabric.next_step();
  const int error = fabric.connection_manager().execute(fd, static_cast<const uint8_t*>(buffer),
                                                        length, guard, fault);
  if (error != 0) {
    errno = error;
    return -1;
  }
  return static_cast<ssize_t>(length);
}

bool withdraw_event(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().withdraw_event(fd, handle);
}

bool delay_event(int fd, unsigned long long delay_ns) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().delay_event(fd, delay_ns);
}

bool peer_gone(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().peer_gone(fd, handle);
}

bool on_ethernet(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().on_ethernet(fd, handle);
}

bool neighbour_changed(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().neighbour_changed(fd, handle);
}

bool device_removed(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().device_removed(fd, handle);
}

bool address_changed(int fd, unsigned handle) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().address_changed(fd, handle);
}

std::vector<std::pair<unsigned, std::string>> id_states(int fd) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  if (!is_file(fd)) return {};
  return fabric.connection_manager().id_states(fd);
}

bool event_was_delayed(int fd) {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return is_file(fd) && fabric.connection_manager().event_was_delayed(fd);
}

int close_file(int fd) {
  {
    Fabric& fabric = process_fabric();
    std::lock_guard guard(fabric.mutex);
    mark(fd, false);
    fabric.connection_manager().close_file(fd);
    fabric.notify_waiters();  // its ids' peers may have heard of it
  }
  return ::close(fd);
}

}  // namespace verbfault::sim::cm

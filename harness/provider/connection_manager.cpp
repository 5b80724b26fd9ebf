#include "connection_manager.h"

#include "cm_relay.h"

#include "verbfault/sim/cm.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>

namespace verbfault::provider {

// The two enums are one list, in one order.
static_assert(
    static_cast<int>(CmFault::kReject) == static_cast<int>(sim::cm::Fault::kReject) &&
    static_cast<int>(CmFault::kAddrError) == static_cast<int>(sim::cm::Fault::kAddrError) &&
    static_cast<int>(CmFault::kRouteError) == static_cast<int>(sim::cm::Fault::kRouteError) &&
    static_cast<int>(CmFault::kUnreachable) == static_cast<int>(sim::cm::Fault::kUnreachable));

bool cm_kernel_present() {
  static const bool present = sim::cm::real_device_present();
  return present;
}

int cm_open(int flags, bool effect_level) {
  // The inner file is non-blocking: the relay waits for the set itself.
  const int inner_flags = O_CLOEXEC | O_NONBLOCK;
  if (cm_kernel_present()) {
    const std::string path(sim::cm::kDevicePath);
    const int inner =
        static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path.c_str(), O_RDWR | inner_flags));
    return inner < 0 ? -1 : cm_relay::open(inner, false, flags);
  }
  if (!effect_level) return sim::cm::open_file(flags);
  const int inner = sim::cm::open_file(inner_flags);
  return inner < 0 ? -1 : cm_relay::open(inner, true, flags);
}

bool cm_file(int fd) {
  return sim::cm::is_file(fd) || cm_relay::is_relay(fd);
}

bool cm_relayed(int fd) {
  return cm_relay::is_relay(fd);
}

ssize_t cm_write(int fd, const void* buffer, std::size_t length, CmFault fault) {
  if (cm_relay::is_relay(fd)) return cm_relay::write(fd, buffer, length, fault);
  return sim::cm::write(fd, buffer, length, static_cast<sim::cm::Fault>(fault));
}

bool cm_withdraw_event(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::withdraw_event(fd, handle);
  return sim::cm::withdraw_event(fd, handle);
}

bool cm_delay_event(int fd, unsigned long long delay_ns) {
  if (cm_relay::is_relay(fd)) return cm_relay::delay_event(fd, delay_ns);
  return sim::cm::delay_event(fd, delay_ns);
}

bool cm_id_on_ethernet(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::on_ethernet(fd, handle);
  return sim::cm::on_ethernet(fd, handle);
}

bool cm_neighbour_changed(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::neighbour_changed(fd, handle);
  return sim::cm::neighbour_changed(fd, handle);
}

std::vector<std::pair<unsigned, std::string>> cm_id_states(int fd) {
  if (cm_relay::is_relay(fd)) return cm_relay::id_states(fd);
  return sim::cm::id_states(fd);
}

bool cm_peer_gone(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::peer_gone(fd, handle);
  return sim::cm::peer_gone(fd, handle);
}

bool cm_event_was_delayed(int fd) {
  if (cm_relay::is_relay(fd)) return cm_relay::event_was_delayed(fd);
  return sim::cm::event_was_delayed(fd);
}

bool cm_device_removed(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::device_removed(fd, handle);
  return sim::cm::device_removed(fd, handle);
}

bool cm_address_changed(int fd, unsigned handle) {
  if (cm_relay::is_relay(fd)) return cm_relay::address_changed(fd, handle);
  return sim::cm::address_changed(fd, handle);
}

int cm_close(int fd) {
  if (cm_relay::is_relay(fd)) return cm_relay::close(fd);
  return sim::cm::close_file(fd);
}

bool cm_stat(int fd, struct stat* out) {
  if (cm_relay::stat(fd, out)) return true;  // the kernel's node
  if (!cm_file(fd)) return false;
  // The descriptor's own, for its inode and times; by the system call,
  // whose struct stat is the C library's on this ABI (glibc's fstat is a
  // symbol of 2.33 only).
  struct stat own {};
  if (::syscall(SYS_fstat, fd, &own) != 0) return false;
  *out = own;
  out->st_mode = S_IFCHR | 0666;
  out->st_rdev = makedev(sim::cm::kMiscMajor, sim::cm::kMinor);
  out->st_size = 0;
  return true;
}

}  // namespace verbfault::provider

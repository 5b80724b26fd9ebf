#include "connection_manager.h"

#include "verbfault/sim/cm.h"

namespace verbfault::provider {

// The two enums are one list, in one order.
static_assert(
    static_cast<int>(CmFault::kReject) == static_cast<int>(sim::cm::Fault::kReject) &&
    static_cast<int>(CmFault::kAddrError) == static_cast<int>(sim::cm::Fault::kAddrError) &&
    static_cast<int>(CmFault::kRouteError) == static_cast<int>(sim::cm::Fault::kRouteError) &&
    static_cast<int>(CmFault::kUnreachable) == static_cast<int>(sim::cm::Fault::kUnreachable));

int cm_open(int flags) {
  return sim::cm::open_file(flags);
}

bool cm_file(int fd) {
  return sim::cm::is_file(fd);
}

ssize_t cm_write(int fd, const void* buffer, std::size_t length, CmFault fault) {
  return sim::cm::write(fd, buffer, length, static_cast<sim::cm::Fault>(fault));
}

bool cm_withdraw_event(int fd, unsigned handle) {
  return sim::cm::withdraw_event(fd, handle);
}

bool cm_delay_event(int fd, unsigned long long delay_ns) {
  return sim::cm::delay_event(fd, delay_ns);
}

bool cm_id_on_ethernet(int fd, unsigned handle) {
  return sim::cm::on_ethernet(fd, handle);
}

bool cm_neighbour_changed(int fd, unsigned handle) {
  return sim::cm::neighbour_changed(fd, handle);
}

std::vector<std::pair<unsigned, std::string>> cm_id_states(int fd) {
  return sim::cm::id_states(fd);
}

bool cm_peer_gone(int fd, unsigned handle) {
  return sim::cm::peer_gone(fd, handle);
}

bool cm_event_was_delayed(int fd) {
  return sim::cm::event_was_delayed(fd);
}

int cm_close(int fd) {
  return sim::cm::close_file(fd);
}

unsigned cm_major() {
  return sim::cm::kMiscMajor;
}

unsigned cm_minor() {
  return sim::cm::kMinor;
}

}  // namespace verbfault::provider

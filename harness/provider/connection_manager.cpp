#include "connection_manager.h"

#include "verbfault/sim/cm.h"

namespace verbfault::provider {

int cm_open(int flags) {
  return sim::cm::open_file(flags);
}

bool cm_file(int fd) {
  return sim::cm::is_file(fd);
}

ssize_t cm_write(int fd, const void* buffer, std::size_t length) {
  return sim::cm::write(fd, buffer, length);
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

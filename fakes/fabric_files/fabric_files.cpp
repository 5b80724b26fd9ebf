#include "fabric_files.h"

#include <unistd.h>

#include <cerrno>

namespace verbfault::sim::wire {

std::string status_table_path(std::string_view fabric) {
  return "/dev/shm/verbfault-fabric-" + std::string(fabric) + ".v" +
         std::to_string(kStatusTableLayout);
}

int remove_status_table(std::string_view fabric) {
  if (::unlink(status_table_path(fabric).c_str()) == 0 || errno == ENOENT) return 0;
  return errno;
}

}  // namespace verbfault::sim::wire

// The number of threads of this process, as the kernel counts them.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace verbfault::interposer {

// num_threads, the 20th field of /proc/self/stat (proc(5)), read into a
// stack buffer: asked on the device's wait path and by a fork server
// before it forks (fork_server.h), neither of which may allocate. -1 when
// unreadable.
inline int process_thread_count() {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[1024];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: count the
  // fields after its last ')'.
  const char* at = std::strrchr(text, ')');
  for (int field = 2; at != nullptr && field < 20; ++field) at = std::strchr(at + 1, ' ');
  return at == nullptr ? -1 : std::atoi(at + 1);
}

}  // namespace verbfault::interposer

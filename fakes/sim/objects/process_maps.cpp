#include "process_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace verbfault::sim::process_maps {

bool covered_by(uintptr_t begin, uintptr_t end, const std::function<bool(const Mapping&)>& accept) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A line is at most an address range, its fields and a path (PATH_MAX).
  char buffer[8192];
  std::size_t held = 0;
  bool at_end = false;
  bool answer = false;
  uintptr_t next = begin;
  for (;;) {
    if (next >= end) {
      answer = true;
      break;
    }
    char* newline = static_cast<char*>(std::memchr(buffer, '\n', held));
    if (newline == nullptr) {
      if (at_end || held == sizeof buffer) break;  // the last line read, or one too long
      const ssize_t n = read(fd, buffer + held, sizeof buffer - held);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        at_end = true;
        continue;
      }
      held += static_cast<std::size_t>(n);
      continue;
    }
    *newline = '\0';
    Mapping line;
    char perms[8] = {};
    unsigned long long offset = 0;
    int path_at = 0;
    unsigned long long b = 0;
    unsigned long long e = 0;
    if (std::sscanf(buffer, "%llx-%llx %7s %llx %*s %lu %n", &b, &e, perms, &offset, &line.inode,
                    &path_at) < 5)
      break;
    line.begin = b;
    line.end = e;
    line.perms = perms;
    if (path_at > 0 && buffer + path_at <= newline)
      line.path =
          std::string_view(buffer + path_at, static_cast<std::size_t>(newline - buffer - path_at));
    if (line.end > next) {
      if (line.begin > next || !accept(line)) break;
      next = line.end;
    }
    const std::size_t used = static_cast<std::size_t>(newline + 1 - buffer);
    std::memmove(buffer, buffer + used, held - used);
    held -= used;
  }
  close(fd);
  return answer;
}

}  // namespace verbfault::sim::process_maps

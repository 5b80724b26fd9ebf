#include "process_maps.h"

#include <cstdio>
#include <fstream>

namespace verbfault::sim::process_maps {

bool covered_by(uintptr_t begin, uintptr_t end, const std::function<bool(const Mapping&)>& accept) {
  std::ifstream maps("/proc/self/maps");
  std::string text;
  uintptr_t next = begin;
  while (next < end && std::getline(maps, text)) {
    Mapping line;
    char perms[8] = {};
    unsigned long long offset = 0;
    int path_at = 0;
    unsigned long long b = 0;
    unsigned long long e = 0;
    if (std::sscanf(text.c_str(), "%llx-%llx %7s %llx %*s %lu %n", &b, &e, perms, &offset,
                    &line.inode, &path_at) < 5)
      return false;
    line.begin = b;
    line.end = e;
    line.perms = perms;
    if (path_at > 0 && static_cast<std::size_t>(path_at) <= text.size())
      line.path = text.substr(static_cast<std::size_t>(path_at));
    if (line.end <= next) continue;
    if (line.begin > next || !accept(line)) return false;
    next = line.end;
  }
  return next >= end;
}

}  // namespace verbfault::sim::process_maps

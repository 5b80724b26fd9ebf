// printf into a std::string: the device's one-line diagnoses and the text
// of its sysfs attributes.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace verbfault::sim {

__attribute__((format(printf, 1, 2))) inline std::string printf_string(const char* pattern, ...) {
  char text[256];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

}  // namespace verbfault::sim

#include "preload_line.h"

namespace verbfault::cli {

std::string preload_line(const std::string& library, const char* inherited) {
  std::string line;
#ifdef VERBFAULT_SANITIZER_RUNTIME
  // cmake/Sanitizers.cmake: `c++ -print-file-name=libasan.so`, resolved.
  line = std::string(VERBFAULT_SANITIZER_RUNTIME) + ":";
#endif
  line += library;
  if (inherited != nullptr && *inherited != '\0') line += std::string(":") + inherited;
  return line;
}

}  // namespace verbfault::cli

#include "process.h"

#include <cstring>

namespace verbfault::cli {

std::string describe_status(int status) {
  if (status > 128 && status < 128 + 65)
    if (const char* name = sigabbrev_np(status - 128)) return std::string("signal ") + name;
  return "exit " + std::to_string(status);
}

}  // namespace verbfault::cli

#include "invariant.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace verbfault::sim {

namespace {

void put(const char* text) noexcept {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void invariant_broken(const char* file, int line, const char* condition,
                      const char* what) noexcept {
  // The line number in decimal, without printf.
  char digits[16];
  char* at = digits + sizeof digits;
  *--at = '\0';
  unsigned value = line < 0 ? 0u : static_cast<unsigned>(line);
  do {
    *--at = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && at > digits);
  put("verbfault: internal error: the simulated device broke an invariant at ");
  put(file);
  put(":");
  put(at);
  put(": ");
  put(condition);
  put(" (");
  put(what);
  put(")\n");
  std::abort();
}

}  // namespace verbfault::sim

// A line of text built in a fixed buffer and written with one write(2):
// what a signal handler may do (signal-safety(7): no stdio, no
// allocation, no locks). Text that does not fit is cut; the line always
// ends with a newline.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace verbfault::interposer {

class SignalSafeLine {
 public:
  SignalSafeLine& text(std::string_view text) {
    for (const char c : text) put(c);
    return *this;
  }
  SignalSafeLine& decimal(std::uint64_t value) {
    char digits[20];
    std::size_t count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (count > 0) put(digits[--count]);
    return *this;
  }
  // 16 hexadecimal digits, zero-padded (a trace hash as printf's %016llx).
  SignalSafeLine& hex16(std::uint64_t value) {
    for (int shift = 60; shift >= 0; shift -= 4) put("0123456789abcdef"[(value >> shift) & 0xf]);
    return *this;
  }
  // Writes the line and its newline to `fd` in one write(2) (with
  // O_APPEND, lines of processes that end together do not mix).
  void write_to(int fd) {
    text_[size_] = '\n';
    const ssize_t written = ::write(fd, text_, size_ + 1);
    (void)written;  // nothing to do when stderr is gone
  }
  std::string_view view() const { return {text_, size_}; }

 private:
  void put(char c) {
    if (size_ < sizeof text_ - 1) text_[size_++] = c;
  }
  char text_[512];
  std::size_t size_ = 0;
};

}  // namespace verbfault::interposer

#include "listening_socket.h"

#include "verbfault/sim/cm.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace verbfault::sim::cm {

ListeningSocket::ListeningSocket(uint32_t id) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract (a leading NUL): nothing in the file system, and the kernel
  // frees the name however the process ends.
  const int length = std::snprintf(address.sun_path + 1, sizeof address.sun_path - 1,
                                   "verbfault-cm/%d/%u", static_cast<int>(getpid()), id);
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), size) != 0 ||
      ::listen(fd_, 0) != 0) {
    syscall(SYS_close, fd_);
    fd_ = -1;
  }
}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

ListeningSocket::~ListeningSocket() {
  // By the system call: the descriptor is the library's own, never a CM
  // file, and close(2) is the front door's.
  if (fd_ >= 0) syscall(SYS_close, fd_);
}

namespace {

std::mutex g_shown_mutex;  // guards shown()

std::map<unsigned, ListeningSocket>& shown() {
  static auto* sockets = new std::map<unsigned, ListeningSocket>();  // lives to _exit
  return *sockets;
}

}  // namespace

void show_listening(unsigned key) {
  std::lock_guard lock(g_shown_mutex);
  if (shown().count(key) == 0) shown().emplace(key, ListeningSocket(key));
}

void hide_listening(unsigned key) {
  std::lock_guard lock(g_shown_mutex);
  shown().erase(key);
}

}  // namespace verbfault::sim::cm

// What a listening id shows the system: a listening UNIX socket of the
// process (abstract name "@verbfault-cm/<pid>/<id>"), as a TCP server
// shows its listening socket. `verbfault run` starts the next process of a
// run once the one before listens (harness/cli/process_group.cpp reads
// /proc/net/unix), so an rdma_cm server counts as ready once it listens.
#pragma once

#include <cstdint>

namespace verbfault::sim::cm {

class ListeningSocket {
 public:
  ListeningSocket() = default;
  explicit ListeningSocket(uint32_t id);
  ~ListeningSocket();
  ListeningSocket(ListeningSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ListeningSocket& operator=(ListeningSocket&& other) noexcept;
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace verbfault::sim::cm

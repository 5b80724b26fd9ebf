// A real file descriptor whose readability mirrors an in-process queue.
#pragma once

namespace verbfault::sim {

// The completion channel fd and the async event fd that applications
// poll(2)/epoll(7) on. An eventfd whose counter is 1 exactly while the queue
// it mirrors is non-empty. Only the owner of the queue writes or reads the
// eventfd (under the owner's lock), and only when it knows the counter's
// value, so neither operation can block whatever O_NONBLOCK flag the
// application sets on the descriptor. Events themselves never travel
// through the fd: ibv_get_cq_event / ibv_get_async_event take them from the
// queue.
class ReadinessFd {
 public:
  ReadinessFd();
  ~ReadinessFd();
  ReadinessFd(const ReadinessFd&) = delete;
  ReadinessFd& operator=(const ReadinessFd&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it: its owner from then on
  // closes it (the connection manager's file, closed by the application).
  void release() { fd_ = -1; }
  // Makes the fd readable (ready = true) or not. Caller holds the owner's lock.
  void set_ready(bool ready);
  // True when the application has put the descriptor in O_NONBLOCK mode.
  bool nonblocking() const;

 private:
  int fd_;
  bool ready_ = false;
};

}  // namespace verbfault::sim

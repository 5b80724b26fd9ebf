// Injected events on a real provider. The completion channel and async
// event fds the application sees stay real file descriptors that poll(2)
// and epoll(7) can watch: each becomes an epoll fd over the provider's own
// fd and an eventfd of the harness, so it is readable for the provider's
// events and for injected ones alike. The provider's fd is switched to
// non-blocking; the application's blocking or O_NONBLOCK choice is read
// from the fd it holds.
#pragma once

#include <infiniband/verbs.h>

namespace verbfault::engine {

class EventFd {
 public:
  // Wraps `provider_fd`; returns the fd to hand to the application, or -1
  // (errno set) when the wrapper cannot be built.
  int wrap(int provider_fd);
  bool wrapped() const { return epoll_ >= 0; }
  int provider_fd() const { return provider_; }
  int application_fd() const { return epoll_; }
  // One more injected event is ready / one was taken.
  void signal() const;
  void consume() const;
  // Whether the application set O_NONBLOCK on its fd.
  bool nonblocking() const;
  // Blocks until the provider's fd or an injected event is readable.
  void wait() const;
  // Closes the wrapper; returns the provider's fd to put back in place.
  int unwrap();

 private:
  int epoll_ = -1;
  int eventfd_ = -1;
  int provider_ = -1;
};

}  // namespace verbfault::engine

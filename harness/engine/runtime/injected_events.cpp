#include "injected_events.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace verbfault::engine {

int EventFd::wrap(int provider_fd) {
  int events = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
  int epoll = epoll_create1(EPOLL_CLOEXEC);
  if (events < 0 || epoll < 0) {
    const int error = errno;
    if (events >= 0) close(events);
    if (epoll >= 0) close(epoll);
    errno = error;
    return -1;
  }
  epoll_event watch{};
  watch.events = EPOLLIN;
  watch.data.fd = provider_fd;
  epoll_ctl(epoll, EPOLL_CTL_ADD, provider_fd, &watch);
  watch.data.fd = events;
  epoll_ctl(epoll, EPOLL_CTL_ADD, events, &watch);
  // Reads of the provider's fd never block: waiting is done on the epoll fd.
  fcntl(provider_fd, F_SETFL, fcntl(provider_fd, F_GETFL) | O_NONBLOCK);
  epoll_ = epoll;
  eventfd_ = events;
  provider_ = provider_fd;
  return epoll_;
}

void EventFd::signal() const {
  const std::uint64_t one = 1;
  while (write(eventfd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void EventFd::consume() const {
  std::uint64_t value = 0;
  while (read(eventfd_, &value, sizeof value) < 0 && errno == EINTR) {
  }
}

bool EventFd::nonblocking() const {
  return (fcntl(epoll_, F_GETFL) & O_NONBLOCK) != 0;
}

void EventFd::wait() const {
  epoll_event ready{};
  while (epoll_wait(epoll_, &ready, 1, -1) < 0 && errno == EINTR) {
  }
}

int EventFd::unwrap() {
  // The application's blocking mode goes back to the provider's fd.
  const int flags = fcntl(provider_, F_GETFL);
  fcntl(provider_, F_SETFL, nonblocking() ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
  close(epoll_);
  close(eventfd_);
  epoll_ = eventfd_ = -1;
  return provider_;
}

}  // namespace verbfault::engine

// Fabric::begin_outside / look_outside / end_outside (fabric.h): a process
// whose application threads all wait outside the device counts as waiting
// for its peers' quiescence while nothing they wait on is readable.
#include "fabric.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>

namespace verbfault::sim {

namespace {

// Whether one of `fds` is readable now. By the system call: poll(2) is the
// front door's export, a scheduling point, and this runs under
// Fabric::mutex (on the service thread too). More fds than fit are taken
// for readable: no mark is better than a wrong one.
bool any_readable(std::span<const int> fds) {
  constexpr std::size_t kMost = 64;
  if (fds.size() > kMost) return true;
  std::array<pollfd, kMost> polled{};
  for (std::size_t i = 0; i < fds.size(); ++i) polled[i] = {fds[i], POLLIN, 0};
  const timespec now{};
  long ready;
  while ((ready = syscall(SYS_ppoll, polled.data(), fds.size(), &now, nullptr, 0)) < 0 &&
         errno == EINTR) {
  }
  return ready != 0;  // an error (a closed fd: POLLNVAL counts) is no mark
}

}  // namespace

bool Fabric::begin_outside(std::span<const int> fds) {
  outside_fds_.assign(fds.begin(), fds.end());
  if (any_readable(outside_fds_)) {
    if (marked_outside_) stop_waiting();
    return false;
  }
  mark_outside();
  return true;
}

void Fabric::look_outside() {
  if (outside_fds_.empty() || marked_outside_ || any_readable(outside_fds_)) return;
  mark_outside();
}

void Fabric::mark_outside() {
  wire::Endpoint* endpoint = started_endpoint();
  if (endpoint == nullptr || marked_outside_) return;
  // Outside first, then waiting (stop_waiting clears them the other way).
  endpoint->set_outside(true);
  marked_outside_ = true;
  mark_waiting();
}

void Fabric::forget_outside_fds() {
  outside_fds_.clear();
}

void Fabric::end_outside(bool keep_waiting) {
  outside_fds_.clear();
  if (!keep_waiting) {
    stop_waiting();
  } else if (marked_outside_) {
    marked_outside_ = false;
    if (wire::Endpoint* endpoint = membership_.endpoint.get()) endpoint->set_outside(false);
  }
}

}  // namespace verbfault::sim

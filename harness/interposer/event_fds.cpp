// The event fds of real channels and contexts: wrapped so that injected
// events can be delivered through them (engine/runtime/injected_events.h),
// and lent back to libibverbs around the calls that hand them to the
// kernel (FdLoan, interposer.h).
#include "run.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace verbfault::interposer {

void wrap_fd(Tracked& tracked, int& fd) {
  const int wrapped = tracked.faults->events.wrap(fd);
  if (wrapped >= 0) {
    fd = wrapped;
  } else {
    std::fprintf(stderr,
                 "verbfault: cannot wrap the event fd of %s (%s): no injected events on it\n",
                 tracked.name().c_str(), std::strerror(errno));
  }
}

void unwrap_fd(Run& run, const void* handle) {
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(handle);
  if (tracked == nullptr || !tracked->faults->events.wrapped()) return;
  const int provider_fd = tracked->faults->events.unwrap();
  if (tracked->ref.kind == ObjectKind::context)
    static_cast<ibv_context*>(const_cast<void*>(handle))->async_fd = provider_fd;
  else
    static_cast<ibv_comp_channel*>(const_cast<void*>(handle))->fd = provider_fd;
}

FdLoan::FdLoan(Run& run, ibv_comp_channel* channel) : run_(run) {
  if (channel != nullptr) lend(channel, &channel->fd);
}

FdLoan::FdLoan(Run& run, ibv_context* context) : run_(run) {
  if (context != nullptr) lend(context, &context->async_fd);
}

void FdLoan::lend(const void* handle, int* fd) {
  Run& run = run_;
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(handle);
  if (tracked == nullptr || !tracked->faults->events.wrapped()) return;
  handle_ = handle;
  fd_ = fd;
  if (tracked->fd_loans++ == 0) *fd = tracked->faults->events.provider_fd();
}

FdLoan::~FdLoan() {
  if (handle_ == nullptr) return;
  Run& run = run_;
  std::lock_guard lock(run.mutex);
  Tracked* tracked = run.registry.find(handle_);
  if (tracked != nullptr && --tracked->fd_loans == 0)
    *fd_ = tracked->faults->events.application_fd();
}

}  // namespace verbfault::interposer

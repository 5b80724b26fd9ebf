// Completion channels and event calls, as libibverbs does them:
// ibv_get_cq_event(3) reads the event from channel->fd and
// ibv_get_async_event(3) from context->async_fd. A caller that hands in a
// copy of the channel holding the provider's fd (as the interposer does)
// reads from that fd; a caller that hands in some other fd gets what
// read(2) on a descriptor that is not the provider's would give: -1 with
// EINVAL.
#include "double.h"

#include "verbfault/sim/provider.h"

#include <cerrno>
#include <mutex>
#include <unordered_map>

using namespace verbfault;

namespace verbfault::provider_double {

namespace {

struct Fds {
  std::mutex mutex;
  std::unordered_map<int, ibv_comp_channel*> channels;    // provider fd -> channel
  std::unordered_map<const ibv_context*, int> async_fds;  // context -> provider fd
};

Fds& fds() {
  static auto* state = new Fds();  // never destroyed: calls may come from exit handlers
  return *state;
}

}  // namespace

namespace {

decltype(verbs_context::create_cq_ex) simulator_create_cq_ex = nullptr;
decltype(verbs_context::create_qp_ex) simulator_create_qp_ex = nullptr;

// The extended verbs reach the kernel the same way: the channel and the
// async event file by their fds.
ibv_cq_ex* checked_create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if ((attr != nullptr && !channel_fd_is_providers(attr->channel)) ||
      !async_fd_is_providers(context)) {
    errno = EBADF;
    return nullptr;
  }
  return simulator_create_cq_ex(context, attr);
}

ibv_qp* checked_create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (!async_fd_is_providers(context)) {
    errno = EBADF;
    return nullptr;
  }
  return simulator_create_qp_ex(context, attr);
}

}  // namespace

void context_opened(ibv_context* context) {
  // The same simulator ops for every context.
  if (verbs_context* vctx = verbs_get_ctx_op(context, create_cq_ex)) {
    simulator_create_cq_ex = vctx->create_cq_ex;
    vctx->create_cq_ex = checked_create_cq_ex;
  }
  if (verbs_context* vctx = verbs_get_ctx_op(context, create_qp_ex)) {
    simulator_create_qp_ex = vctx->create_qp_ex;
    vctx->create_qp_ex = checked_create_qp_ex;
  }
  std::lock_guard guard(fds().mutex);
  fds().async_fds[context] = context->async_fd;
}

void context_closed(ibv_context* context) {
  // The simulator closes the context's channels with it.
  std::lock_guard guard(fds().mutex);
  fds().async_fds.erase(context);
  std::erase_if(fds().channels,
                [&](const auto& entry) { return entry.second->context == context; });
}

void channel_created(ibv_comp_channel* channel) {
  std::lock_guard guard(fds().mutex);
  fds().channels[channel->fd] = channel;
}

void channel_destroyed(ibv_comp_channel* channel) {
  std::lock_guard guard(fds().mutex);
  std::erase_if(fds().channels, [&](const auto& entry) { return entry.second == channel; });
}

ibv_comp_channel* channel_with_fd(int fd) {
  std::lock_guard guard(fds().mutex);
  auto it = fds().channels.find(fd);
  return it == fds().channels.end() ? nullptr : it->second;
}

bool channel_fd_is_providers(const ibv_comp_channel* channel) {
  return channel == nullptr || channel_with_fd(channel->fd) == channel;
}

bool async_fd_is_providers(const ibv_context* context) {
  std::lock_guard guard(fds().mutex);
  auto it = fds().async_fds.find(context);
  return it != fds().async_fds.end() && it->second == context->async_fd;
}

}  // namespace verbfault::provider_double

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  ibv_comp_channel* channel = sim::create_comp_channel(context);
  if (channel != nullptr) provider_double::channel_created(channel);
  return channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  const int result = sim::destroy_comp_channel(channel);
  if (result == 0) provider_double::channel_destroyed(channel);
  return result;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  // The channel is the one whose fd this is; blocking or not is that fd's
  // O_NONBLOCK flag, as for read(2).
  ibv_comp_channel* own = provider_double::channel_with_fd(channel->fd);
  if (own == nullptr) {
    errno = EINVAL;
    return -1;
  }
  return sim::get_cq_event(own, cq, cq_context);
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  sim::ack_cq_events(cq, nevents);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (!provider_double::async_fd_is_providers(context)) {
    errno = EINVAL;
    return -1;
  }
  return sim::get_async_event(context, event);
}

void ibv_ack_async_event(ibv_async_event* event) {
  sim::ack_async_event(event);
}

}  // extern "C"

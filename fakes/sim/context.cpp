#include "context.h"

#include "address_handle.h"
#include "completion_channel.h"
#include "completion_queue.h"
#include "device.h"
#include "fabric.h"
#include "memory_region.h"
#include "memory_window.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"

#include <cstddef>

namespace verbfault::sim {

Context::Context(Device& device) : device_(device) {
  handle_.owner = this;
  verbs_context& vctx = handle_.verbs.verbs;
  vctx.sz = sizeof(verbs_context);
  ibv_context& ctx = vctx.context;
  ctx.device = device.verbs();
  ctx.cmd_fd = -1;
  ctx.async_fd = async_fd_.fd();
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  // verbs_get_ctx() recognises an extended context by this marker.
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  Fabric::get().contexts().push_back(this);
}

Context::~Context() {
  // Children before parents: QPs hold CQs, SRQs and PDs; CQs hold channels.
  Fabric& fabric = Fabric::get();
  std::erase(fabric.contexts(), this);
  for (auto& [qp, owned] : qps) {
    fabric.unregister_qp(qp->qpn());
    fabric.unschedule(qp);
  }
  qps.clear();
  srqs.clear();
  cqs.clear();
  channels.clear();
  mws.clear();  // their destructors give back their keys
  for (auto& [mr, owned] : mrs) fabric.unregister_mr(mr->key());
  mrs.clear();
  ahs.clear();
  pds.clear();
  pthread_mutex_destroy(&handle_.verbs.verbs.context.mutex);
}

Context* Context::from(ibv_context* c) {
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<uint8_t*>(c) -
                                                offsetof(verbs_context, context));
  return reinterpret_cast<Handle<ContextStorage, Context>*>(vctx)->owner;
}

void Context::raise(const ibv_async_event& event) {
  async_events_.push_back(event);
  async_fd_.set_ready(true);
  Fabric::get().wakeup.notify_all();
}

ibv_async_event Context::take_async_event() {
  ibv_async_event event = async_events_.front();
  async_events_.pop_front();
  async_fd_.set_ready(!async_events_.empty());
  return event;
}

void Context::discard_async_events_of(const void* object) {
  std::erase_if(async_events_, [object](const ibv_async_event& e) {
    return e.element.cq == object;  // the element union: any object pointer
  });
  async_fd_.set_ready(!async_events_.empty());
}

}  // namespace verbfault::sim

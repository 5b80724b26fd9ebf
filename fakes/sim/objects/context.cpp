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

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>

namespace verbfault::sim {

Context::Context(Device& device) : device_(device) {
  handle_.owner = this;
  // A real descriptor, so that a program can pass a dup(2) of it to
  // ibv_import_device(3) (rdma-core's tests/test_shared_pd.py does).
  const int cmd_fd = memfd_create("verbfault-context", MFD_CLOEXEC);
  struct stat st {};
  if (cmd_fd >= 0 && fstat(cmd_fd, &st) == 0) {
    cmd_file_ = st.st_ino;
    cmd_dev_ = st.st_dev;
  }
  init(handle_.verbs, cmd_fd);
  fabric().contexts().push_back(this);
}

void Context::init(ContextStorage& storage, int cmd_fd) {
  verbs_context& vctx = storage.verbs;
  vctx.sz = sizeof(verbs_context);
  ibv_context& ctx = vctx.context;
  ctx.device = device_.verbs();
  ctx.cmd_fd = cmd_fd;
  ctx.async_fd = async_fd_.fd();
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  // verbs_get_ctx() recognises an extended context by this marker.
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

Context::~Context() {
  // Children before parents: QPs hold CQs, SRQs and PDs; CQs hold channels.
  Fabric& fabric = this->fabric();
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
  imported_mrs.clear();
  imported_pds.clear();
  for (auto& import : imports_) {
    if (import->verbs.verbs.context.cmd_fd >= 0) ::close(import->verbs.verbs.context.cmd_fd);
    pthread_mutex_destroy(&import->verbs.verbs.context.mutex);
  }
  if (handle_.verbs.verbs.context.cmd_fd >= 0) ::close(handle_.verbs.verbs.context.cmd_fd);
  pthread_mutex_destroy(&handle_.verbs.verbs.context.mutex);
}

Fabric& Context::fabric() {
  return device_.fabric();
}

bool Context::has_cmd_fd(int cmd_fd) const {
  if (cmd_file_ == 0 || open_ == 0) return false;
  struct stat st {};
  return fstat(cmd_fd, &st) == 0 && st.st_ino == cmd_file_ && st.st_dev == cmd_dev_;
}

ibv_context* Context::add_import(int cmd_fd) {
  auto import = std::make_unique<Handle<ContextStorage, Context>>();
  import->owner = this;
  init(import->verbs, cmd_fd);
  ++open_;
  imports_.push_back(std::move(import));
  return &imports_.back()->verbs.verbs.context;
}

bool Context::close() {
  return --open_ == 0;
}

Context* Context::from(ibv_context* c) {
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<uint8_t*>(c) -
                                                offsetof(verbs_context, context));
  return reinterpret_cast<Handle<ContextStorage, Context>*>(vctx)->owner;
}

void Context::raise(const ibv_async_event& event) {
  async_events_.push_back(event);
  async_fd_.set_ready(true);
  fabric().notify_waiters();
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

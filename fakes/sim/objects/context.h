// ibv_context: an open simulated device and the objects created on it.
#pragma once

#include "handle.h"
#include "readiness_fd.h"

#include <infiniband/verbs.h>

#include <sys/types.h>

#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace verbfault::sim {

class Device;
class Fabric;
class ProtectionDomain;
class MemoryRegion;
class MemoryWindow;
class AddressHandle;
class CompletionChannel;
class CompletionQueue;
class SharedReceiveQueue;
class QueuePair;

// Owns every object created on it: ibv_close_device(3) releases them all,
// as the kernel does for a closed uverbs file. Guarded by Fabric::mutex.
//
// Like a uverbs file it may be open through several ibv_contexts: the one
// ibv_open_device(3) made, and those ibv_import_device(3) made from a
// descriptor of its cmd_fd (a memfd standing for the file; its inode tells
// which context a descriptor is of). Its objects live until the last of
// them is closed.
class Context {
 public:
  explicit Context(Device& device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ibv_context* verbs() { return &handle_.verbs.verbs.context; }
  static Context* from(ibv_context* c);
  // Whether two ibv_contexts are of one context (an import of it, or it).
  static bool same(ibv_context* a, ibv_context* b) {
    return a != nullptr && b != nullptr && from(a) == from(b);
  }
  Device& device() { return device_; }
  // The fabric of its device: the Fabric::mutex that guards everything
  // created on this context, and its clock, registries and wire.
  Fabric& fabric();

  // Whether `cmd_fd` is a descriptor of this context's cmd_fd (same file).
  bool has_cmd_fd(int cmd_fd) const;
  // A further ibv_context on this context (ibv_import_device(3)); it owns
  // `cmd_fd` from now on. Its ops are the caller's to install.
  ibv_context* add_import(int cmd_fd);
  // One of its ibv_contexts is closed (its storage stays: objects point to
  // it); true when none is open any more (the context is then to be deleted).
  bool close();

  // Objects imported into one of its ibv_contexts (ibv_import_pd(3),
  // ibv_import_mr(3)): a second handle on an object of this context,
  // released by ibv_unimport_pd / _mr, or with the context.
  std::vector<std::unique_ptr<Handle<ibv_pd, ProtectionDomain>>> imported_pds;
  std::vector<std::unique_ptr<Handle<ibv_mr, MemoryRegion>>> imported_mrs;

  // Async events (ibv_get_async_event(3)); the fd is readable while one waits.
  void raise(const ibv_async_event& event);
  bool has_async_event() const { return !async_events_.empty(); }
  ibv_async_event take_async_event();
  bool async_nonblocking() const { return async_fd_.nonblocking(); }
  void discard_async_events_of(const void* object);

  template <class T>
  using Owned = std::unordered_map<T*, std::unique_ptr<T>>;
  Owned<ProtectionDomain> pds;
  Owned<MemoryRegion> mrs;
  Owned<MemoryWindow> mws;
  Owned<AddressHandle> ahs;
  Owned<CompletionChannel> channels;
  Owned<CompletionQueue> cqs;
  Owned<SharedReceiveQueue> srqs;
  Owned<QueuePair> qps;

 private:
  struct ContextStorage {
    verbs_context verbs;
  };
  void init(ContextStorage& storage, int cmd_fd);
  Handle<ContextStorage, Context> handle_;
  // The ibv_contexts ibv_import_device made; `open_` counts those not
  // closed, the first one included.
  std::vector<std::unique_ptr<Handle<ContextStorage, Context>>> imports_;
  int open_ = 1;
  ino_t cmd_file_ = 0;
  dev_t cmd_dev_ = 0;
  Device& device_;
  ReadinessFd async_fd_;
  std::deque<ibv_async_event> async_events_;
};

template <class T>
T* adopt(Context::Owned<T>& owned, std::unique_ptr<T> object) {
  T* raw = object.get();
  owned.emplace(raw, std::move(object));
  return raw;
}

}  // namespace verbfault::sim

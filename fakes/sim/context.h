// ibv_context: an open simulated device and the objects created on it.
#pragma once

#include "handle.h"
#include "readiness_fd.h"

#include <infiniband/verbs.h>

#include <deque>
#include <memory>
#include <unordered_map>

namespace verbfault::sim {

class Device;
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
class Context {
 public:
  explicit Context(Device& device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ibv_context* verbs() { return &handle_.verbs.verbs.context; }
  static Context* from(ibv_context* c);
  Device& device() { return device_; }

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
  Handle<ContextStorage, Context> handle_;
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

// The interposer's side of the exported device-level calls (the device
// list, open/close, queries) and of the Fabric controls (calls.h).
// Simulated devices are listed after the real ones (provider/devices.cpp).
#include "calls.h"

#include "conditions.h"
#include "thread_calls.h"
#include "verbs.h"

namespace verbfault::interposer::calls {

ibv_device** get_device_list(Run&, int* num_devices) {
  return provider::get_device_list(num_devices);
}

void free_device_list(Run&, ibv_device** list) {
  provider::free_device_list(list);
}

const char* get_device_name(Run&, ibv_device* device) {
  return provider::get_device_name(device);
}

__be64 get_device_guid(Run&, ibv_device* device) {
  return provider::get_device_guid(device);
}

int get_device_index(Run&, ibv_device* device) {
  return provider::get_device_index(device);
}

ibv_context* open_device(Run& run, ibv_device* device, const void* caller) {
  ibv_context* context = provider::open_device(device);
  // Every context the front door hands out is wrapped, simulated or real.
  if (context != nullptr) {
    interposer::opened(run, context, device->name);
    interposer::kept_by_library(run, context, caller);
    if (!provider::simulated(context)) thread_calls::real_device_opened();
  }
  return context;
}

// ibv_import_device(3): a context on a device opened elsewhere, wrapped as
// an opened one.
ibv_context* import_device(Run& run, int cmd_fd) {
  ibv_context* context = provider::import_device(cmd_fd);
  if (context != nullptr) interposer::opened(run, context, context->device->name);
  return context;
}

int close_device(Run& run, ibv_context* context) {
  interposer::unwrap_fd(run, context);
  int result = provider::close_device(context);
  interposer::closing(run, context, result);
  return result;
}

int read_sysfs_file(Run&, const char* dir, const char* file, char* buf, size_t size) {
  return provider::read_sysfs_file(dir, file, buf, size);
}

int query_device(Run&, ibv_context* context, ibv_device_attr* attr) {
  return provider::query_device(context, attr);
}

int query_port(Run& run, ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  int result = provider::query_port(context, port, attr);
  if (result == 0 && !provider::simulated(context))
    interposer::adjust_port_attr(run, context, port, reinterpret_cast<ibv_port_attr*>(attr));
  return result;
}

int query_gid(Run&, ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  return provider::query_gid(context, port, index, gid);
}

int query_gid_ex(Run&, ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                 uint32_t flags, size_t entry_size) {
  return provider::query_gid_ex(context, port, index, entry, flags, entry_size);
}

ssize_t query_gid_table(Run&, ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                        uint32_t flags, size_t entry_size) {
  return provider::query_gid_table(context, entries, max_entries, flags, entry_size);
}

int query_gid_type(Run&, ibv_context* context, uint8_t port, unsigned int index, int* type) {
  return provider::query_gid_type(context, port, index, type);
}

int query_pkey(Run&, ibv_context* context, uint8_t port, int index, __be16* pkey) {
  return provider::query_pkey(context, port, index, pkey);
}

int get_pkey_index(Run&, ibv_context* context, uint8_t port, __be16 pkey) {
  return provider::get_pkey_index(context, port, pkey);
}

int resolve_eth_l2_from_gid(Run&, ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                            uint16_t* vid) {
  return provider::resolve_eth_l2_from_gid(context, attr, eth_mac, vid);
}

ibv_pd* import_pd(Run& run, ibv_context* context, uint32_t pd_handle) {
  return created(run, provider::import_pd(context, pd_handle), ObjectKind::pd, context, "import_pd",
                 {{"handle", pd_handle}});
}

ibv_dm* import_dm(Run&, ibv_context* context, uint32_t dm_handle) {
  return provider::import_dm(context, dm_handle);
}

// The simulated fabric's conditions, for the public Fabric API: the
// provider layer applies them (cause level), as the engine's injections do.
#define VERBFAULT_FORWARD_CONDITION(name, params, args) \
  int name params {                                     \
    return provider::name args;                         \
  }
VERBFAULT_CONDITIONS(VERBFAULT_FORWARD_CONDITION)
#undef VERBFAULT_FORWARD_CONDITION

}  // namespace verbfault::interposer::calls

// Device-level calls of the provider double: the device list, the names,
// open/close and the queries, forwarded to the private simulator.
#include "double.h"

#include "verbfault/sim/provider.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace verbfault;

// ---- how many devices ----------------------------------------------------------
// Both copies of the simulator in the process (libverbfault.so's and this
// one) size themselves from VERBFAULT_SIM_DEVICES. This library is linked
// with -Wl,--wrap=getenv, so its copy's getenv calls land here: it reads
// VERBFAULT_DOUBLE_DEVICES instead (default 1), and every other variable
// as is. The front door's copy is not affected.
extern "C" char* __real_getenv(const char* name);

extern "C" char* __wrap_getenv(const char* name) {
  if (name == nullptr || std::strcmp(name, "VERBFAULT_SIM_DEVICES") != 0)
    return __real_getenv(name);
  static char fallback[] = "1";
  char* value = __real_getenv("VERBFAULT_DOUBLE_DEVICES");
  if (value == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || n < 0 || n > 16) {
    std::fprintf(stderr,
                 "verbfault provider double: VERBFAULT_DOUBLE_DEVICES='%s' is invalid: expected "
                 "an integer 0..16; using 1\n",
                 value);
    return fallback;
  }
  return value;
}

namespace verbfault::provider_double {

std::span<ibv_device* const> devices() {
  // The simulator names its devices vfsimN, like the front door's own: the
  // double's are renamed vfrealN in every name and path libibverbs shows,
  // so that nobody can take one for the other. The simulator finds its
  // devices by pointer (and its virtual sysfs by ibdev_path, renamed
  // consistently), never by name.
  static const std::span<ibv_device* const> list = [] {
    auto simulated = sim::devices();
    for (size_t i = 0; i < simulated.size(); ++i) {
      ibv_device* d = simulated[i];
      const std::string name = "vfreal" + std::to_string(i);
      std::snprintf(d->name, sizeof d->name, "%s", name.c_str());
      std::snprintf(d->dev_name, sizeof d->dev_name, "uverbs-%s", name.c_str());
      std::snprintf(d->dev_path, sizeof d->dev_path, "/sys/class/infiniband_verbs/uverbs-%s",
                    name.c_str());
      std::snprintf(d->ibdev_path, sizeof d->ibdev_path, "/sys/class/infiniband/%s", name.c_str());
    }
    return simulated;
  }();
  return list;
}

}  // namespace verbfault::provider_double

using provider_double::devices;

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  auto list = devices();
  auto** out = static_cast<ibv_device**>(std::calloc(list.size() + 1, sizeof(ibv_device*)));
  if (out == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < list.size(); ++i) out[i] = list[i];
  if (num_devices != nullptr) *num_devices = static_cast<int>(list.size());
  return out;
}

void ibv_free_device_list(ibv_device** list) {
  std::free(list);
}

const char* ibv_get_device_name(ibv_device* device) {
  return device->name;
}

__be64 ibv_get_device_guid(ibv_device* device) {
  return sim::device_guid(device);
}

int ibv_get_device_index(ibv_device* device) {
  return sim::get_device_index(device);
}

ibv_context* ibv_open_device(ibv_device* device) {
  devices();  // named before use
  if (!sim::owns(device)) {
    errno = ENODEV;
    return nullptr;
  }
  ibv_context* context = sim::open_device(device);
  if (context != nullptr) provider_double::context_opened(context);
  return context;
}

int ibv_close_device(ibv_context* context) {
  provider_double::context_closed(context);
  return sim::close_device(context);
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  // The virtual sysfs answers for the renamed paths; node_desc names the
  // device as the double does (the simulator's text would say vfsimN).
  for (ibv_device* device : devices()) {
    if (dir == nullptr || std::strcmp(device->ibdev_path, dir) != 0) continue;
    if (file == nullptr || std::strcmp(file, "node_desc") != 0 || size == 0)
      return sim::read_sysfs_file(dir, file, buf, size);
    const int n = std::snprintf(buf, size, "verbfault provider double %s", device->name);
    return std::min(n, static_cast<int>(size) - 1);
  }
  // Any other path: the file itself, as libibverbs reads it.
  const std::string path = std::string(dir) + "/" + file;
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr || size == 0) {
    if (f != nullptr) std::fclose(f);
    return -1;
  }
  const size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  size_t len = n;
  if (len > 0 && buf[len - 1] == '\n') --len;
  buf[len] = '\0';
  return static_cast<int>(len);
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  return sim::query_device(context, attr);
}

int ibv_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  return sim::query_port(context, port, reinterpret_cast<ibv_port_attr*>(attr));
}

int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  return sim::query_gid(context, port, index, gid);
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  return sim::query_gid_ex(context, port, index, entry, flags, entry_size);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  return sim::query_gid_table(context, entries, max_entries, flags, entry_size);
}

int ibv_query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  return sim::query_gid_type(context, port, index, type);
}

int ibv_query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  return sim::query_pkey(context, port, index, pkey);
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  return sim::get_pkey_index(context, port, pkey);
}

int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  // The port is InfiniBand: there is no Ethernet L2 address.
  (void)context;
  (void)attr;
  (void)eth_mac;
  (void)vid;
  return EINVAL;
}

ibv_context* ibv_import_device(int cmd_fd) {
  // No uverbs file behind any descriptor: nothing to import.
  (void)cmd_fd;
  errno = EOPNOTSUPP;
  return nullptr;
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  // Importing needs a shared kernel context; the double has none.
  (void)context;
  (void)pd_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  (void)context;
  (void)dm_handle;
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // extern "C"

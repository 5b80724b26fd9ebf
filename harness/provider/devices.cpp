// The device list and the device-level calls of the verb table whose
// routing is not the plain one (routing.cpp): simulated devices are listed
// after the real ones.
#include "real_libibverbs.h"
#include "verbfault/sim/provider.h"
#include "verbs.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace verbfault::provider {

namespace {

// Lists handed out by get_device_list -> the real list inside them, so
// that free_device_list releases both. Guarded by its own mutex: device
// lists are independent of the device model and of the interposer.
std::mutex lists_mutex;
std::unordered_map<ibv_device**, ibv_device**>& lists() {
  static auto* map = new std::unordered_map<ibv_device**, ibv_device**>();
  return *map;
}

}  // namespace

bool simulated(const ibv_device* device) {
  return sim::owns(device);
}

bool simulated(const ibv_context* context) {
  return sim::owns(context);
}

ibv_device** get_device_list(int* num_devices) {
  int saved_errno = errno;
  int real_count = 0;
  ibv_device** real_list = VERBFAULT_REAL(ibv_get_device_list, "IBVERBS_1.1")(&real_count);
  // Without RDMA in the kernel libibverbs fails with ENOSYS: the simulated
  // devices are still there.
  if (real_list == nullptr) real_count = 0;
  sim::rejoin_if_forked();  // a forked child's devices have its own addresses
  auto simulated_devices = sim::devices();
  const size_t total = static_cast<size_t>(real_count) + simulated_devices.size();
  auto** list = static_cast<ibv_device**>(std::calloc(total + 1, sizeof(ibv_device*)));
  if (list == nullptr) {
    if (real_list != nullptr) VERBFAULT_REAL(ibv_free_device_list, "IBVERBS_1.1")(real_list);
    errno = ENOMEM;
    return nullptr;
  }
  for (int i = 0; i < real_count; ++i) list[i] = real_list[i];
  for (size_t i = 0; i < simulated_devices.size(); ++i) list[real_count + i] = simulated_devices[i];
  {
    std::lock_guard guard(lists_mutex);
    lists()[list] = real_list;
  }
  if (num_devices != nullptr) *num_devices = static_cast<int>(total);
  // A failure of the real library is not a failure of the merged list.
  errno = real_list == nullptr ? 0 : saved_errno;
  return list;
}

void free_device_list(ibv_device** list) {
  ibv_device** real_list = nullptr;
  {
    std::lock_guard guard(lists_mutex);
    auto it = lists().find(list);
    if (it == lists().end()) {
      // Not one of ours: the real library's own list.
      VERBFAULT_REAL(ibv_free_device_list, "IBVERBS_1.1")(list);
      return;
    }
    real_list = it->second;
    lists().erase(it);
  }
  if (real_list != nullptr) VERBFAULT_REAL(ibv_free_device_list, "IBVERBS_1.1")(real_list);
  std::free(list);
}

const char* get_device_name(ibv_device* device) {
  if (simulated(device)) return device->name;
  return VERBFAULT_REAL(ibv_get_device_name, "IBVERBS_1.1")(device);
}

__be64 get_device_guid(ibv_device* device) {
  if (simulated(device)) {
    sim::rejoin_if_forked();
    return sim::device_guid(device);
  }
  return VERBFAULT_REAL(ibv_get_device_guid, "IBVERBS_1.1")(device);
}

int read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (sim::owns_sysfs_path(dir, file)) return sim::read_sysfs_file(dir, file, buf, size);
  return VERBFAULT_REAL(ibv_read_sysfs_file, "IBVERBS_1.0")(dir, file, buf, size);
}

int query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  if (simulated(context))
    return sim::query_port(context, port, reinterpret_cast<ibv_port_attr*>(attr));
  return VERBFAULT_REAL(ibv_query_port, "IBVERBS_1.1")(context, port, attr);
}

int resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                            uint16_t* vid) {
  // The simulated port is InfiniBand: there is no Ethernet L2 address.
  if (simulated(context)) return EINVAL;
  return VERBFAULT_REAL(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1")(context, attr, eth_mac, vid);
}

namespace {

// Whether a real uverbs device's character device is `rdev`: its class
// directory (ibv_device::dev_path, /sys/class/infiniband_verbs/uverbsN)
// holds "major:minor" in `dev`, which is what libibverbs compares.
bool real_device_has_cdev(dev_t rdev) {
  int count = 0;
  ibv_device** list = VERBFAULT_REAL(ibv_get_device_list, "IBVERBS_1.1")(&count);
  if (list == nullptr) return false;
  bool found = false;
  for (int i = 0; i < count && !found; ++i) {
    const std::string path = std::string(list[i]->dev_path) + "/dev";
    std::FILE* file = std::fopen(path.c_str(), "re");
    if (file == nullptr) continue;
    unsigned major_number = 0;
    unsigned minor_number = 0;
    found = std::fscanf(file, "%u:%u", &major_number, &minor_number) == 2 &&
            makedev(major_number, minor_number) == rdev;
    std::fclose(file);
  }
  VERBFAULT_REAL(ibv_free_device_list, "IBVERBS_1.1")(list);
  return found;
}

}  // namespace

// A descriptor of a simulated context's cmd_fd imports that context; one
// of a real uverbs device is libibverbs'. libibverbs' ibv_import_device
// looks the descriptor up in ibv_get_device_list() called through its PLT,
// that is in the merged list of this front door (real devices first), and
// reads private verbs_device fields of each entry until one matches: an
// entry of the simulated device has none of them. So only a descriptor of
// a real device reaches it, and the rest fails here as libibverbs fails it
// (rdma-core libibverbs/device.c): EINVAL for a descriptor that is not a
// character device, ENODEV for one of no RDMA device.
ibv_context* import_device(int cmd_fd) {
  if (sim::owns_cmd_fd(cmd_fd)) return sim::import_device(cmd_fd);
  struct stat status {};
  if (fstat(cmd_fd, &status) != 0 || !S_ISCHR(status.st_mode)) {
    errno = EINVAL;
    return nullptr;
  }
  if (!real_device_has_cdev(status.st_rdev)) {
    errno = ENODEV;
    return nullptr;
  }
  return VERBFAULT_REAL(ibv_import_device, "IBVERBS_1.10")(cmd_fd);
}

ibv_dm* import_dm(ibv_context* context, uint32_t dm_handle) {
  if (simulated(context)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return VERBFAULT_REAL(ibv_import_dm, "IBVERBS_1.13")(context, dm_handle);
}

}  // namespace verbfault::provider

// Exported device-level calls (the device list, open/close, queries): each
// forwards to the interposer (interposer/calls.h).
#include "exports.h"
#include "thread_calls.h"

using namespace verbfault;
namespace thread_calls = verbfault::interposer::thread_calls;

extern "C" {
// Exported by libibverbs but declared only in its private driver.h.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       int* type);

ibv_device** ibv_get_device_list(int* num_devices) {
  thread_calls::verbs_point();
  return interposer::calls::get_device_list(num_devices);
}

void ibv_free_device_list(ibv_device** list) {
  thread_calls::verbs_point();
  interposer::calls::free_device_list(list);
}

const char* ibv_get_device_name(ibv_device* device) {
  thread_calls::verbs_point();
  return interposer::calls::get_device_name(device);
}

__be64 ibv_get_device_guid(ibv_device* device) {
  thread_calls::verbs_point();
  return interposer::calls::get_device_guid(device);
}

int ibv_get_device_index(ibv_device* device) {
  thread_calls::verbs_point();
  return interposer::calls::get_device_index(device);
}

ibv_context* ibv_open_device(ibv_device* device) {
  thread_calls::verbs_point();
  return interposer::calls::open_device(device, __builtin_return_address(0));
}

ibv_context* ibv_import_device(int cmd_fd) {
  thread_calls::verbs_point();
  return interposer::calls::import_device(cmd_fd);
}

int ibv_close_device(ibv_context* context) {
  thread_calls::verbs_point();
  return interposer::calls::close_device(context);
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  thread_calls::verbs_point();
  return interposer::calls::read_sysfs_file(dir, file, buf, size);
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::query_device(context, attr);
}

int ibv_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  thread_calls::verbs_point();
  return interposer::calls::query_port(context, port, attr);
}

int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  thread_calls::verbs_point();
  return interposer::calls::query_gid(context, port, index, gid);
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  thread_calls::verbs_point();
  return interposer::calls::query_gid_ex(context, port, index, entry, flags, entry_size);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  thread_calls::verbs_point();
  return interposer::calls::query_gid_table(context, entries, max_entries, flags, entry_size);
}

int ibv_query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  thread_calls::verbs_point();
  return interposer::calls::query_gid_type(context, port, index, type);
}

int ibv_query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  thread_calls::verbs_point();
  return interposer::calls::query_pkey(context, port, index, pkey);
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  thread_calls::verbs_point();
  return interposer::calls::get_pkey_index(context, port, pkey);
}

int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  return interposer::calls::resolve_eth_l2_from_gid(context, attr, eth_mac, vid);
}

ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  thread_calls::verbs_point();
  return interposer::calls::import_pd(context, pd_handle);
}

ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  thread_calls::verbs_point();
  return interposer::calls::import_dm(context, dm_handle);
}

}  // extern "C"

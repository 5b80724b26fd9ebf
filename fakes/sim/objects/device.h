// A simulated HCA: one ibv_device, one port.
#pragma once

#include "device_profile.h"
#include "handle.h"

#include <infiniband/verbs.h>

#include <optional>
#include <string>
#include <vector>

namespace verbfault::sim {

class Fabric;

class Device {
 public:
  // The index-th device of member `member` of `fabric`, of the kind
  // `profile` describes; its addresses are the fabric's (fabric_address.h).
  Device(Fabric& fabric, int index, uint32_t member, DeviceProfile profile);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_device* verbs() { return &handle_.verbs; }
  // The fabric it is part of, which owns it: what everything created on
  // the device reaches the fabric through (its Fabric::mutex guards them).
  Fabric& fabric() const { return fabric_; }
  static Device* from(const ibv_device* d) { return owner_of<Device, ibv_device>(d); }

  // Its addresses (GUIDs, LID, GIDs) become member `member`'s: a forked
  // child that joined the fabric as a new member (Fabric::rejoin_after_fork).
  void readdress(uint32_t member);

  int index() const { return index_; }
  // The index libibverbs reports (ibv_get_device_index(3)) and the
  // connection manager names the device by: far above any kernel index,
  // so that it never collides with a real device's.
  int kernel_index() const { return 0x10000 + index_; }
  const std::string& name() const { return name_; }
  const DeviceProfile& profile() const { return profile_; }
  // The port's live attributes (state and LID may change at run time).
  // Guarded by Fabric::mutex.
  ibv_port_attr& port() { return port_; }
  const ibv_port_attr& port() const { return port_; }
  uint16_t lid() const { return port_.lid; }
  bool ethernet() const { return profile_.ethernet(); }
  // The GID table (the profile's entries with this device's addresses):
  // InfiniBand GID 0 is the link-local prefix and the port GUID (IBA
  // 4.1.1); a RoCE port lists its netdev's addresses (IBTA A17.4.5). An
  // index past the profile's entries is empty (all zero).
  ibv_gid gid(int index) const;
  ibv_gid_type gid_type(int index) const;
  bool gid_empty(int index) const;
  // The index of `gid` in the table (of type `type` if given), or -1.
  int find_gid(const ibv_gid& gid, std::optional<ibv_gid_type> type = std::nullopt) const;
  // A GID change (fabric::set_gid; `index` below gid_tbl_len): written into
  // the table, which grows with empty entries of the port's type.
  void set_gid(int index, const ibv_gid& gid);
  // Whether an address vector can be used on this port (ibv_create_ah(3),
  // ibv_modify_qp(3) IBV_QP_AV): port 1, and a source GID index in the
  // table. A RoCE port needs the GRH (is_global): its packets are routed
  // by GID only (IBTA A17.4; the kernel's rdma_check_ah_attr fails a RoCE
  // AH without IB_AH_GRH with EINVAL), from a GID the table holds.
  bool valid_address(const ibv_ah_attr& ah) const;

  // After a fatal error (IBV_EVENT_DEVICE_FATAL) every verb but destroy,
  // poll and event handling fails with EIO. Guarded by Fabric::mutex.
  bool fatal() const { return fatal_; }
  void set_fatal() { fatal_ = true; }
  // A fatal device is reset once its last context is closed.
  void recover() { fatal_ = false; }

 private:
  Handle<ibv_device, Device> handle_;
  Fabric& fabric_;
  int index_;
  std::string name_;
  DeviceProfile profile_;
  ibv_port_attr port_;
  struct GidEntry {
    ibv_gid gid{};
    ibv_gid_type type = IBV_GID_TYPE_IB;
  };
  std::vector<GidEntry> gids_;
  bool fatal_ = false;
};

}  // namespace verbfault::sim

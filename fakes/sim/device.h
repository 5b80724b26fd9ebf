// A simulated HCA: one ibv_device, one port.
#pragma once

#include "device_profile.h"
#include "handle.h"

#include <infiniband/verbs.h>

#include <map>
#include <string>

namespace verbfault::sim {

class Device {
 public:
  // The index-th device of member `member` of the local fabric.
  Device(int index, uint32_t member);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_device* verbs() { return &handle_.verbs; }
  static Device* from(const ibv_device* d) { return owner_of<Device, ibv_device>(d); }

  int index() const { return index_; }
  const std::string& name() const { return name_; }
  const DeviceProfile& profile() const { return profile_; }
  // The port's live attributes (state and LID may change at run time).
  // Guarded by Fabric::mutex.
  ibv_port_attr& port() { return port_; }
  uint16_t lid() const { return port_.lid; }
  // GID index 0: the link-local subnet prefix and the port GUID (IBA 4.1.1).
  ibv_gid gid(int index) const;
  void set_gid(int index, const ibv_gid& gid) { gid_overrides_[index] = gid; }

  // After a fatal error (IBV_EVENT_DEVICE_FATAL) every verb but destroy,
  // poll and event handling fails with EIO. Guarded by Fabric::mutex.
  bool fatal() const { return fatal_; }
  void set_fatal() { fatal_ = true; }
  // A fatal device is reset once its last context is closed.
  void recover() { fatal_ = false; }

 private:
  Handle<ibv_device, Device> handle_;
  int index_;
  std::string name_;
  DeviceProfile profile_;
  ibv_port_attr port_;
  std::map<int, ibv_gid> gid_overrides_;
  bool fatal_ = false;
};

}  // namespace verbfault::sim

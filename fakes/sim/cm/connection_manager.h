// The simulated fabric's connection manager: the CM files a process opened
// and the ids made through them, in the kernel's terms
// (drivers/infiniband/core/ucma.c, cma.c). Every member is guarded by
// Fabric::mutex, the device's one lock: CM commands are device calls.
#pragma once

#include "readiness_fd.h"

// glibc's netinet/in.h before the kernel's headers: it tells linux/in6.h
// (included by rdma_user_cm.h) that the C library defines in6_addr.
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace verbfault::sim::cm {

// enum rdma_cm_state (cma_priv.h): what an id may do next.
enum class IdState {
  kIdle,
  kAddrQuery,
  kAddrResolved,
  kRouteQuery,
  kRouteResolved,
  kConnect,
  kDisconnect,
  kAddrBound,
  kListen,
  kDeviceRemoval,
  kDestroying,
};

// Where an id is bound: the simulated device and port its address belongs
// to (none for the any address), and the address itself with its port.
struct Binding {
  sockaddr_storage address{};
  std::optional<int> device;  // index in Fabric::devices()
  uint8_t port = 0;
};

struct CmId {
  uint32_t handle = 0;
  uint64_t uid = 0;  // the application's (librdmacm's id) for its events
  int file = -1;     // the CM file (its fd) whose events the id's are
  uint16_t port_space = 0;
  uint8_t qp_type = 0;
  IdState state = IdState::kIdle;
  Binding source;
  sockaddr_storage destination{};
  uint32_t events_reported = 0;
  uint32_t backlog = 0;
  // RDMA_OPTION_ID_*.
  std::optional<uint8_t> tos;
  bool reuse_address = false;
  std::optional<bool> af_only;
  std::optional<uint8_t> ack_timeout;
};

// One event waiting in a file (rdma_ucm_event_resp without the handle,
// which GET_EVENT fills in).
struct PendingEvent {
  uint32_t id = 0;
  rdma_ucm_event_resp response{};
};

struct CmFile {
  ReadinessFd readiness;
  std::deque<PendingEvent> events;
};

class ConnectionManager {
 public:
  static ConnectionManager& get();

  int open_file(int flags);
  bool close_file(int fd);
  // The command in `buffer` (header and input); 0 or an errno.
  int execute(int fd, const uint8_t* buffer, std::size_t length,
              std::unique_lock<std::mutex>& guard);

 private:
  int create_id(int fd, const rdma_ucm_create_id& command, uint16_t out);
  int destroy_id(int fd, const rdma_ucm_destroy_id& command, uint16_t out);
  int bind(int fd, uint32_t id, const sockaddr* address, std::size_t size);
  int listen(int fd, const rdma_ucm_listen& command);
  int query(int fd, const rdma_ucm_query& command, uint16_t out);
  int query_route(int fd, const rdma_ucm_query& command, uint16_t out);
  int set_option(int fd, const rdma_ucm_set_option& command);
  int get_event(int fd, const rdma_ucm_get_event& command, uint16_t out,
                std::unique_lock<std::mutex>& guard);

  // The id `handle` of file `fd`: ENOENT when none, EINVAL when another
  // file's (ucma_get_ctx).
  CmId* find(int fd, uint32_t handle, int& error);
  // Why another id of the port space that holds `address`'s port excludes
  // this bind (cma_check_port): EADDRNOTAVAIL when either address is the
  // wildcard, EADDRINUSE when they are the same; 0 when none does.
  // `reuse`: the binding id's REUSEADDR counts.
  int port_conflict(const CmId& binding, const sockaddr_storage& address, bool reuse) const;
  static bool af_only(const CmId& id, const sockaddr_storage& address);
  uint16_t ephemeral_port(uint16_t port_space) const;

  std::map<int, std::unique_ptr<CmFile>> files_;
  std::map<uint32_t, CmId> ids_;
  uint32_t next_handle_ = 0;
};

}  // namespace verbfault::sim::cm

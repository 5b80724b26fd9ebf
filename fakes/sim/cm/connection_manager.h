// The simulated fabric's connection manager: the CM files a process opened
// and the ids made through them, in the kernel's terms
// (drivers/infiniband/core/ucma.c, cma.c, cm.c). Every member is guarded by
// Fabric::mutex, the device's one lock: CM commands are device calls, and
// the messages of other members' managers are handled under it by the
// service thread.
#pragma once

#include "cm_messages.h"
#include "fabric_address.h"
#include "listening_socket.h"
#include "readiness_fd.h"
#include "verbfault/sim/cm.h"

// glibc's netinet/in.h before the kernel's headers: it tells linux/in6.h
// (included by rdma_user_cm.h) that the C library defines in6_addr.
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace verbfault::sim {
class Device;
class Fabric;
}  // namespace verbfault::sim

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

// The id's IB CM state (enum ib_cm_state, cm.c), reduced to those a
// userspace id passes through: kNone while the id has no IB CM id (before
// CONNECT, or after a reject reset it).
enum class ConnectionState {
  kNone,
  kReqSent,
  kReqReceived,
  kRepSent,
  kRepReceived,
  kEstablished,
  kDreqSent,
  kDreqReceived,
  kTimewait,
  kSidrReqSent,
};

// The events of the ucma ABI (enum rdma_cm_event_type, the numbers
// rdma_ucm_event_resp.event carries).
enum class CmEvent : uint32_t {
  kAddrResolved = 0,
  kAddrError = 1,
  kRouteResolved = 2,
  kRouteError = 3,
  kConnectRequest = 4,
  kConnectResponse = 5,
  kConnectError = 6,
  kUnreachable = 7,
  kRejected = 8,
  kEstablished = 9,
  kDisconnected = 10,
  kDeviceRemoval = 11,
  kMulticastJoin = 12,
  kMulticastError = 13,
  kAddrChange = 14,
  kTimewaitExit = 15,
};

// Where an id is bound: the simulated device and port its address belongs
// to (none for the any and loopback addresses), and the address itself
// with its port.
struct Binding {
  sockaddr_storage address{};
  std::optional<int> device;  // index in Fabric::devices()
  uint8_t port = 0;
};

// The path a resolved route holds (ib_sa_path_rec reduced): from the id's
// port to the node its destination resolved to.
struct Path {
  FabricNode target;
  uint16_t dlid = 0;
  ibv_gid dgid{};
  uint8_t mtu = 0;  // enum ibv_mtu
  uint8_t hop_limit = 0;
  uint8_t packet_life_time = 0;

  // The QP's local ACK timeout (IBA 9.7.6.1.3): twice the packet lifetime
  // plus the HCA's ACK delay (cm_ack_timeout), 5 bits.
  uint8_t ack_timeout() const { return static_cast<uint8_t>(std::min(31, packet_life_time + 1)); }
};

struct CmId {
  uint32_t handle = 0;
  // The application's (librdmacm's id) for its events; 0 for a child of a
  // listener until it is accepted: its events are dropped (ucma.c).
  uint64_t uid = 0;
  int file = -1;  // the CM file (its fd) whose events the id's are
  uint16_t port_space = 0;
  uint8_t qp_type = 0;
  IdState state = IdState::kIdle;
  Binding source;
  sockaddr_storage destination{};
  // The starting PSN of the id's receive queue (a kernel id's seq_num):
  // the peer sends from it, and INIT_QP_ATTR(RTR) gives it as rq_psn.
  uint32_t seq_num = 0;
  std::optional<FabricNode> target;  // what the destination resolved to
  std::optional<Path> path;          // once the route is resolved
  uint32_t events_reported = 0;
  uint32_t backlog = 0;    // a listener's: CONNECT_REQUESTs it may still queue
  bool published = false;  // a listener the other members see (publish_listener)
  // RDMA_OPTION_ID_*.
  std::optional<uint8_t> tos;
  bool reuse_address = false;
  std::optional<bool> af_only;
  std::optional<uint8_t> ack_timeout;

  // The connection (the IB CM id's part): `cm_id` once the id has one
  // (from CONNECT, or made by a request), which a reject resets but keeps.
  bool cm_id = false;
  ConnectionState connection = ConnectionState::kNone;
  std::optional<uint32_t> listener;  // a child's, until its request is read
  MessageNode peer;                  // the other side's node...
  uint32_t peer_id = 0;              // ...and its id there
  uint32_t qp_num = 0;               // the QP this id connects (from CONNECT/ACCEPT)
  uint32_t remote_qpn = 0;
  uint32_t remote_psn = 0;  // the peer's starting PSN: this side's sq_psn
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t retry_count = 0;
  uint8_t rnr_retry_count = 0;
  uint32_t remote_qkey = 0;  // UD: from the SIDR REP

  FabricNode peer_node() const { return FabricNode{peer.member, peer.device}; }
};

// One event waiting in a file (rdma_ucm_event_resp). `charged`: the id
// whose events_reported it counts to when read (a CONNECT_REQUEST's is the
// listener's, its `response.id` the new child's).
struct PendingEvent {
  uint32_t charged = 0;
  // A multicast join's event (MULTICAST_JOIN, MULTICAST_ERROR): reading it
  // counts to that join too (ucma_get_event: uevent->mc), besides the id.
  std::optional<uint32_t> multicast;
  bool connect_request = false;
  bool delayed = false;  // put back by delay_event: not delayed twice
  rdma_ucm_event_resp response{};
};

// A file's events, in the order they came; its eventfd is readable while
// there are any. Those another member's messages made are readable at once,
// as a CQ's channel fires at once for a held delivery (delivery.h): a
// program may wait for them in poll(2) on the file, outside the device.
struct CmFile {
  ReadinessFd readiness;
  std::deque<PendingEvent> events;
  std::optional<PendingEvent> last_read;  // what GET_EVENT returned last
  void update_readiness() { readiness.set_ready(!events.empty()); }
};

// The rdma_cm of one fabric (Fabric::connection_manager, which owns it):
// everything here runs under the fabric's mutex.
class ConnectionManager {
 public:
  explicit ConnectionManager(Fabric& fabric) : fabric_(fabric) {}
  ConnectionManager(const ConnectionManager&) = delete;
  ConnectionManager& operator=(const ConnectionManager&) = delete;

  int open_file(int flags);
  bool close_file(int fd);
  // The command in `buffer` (header and input); 0 or an errno. `fault`:
  // the network failure this command meets (verbfault/sim/cm.h).
  int execute(int fd, const uint8_t* buffer, std::size_t length,
              std::unique_lock<std::mutex>& guard, Fault fault = Fault::kNone);
  // The last event GET_EVENT read for id `handle` of `fd` never happened.
  bool withdraw_event(int fd, uint32_t handle);
  // The last event GET_EVENT read on `fd` comes again `delay_ns` later
  // (verbfault/sim/cm.h); whether that event was such a one.
  bool delay_event(int fd, uint64_t delay_ns);
  bool event_was_delayed(int fd) const;
  // RoCE ids and their neighbours (verbfault/sim/cm.h).
  bool on_ethernet(int fd, uint32_t handle);
  bool neighbour_changed(int fd, uint32_t handle);
  bool device_removed(int fd, uint32_t handle);
  bool address_changed(int fd, uint32_t handle);
  // The ids of file `fd` and their states (verbfault/sim/cm.h).
  std::vector<std::pair<unsigned, std::string>> id_states(int fd) const;
  // The peer of id `handle` is gone (verbfault/sim/cm.h).
  bool peer_gone(int fd, uint32_t handle);
  // A message of another member's manager (or of this one's).
  void receive(const Message& message);
  // A member is gone: its kernel destroyed its ids, as at the close of
  // their files (what a peer's connection sees of it).
  void member_gone(uint32_t member);
  // Whether another member may still send this one a message (an id
  // connecting or connected to another member): a wait in the device
  // waits for the fabric (fabric_wait.h).
  bool expects_messages() const;
  // The IB CM's timewait (IBA 12.9.8.2): an id that left its connection
  // waits before its QP number may be reused, then gets TIMEWAIT_EXIT. On
  // the virtual clock (Fabric::advance_clock): the earliest deadline, and
  // what expires at `now`.
  std::optional<uint64_t> next_deadline() const;
  void expire(uint64_t now);

 private:
  Fabric& fabric_;
  int execute_command(int fd, const uint8_t* buffer, std::size_t length,
                      std::unique_lock<std::mutex>& guard);
  // The ids bound to the device (and port, when given) of id `handle`
  // that can still hear of it: not being destroyed, not removed with their
  // device (cma_work_handler drops events for those). Empty: no such id,
  // or bound to no device.
  std::vector<CmId*> ids_bound_beside(int fd, uint32_t handle, bool same_port);
  // Commands (cm_*.cpp), each after ucma.c's handler of the same name.
  int create_id(int fd, const rdma_ucm_create_id& command, uint16_t out);
  int destroy_id(int fd, const rdma_ucm_destroy_id& command, uint16_t out);
  int bind(int fd, uint32_t id, const sockaddr* address, std::size_t size);
  int listen(int fd, const rdma_ucm_listen& command);
  int resolve(int fd, uint32_t id, const sockaddr* source, const sockaddr* destination,
              uint32_t timeout_ms);
  int resolve_route(int fd, const rdma_ucm_resolve_route& command);
  int query(int fd, const rdma_ucm_query& command, uint16_t out);
  int query_route(int fd, const rdma_ucm_query& command, uint16_t out);
  int set_option(int fd, const rdma_ucm_set_option& command);
  int connect(int fd, const rdma_ucm_connect& command);
  int accept(int fd, const rdma_ucm_accept& command);
  int reject(int fd, const rdma_ucm_reject& command);
  int disconnect(int fd, const rdma_ucm_disconnect& command);
  int init_qp_attr(int fd, const rdma_ucm_init_qp_attr& command, uint16_t out);
  int notify(int fd, const rdma_ucm_notify& command);
  int migrate_id(int fd, const rdma_ucm_migrate_id& command);
  int get_event(int fd, const rdma_ucm_get_event& command, uint16_t out,
                std::unique_lock<std::mutex>& guard);
  // Multicast (cm_multicast.cpp, after ucma_process_join and
  // ucma_leave_multicast).
  int join_multicast(int fd, const rdma_ucm_join_mcast& command, uint16_t out);
  int leave_multicast(int fd, const rdma_ucm_destroy_id& command, uint16_t out);
  // The joins of id `handle` end with it (ucma_destroy_private_ctx).
  void forget_multicasts(uint32_t handle);
  // A read of `event` counts (step +1) to its id's events_reported and, for
  // a join's event, to the join's; step -1 undoes a read (delay_event).
  void count_read(const PendingEvent& event, int step);

  // The id `handle` of file `fd`: ENOENT when none, EINVAL when another
  // file's (ucma_get_ctx).
  CmId* find(int fd, uint32_t handle, int& error);
  // The same, and EINVAL when the id has no device (ucma_get_ctx_dev).
  CmId* find_with_device(int fd, uint32_t handle, int& error);
  // Why another id of the port space that holds `address`'s port excludes
  // this bind (cma_check_port): EADDRNOTAVAIL when either address is the
  // wildcard, EADDRINUSE when they are the same; 0 when none does.
  // `reuse`: the binding id's REUSEADDR counts.
  int port_conflict(const CmId& binding, const sockaddr_storage& address, bool reuse) const;
  static bool af_only(const CmId& id, const sockaddr_storage& address);
  uint16_t ephemeral_port(uint16_t port_space) const;
  uint32_t new_handle();
  // A kernel id's seq_num is 24 random bits (__rdma_create_id); here a
  // function of the member and the handle, so that a run repeats.
  static uint32_t seq_num_for(uint32_t member, uint32_t handle);

  // This member's device `index` (an id's source.device).
  const Device& device_at(int index) const;
  // The path from `id`'s port on `port` to `target` (its LID and GID),
  // at most `mtu`: the hop limit and packet lifetime of this fabric's
  // routes (cm_resolution.cpp).
  static Path path_to(const Device& port, const CmId& id, const FabricNode& target, uint16_t dlid,
                      const ibv_gid& dgid, uint8_t mtu);
  // Before a request leaves: an id resolved to an address of this host
  // goes to the member listening on it now, its path remade to that
  // member (cm_resolution.cpp).
  void retarget_to_listener(CmId& id);
  // This member's node for device `device` (lid, gid).
  MessageNode own_node(int device) const;
  // Queues an event for `id` on its file (dropped when the id has no uid).
  void report(CmId& id, CmEvent event, int status, const rdma_ucm_conn_param* conn = nullptr,
              const rdma_ucm_ud_param* ud = nullptr);
  // Queues `event` on `file`, readable at once, and wakes its waiters.
  void push_event(CmFile& file, const PendingEvent& event);
  // Hands a message to the manager of `message.target.member`.
  void send(const Message& message);
  // A message to the peer of `id`'s connection, of `kind`.
  Message reply_to(const CmId& id, MessageKind kind) const;
  // The answer a connect that meets `fault` (kUnreachable, kReject) gets
  // instead of the passive side's: from the peer's node, for `request`'s id.
  static Message connect_fault_answer(const Message& request, Fault fault);
  // What the kernel's destroy of the IB CM id sends the peer (cm_destroy_id).
  void leave_connection(CmId& id);
  // The connection of `id` ends here: its timewait starts.
  void enter_timewait(CmId& id);
  // Destroys an id: its connection left, its pending events dropped, the
  // children of a listener whose requests were not read destroyed too.
  void destroy(uint32_t handle);

  // The id of this member a message after the REQ is for: by its handle
  // when the sender knew it, else by the sender's own id (a REJ from an
  // active side that gave up before it heard of the passive's id).
  CmId* connection_of(const Message& message);
  void on_request(const Message& message);
  void on_reply(CmId& id, const Message& message);
  void on_ready_to_use(CmId& id);
  void on_reject(CmId& id, const Message& message);
  void on_disconnect_request(CmId& id);
  void on_disconnect_reply(CmId& id);
  void on_unreachable(CmId& id);
  void on_sidr_request(const Message& message);
  void on_sidr_reply(CmId& id, const Message& message);
  // The child id a request to `listener` makes on `device`, in ids_.
  CmId& make_child(const CmId& listener, const Message& message, int device);
  // Its CONNECT_REQUEST event (the parameters are the caller's).
  static PendingEvent connect_request(CmId& listener, const CmId& child);
  // The listener of this member that a request to (port space, port,
  // destination) on `device` reaches (cma_find_listener).
  CmId* listener_for(uint16_t port_space, uint16_t port, const sockaddr_storage& destination,
                     int device);
  // The member with a listener that a request for (port space, port) to
  // a loopback or wildcard `destination` reaches: the fabric is one host,
  // so 127.0.0.1 reaches a listener of any process on it. nullopt: none.
  std::optional<uint32_t> listening_member(uint16_t port_space, uint16_t port,
                                           const sockaddr_storage& destination);
  // Says (or withdraws) in the fabric's status table that `id` listens on
  // the wildcard or loopback, for the other members' loopback addresses.
  void publish_listener(CmId& id, bool listening);
  // Messages of this member to itself, handled once the command that sent
  // them is done (the kernel's handlers run after the sender's call too).
  void deliver_local();

  std::map<int, std::unique_ptr<CmFile>> files_;
  std::map<uint32_t, CmId> ids_;
  std::map<uint32_t, ListeningSocket> listening_;  // of the listeners in ids_
  std::map<uint32_t, uint64_t> timewait_;          // id -> when its timewait ends (ns)
  // A multicast group an id joined (struct ucma_multicast): its own
  // handle space (ucma's multicast_table), its uid librdmacm's cma_multicast.
  struct Multicast {
    uint32_t id = 0;  // the CmId's handle
    uint64_t uid = 0;
    sockaddr_storage address{};
    uint32_t events_reported = 0;
    // A full member hears the group: it shows the system a listening
    // socket, as a listener does, so that `verbfault run` starts a sender
    // after its receiver joined.
    ListeningSocket shown;
  };
  std::map<uint32_t, Multicast> multicasts_;
  // Events held up on the way (delay_event): when each reaches its file
  // (ns, virtual), in the order they were held.
  struct DelayedEvent {
    int file = -1;
    PendingEvent event;
  };
  std::multimap<uint64_t, DelayedEvent> delayed_;
  static constexpr uint32_t kUnknownId = ~uint32_t{0};
  std::deque<Message> local_;
  bool delivering_ = false;
  // The fault the command being executed meets (execute sets it for the
  // command's length): read by resolve, resolve_route and connect.
  Fault fault_ = Fault::kNone;
};

}  // namespace verbfault::sim::cm

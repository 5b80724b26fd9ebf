// The simulated RDMA provider's entry points.
//
// The front door (harness/frontdoor) calls these for every verbs call whose
// object belongs to a simulated device; they have the exact signatures and
// return conventions of the libibverbs calls they implement (see the man
// page of each ibv_* call). Nothing else in the process reaches the device
// model: this header is the contract between the two layers.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::sim {

// ---- diagnostics -----------------------------------------------------------
// What the simulated device noticed instead of hanging or crashing (e.g.
// ibv_destroy_cq with unacknowledged events), in the order it happened, for
// the trace and the reports.
struct Diagnostic {
  std::string kind;     // stable id, e.g. "destroy_cq.unacked_events"
  std::string object;   // stable object name, e.g. "cq#2"
  std::string message;  // the one line printed on stderr
};
std::vector<Diagnostic> diagnostics();

// ---- freedoms -------------------------------------------------------------
// Where the verbs leave a choice to the provider (how many completions a
// poll returns, the order across work queues of completions entering a CQ
// together, an extra event when arming a non-empty CQ), the device draws it
// from `seed`; with std::nullopt (the default) it takes the canonical
// choice. The harness sets it from the run's seed (sim/freedoms.h).
void set_freedom_seed(std::optional<std::uint64_t> seed);

// ---- observation (for the harness's runtime checks) -------------------------
// How many completions `cq` holds (0 for a CQ of another provider).
std::size_t cq_depth(ibv_cq* cq);
// Whether a completion event of `cq` waits in its channel, not yet taken.
bool cq_event_pending(ibv_cq* cq);
// Whether the device has work scheduled on its virtual clock (a retry) that
// can still produce completions or events without any further verbs call.
bool work_pending();
// Threads the device runs itself (the local fabric's service thread, the
// HCA of this process): not the application's.
int device_threads();
// Moves the virtual clock to the next retry deadline and runs the retries
// due then (what an empty poll does); false when none is pending. Asked by
// the thread scheduler when every application thread waits, those blocked
// on fds on `fds`: with peers on the fabric, the process counts as waiting
// only while none of them is readable (true at once when one is: its
// thread goes first).
bool advance_clock(std::span<const int> fds = {});
// Whether another process is (or is still to be) on this process's local
// fabric: then the device's channels may become readable with no thread of
// this process acting (a frame arrives), as a real device's do.
bool shares_fabric();
// Whether a thread of this process waits in the device for another process
// of the local fabric (sim/fabric/fabric_wait.h; a wait bounded by its own grace
// period): the thread scheduler's watchdog leaves it alone. Lock-free.
bool waiting_for_another_process();
// The harness's thread scheduler says every application thread waits, and
// only for something from outside the process (a socket, a listening
// socket in accept): `true` marks the process waiting in its device for
// the other members' quiescence (sim/fabric/fabric_wait.h), as a thread waiting
// in the device does, until its next verbs call or frame or `false`. A
// peer waiting for it then sees the fabric quiescent instead of giving up
// after the grace period on the wall clock (a peer blocked in recv(2) on
// the socket this process is about to write). Only while none of `fds`
// (what those threads wait on) is readable, looked at again after every
// frame (sim/fabric/fabric.h, Fabric::begin_outside): a peer that wrote to one
// before it waits asks for that look before it takes the fabric for
// quiescent.
void idle_outside(bool idle, std::span<const int> fds = {});
// Whether the calling thread may block in the device waiting for another
// process of the local fabric (sim/fabric/fabric_wait.h): the harness says no
// while another application thread could run. Unset: yes.
void set_wait_permission(bool (*may_wait)());
// Whether another thread of the application could still acknowledge an
// event (it runs, or may run again: UCX's async thread acknowledges
// QP_LAST_WQE_REACHED after the main thread has begun the destroy): then
// a destroy with unacknowledged events waits for them, as libibverbs does,
// instead of failing. The harness answers; unset: no other thread.
void set_ack_possible(bool (*others_may_ack)());
// Where the wall clock decided something in the device (sim/
// timing_notes.h): whether notes wait (cheap), and taking them.
bool timing_notes_pending();
std::vector<std::string> take_timing_notes();

// ---- devices -------------------------------------------------------------
// The simulated devices (vfsim0, vfsim1, ...), created once per process from
// VERBFAULT_SIM_DEVICES (default 1). An invalid value is reported on stderr
// and the default is used.
std::span<ibv_device* const> devices();
// In a child made by fork(2) of a fabric member: joins the fabric as a new
// member now, before the child reads its devices' addresses (its device
// list, GUIDs, sysfs files) or opens one (sim/fabric/fabric.h,
// Fabric::rejoin_after_fork); nothing otherwise. Not under the device lock.
void rejoin_if_forked();
bool owns(const ibv_device* device);
bool owns(const ibv_context* context);
// Node GUID in network byte order, as ibv_get_device_guid(3) returns it.
__be64 device_guid(const ibv_device* device);
int get_device_index(const ibv_device* device);
// Contents of a virtual sysfs attribute of a simulated device's ibdev_path
// (e.g. "node_desc", "fw_ver"), or of a file the simulated devices serve
// below the sysfs root ("/sys" and "class/misc/rdma_cm/abi_version", which
// librdmacm reads); returns bytes written or -1 with errno.
int read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
bool owns_sysfs_path(const char* dir, const char* file);

// ---- the devices as the system shows them ----------------------------------
// What the kernel would show of the simulated devices in sysfs and /dev
// (sim/system/system_files.h): /sys/class/infiniband/<dev>/..., the uverbs class
// /sys/class/infiniband_verbs/..., their device directories under
// /sys/devices/virtual/, and /dev/infiniband/uverbsN.
enum class SystemNodeKind { kAbsent, kDirectory, kFile, kSymlink, kCharDevice };
struct SystemNode {
  SystemNodeKind kind = SystemNodeKind::kAbsent;
  std::string text;    // a file's contents, a symlink's target
  int read_error = 0;  // a file whose read fails with this errno, as the
                       // kernel's attributes of an empty GID entry do
  unsigned major = 0;  // a character device's number
  unsigned minor = 0;
  std::vector<std::string> entries;  // a directory's names, sorted, no . and ..
  // The character device is the connection manager's (sim/cm.h): opening
  // it opens a CM file.
  bool connection_manager = false;
};
// `path` absolute and normalized (no "//", ".", ".."); symlinks in it are
// followed but the last one (what lstat(2) sees). kAbsent: not a path the
// simulated devices add to the system.
SystemNode system_node(std::string_view path);
// Whether `path` (absolute, normalized) lies where the simulated devices
// add to the system (one of sim/system/system_files.h's directories or below):
// cheap, no lock; a path outside is never served.
bool system_path_prefix(std::string_view path);

// ---- the network interfaces behind the ports --------------------------------
// Each simulated port has an IP interface, as rxe's port has its netdev and
// an InfiniBand port its IPoIB interface: librdmacm users find RDMA ports by
// their addresses (libfabric's verbs provider walks getifaddrs(3) and binds
// an rdma_cm id to each address). Named vfeth<N> (RoCE) or vfib<N>
// (InfiniBand) after the device's index; its IPv4 address is the one the
// connection manager maps to the port (198.18.<member>.<N+1>/16).
struct NetworkInterface {
  std::string name;
  unsigned index = 0;     // the interface index (if_nametoindex(3))
  bool ethernet = false;  // ARPHRD_ETHER; else ARPHRD_INFINIBAND
  bool running = false;   // the port is ACTIVE (IFF_RUNNING, IFF_LOWER_UP)
  uint32_t ipv4 = 0;      // host byte order
  unsigned prefix_length = 0;
  unsigned mtu = 0;
  std::array<uint8_t, 20> hardware_address{};
  std::size_t hardware_length = 0;  // 6 (MAC) or 20 (IPoIB)
};
// This process's, in device order; empty without simulated devices.
std::vector<NetworkInterface> network_interfaces();

ibv_context* open_device(ibv_device* device);
int close_device(ibv_context* context);
// ibv_import_device(3): whether `cmd_fd` is (a descriptor of) a simulated
// context's cmd_fd, and a further ibv_context on that context, which owns
// `cmd_fd` from then on (nullptr, errno EOPNOTSUPP: not one of ours).
bool owns_cmd_fd(int cmd_fd);
ibv_context* import_device(int cmd_fd);
int query_device(ibv_context* context, ibv_device_attr* attr);
int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr);
int query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
int query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                 uint32_t flags, size_t entry_size);
ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                        uint32_t flags, size_t entry_size);
int query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type);
int query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey);
int get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey);

// ---- resources -----------------------------------------------------------
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
// ibv_import_pd(3), ibv_import_mr(3) by handle within the context of
// `context` / `pd` (nullptr, errno EINVAL: no such handle), and their
// release without destroying the object.
ibv_pd* import_pd(ibv_context* context, uint32_t pd_handle);
void unimport_pd(ibv_pd* pd);
ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle);
void unimport_mr(ibv_mr* mr);
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access);
int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
int dereg_mr(ibv_mr* mr);
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
int destroy_ah(ibv_ah* ah);
int init_ah_from_wc(ibv_context* context, uint8_t port, const ibv_wc* wc, const ibv_grh* grh,
                    ibv_ah_attr* attr);

ibv_comp_channel* create_comp_channel(ibv_context* context);
int destroy_comp_channel(ibv_comp_channel* channel);
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector);
int resize_cq(ibv_cq* cq, int cqe);
int destroy_cq(ibv_cq* cq);
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context);
void ack_cq_events(ibv_cq* cq, unsigned int nevents);

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
int destroy_srq(ibv_srq* srq);

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);
ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp);
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);

int get_async_event(ibv_context* context, ibv_async_event* event);
void ack_async_event(ibv_async_event* event);

}  // namespace verbfault::sim

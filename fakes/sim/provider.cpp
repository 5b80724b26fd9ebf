// The verbs entry points of the simulated provider (verbfault/sim/provider.h):
// argument checks as the man pages document them, then the device model,
// under Fabric::mutex.
#include "verbfault/sim/provider.h"

#include "address_handle.h"
#include "broken_device.h"
#include "completion_channel.h"
#include "completion_queue.h"
#include "context.h"
#include "device.h"
#include "device_nap.h"
#include "event_wait.h"
#include "extended_cq.h"
#include "extended_qp.h"
#include "fabric.h"
#include "fabric_poll.h"
#include "fabric_wait.h"
#include "fault_guard.h"
#include "registration.h"
#include "remote.h"
#include "memory_region.h"
#include "memory_window.h"
#include "network_header.h"
#include "printf_string.h"
#include "wire/real_clock.h"
#include "protection_domain.h"
#include "queue_pair.h"
#include "shared_receive_queue.h"
#include "system_files.h"
#include "transport.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>
#include <mutex>
#include <vector>

namespace verbfault::sim {

namespace {

using Lock = std::unique_lock<std::mutex>;

template <class T>
T* fail(int err) {
  errno = err;
  return nullptr;
}

int fail_int(int err) {
  errno = err;
  return err;
}

// After IBV_EVENT_DEVICE_FATAL every verb but destroy, poll and event
// handling fails with EIO, as on a disassociated uverbs device.
bool dead(ibv_context* context) {
  return Context::from(context)->device().fatal();
}

// A post that fails before its first WR: ibv_post_send(3) and
// ibv_post_recv(3) point *bad_wr at the first WR that failed, always.
template <typename Wr>
int failed_at(Wr* wr, Wr** bad_wr, int err) {
  *bad_wr = wr;
  return err;
}

// ---- fast paths: the ops the inline functions of verbs.h jump through ----

// An empty poll is no call the peers see (Fabric::enter): a process
// spinning on empty polls does nothing a peer's wait could wait for.
int op_poll_cq(ibv_cq* verbs_cq, int n, ibv_wc* wc) {
  if (n < 0) return -EINVAL;
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter(Fabric::Call::uncounted);
  const int polled = poll_from_fabric(guard, *CompletionQueue::from(verbs_cq), n, wc);
  if (polled != 0) fabric.count_call();
  return polled;
}

int op_req_notify_cq(ibv_cq* verbs_cq, int solicited_only) {
  Lock guard = enter_device();
  if (dead(verbs_cq->context)) return EIO;
  CompletionQueue* cq = CompletionQueue::from(verbs_cq);
  if (cq->in_error()) return EIO;
  cq->arm(solicited_only != 0);
  return 0;
}

int op_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Lock guard = enter_device();
  if (dead(qp->context)) return failed_at(wr, bad_wr, EIO);
  return QueuePair::from(qp)->post_send(wr, bad_wr);
}

// A receive WR posted: requests of another process that waited for one
// take it now (remote::retry_held), in the order they arrived.
int op_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  if (dead(qp->context)) return failed_at(wr, bad_wr, EIO);
  const int result = QueuePair::from(qp)->post_recv(wr, bad_wr);
  remote::retry_held(fabric);
  return result;
}

int op_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  if (dead(srq->context)) return failed_at(wr, bad_wr, EIO);
  const int result = SharedReceiveQueue::from(srq)->post(wr, bad_wr);
  remote::retry_held(fabric);
  return result;
}

int op_query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t attr_len) {
  ibv_port_attr full{};
  int err = query_port(context, port, &full);
  if (err == 0) std::memcpy(attr, &full, std::min(attr_len, sizeof full));
  return err;
}

int op_query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                       ibv_device_attr_ex* attr, size_t attr_size) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
  ibv_device_attr_ex full{};
  if (int err = query_device(context, &full.orig_attr)) return err;
  full.max_dm_size = 0;
  // ibv_query_device_ex(3): the port count without phys_port_cnt's 8-bit
  // limit, so equal to it on a device of fewer than 256 ports.
  full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

void install_ops(ibv_context* ctx) {
  ctx->ops.poll_cq = op_poll_cq;
  ctx->ops.req_notify_cq = op_req_notify_cq;
  ctx->ops.post_send = op_post_send;
  ctx->ops.post_recv = op_post_recv;
  ctx->ops.post_srq_recv = op_post_srq_recv;
  ctx->ops.alloc_mw = alloc_mw;  // memory_window.h
  ctx->ops.dealloc_mw = dealloc_mw;
  ctx->ops.bind_mw = bind_mw;
  verbs_context* vctx = verbs_get_ctx(ctx);
  vctx->query_port = op_query_port;
  vctx->query_device_ex = op_query_device_ex;
  vctx->create_cq_ex = create_cq_ex;
  vctx->create_qp_ex = create_qp_ex;
  // Every other extended op stays NULL: the inline wrappers of verbs.h then
  // fail with EOPNOTSUPP (or ENOSYS) as libibverbs documents.
}

bool port_ok(uint8_t port) {
  return port == 1;
}

// ibv_create_cq(3): "the actual CQ size can be larger than requested": as
// the device's profile rounds it (ib, roce and cx6: a power of two minus
// one, like rxe and mlx5: 1 -> 1, 10 -> 15, 16 -> 31).
int actual_cq_size(const Device& device, int cqe) {
  return static_cast<int>(round_size(device.profile().cq_rounding, static_cast<uint64_t>(cqe)));
}

// Diagnostics so far. Guarded by Fabric::mutex.
std::vector<Diagnostic>& diagnostic_log() {
  static auto* log = new std::vector<Diagnostic>();
  return *log;
}

void diagnose(const char* kind, const std::string& object, const std::string& line) {
  std::fprintf(stderr, "verbfault: %s\n", line.c_str());
  diagnostic_log().push_back({kind, object, line});
}

// VERBFAULT_DESTROY_CQ_UNACKED: what ibv_destroy_cq, ibv_destroy_qp and
// ibv_destroy_srq do with events not yet acknowledged: "fail" (default:
// EBUSY and a diagnosis) or "wait" (exactly libibverbs: wait until they are
// acked). One switch for the three: they are the same libibverbs wait.
enum class UnackedDestroy { kFail, kWait };
UnackedDestroy unacked_destroy_policy() {
  static const UnackedDestroy policy = [] {
    const char* value = std::getenv("VERBFAULT_DESTROY_CQ_UNACKED");
    if (value == nullptr || std::strcmp(value, "fail") == 0) return UnackedDestroy::kFail;
    if (std::strcmp(value, "wait") == 0) return UnackedDestroy::kWait;
    std::fprintf(stderr,
                 "verbfault: VERBFAULT_DESTROY_CQ_UNACKED='%s' is invalid: expected 'fail' or "
                 "'wait'; using 'fail'\n",
                 value);
    return UnackedDestroy::kFail;
  }();
  return policy;
}

// What a diagnosis says: the object's stable name and the counts.
struct Described {
  std::string object;  // "qp#3"
  std::string counts;  // "ibv_destroy_qp(qp#3, qp_num 20): 1 async events reported, ..."
};

// The destroy of a CQ, QP or SRQ whose events are not all acknowledged
// (`settled()` is false): libibverbs waits until the acks match what was
// reported, so too few acks hang forever, and so do too many. Diagnosed as
// `kind` with what `describe()` says; then either EBUSY (the object stays
// alive) or, with the "wait" policy, a wait for the acks (another thread may
// still give them). Returns 0 when the destroy may go on.
// How long a destroy waits for another thread's acks (check_unacked_events).
constexpr std::chrono::seconds kAckPatience{1};

// Set by the harness (set_ack_possible); read without the lock.
std::atomic<bool (*)()> ack_possible{nullptr};

bool others_may_ack() {
  bool (*asked)() = ack_possible.load(std::memory_order_acquire);
  return asked != nullptr && asked();
}

template <class Settled, class Describe>
int check_unacked_events(Fabric& fabric, Lock& guard, const char* kind, Settled settled,
                         Describe describe) {
  if (settled()) return 0;
  if (unacked_destroy_policy() == UnackedDestroy::kWait) {
    const Described d = describe();
    diagnose(kind, d.object, d.counts + "; libibverbs would wait forever; waiting");
    fabric.wakeup.wait(guard, settled);
    return 0;
  }
  // libibverbs waits here: while another thread of the program may still
  // acknowledge, so does the device, undiagnosed (UCX's async thread acks
  // QP_LAST_WQE_REACHED while its main thread destroys the QP), for up to
  // a second of wall clock: "another thread" is the harness's guess from
  // the thread count, which a thread of a sanitizer's runtime or of a
  // library that never acks also makes. It fails once none could, or
  // after that second.
  const auto give_up = wire::RealClock::now() + kAckPatience;
  while (others_may_ack() && wire::RealClock::now() < give_up) {
    // Not Fabric::wakeup.wait_for: its deadline is read on steady_clock,
    // the program's virtual clock under the harness (real_clock.h).
    nap_in_device(guard, std::chrono::milliseconds(10));
    if (settled()) return 0;
  }
  const Described d = describe();
  diagnose(kind, d.object, d.counts + "; libibverbs would wait forever; failing with EBUSY");
  return EBUSY;
}

}  // namespace

void set_ack_possible(bool (*others_may_ack)()) {
  ack_possible.store(others_may_ack, std::memory_order_release);
}

std::size_t cq_depth(ibv_cq* verbs) {
  if (verbs == nullptr || !owns(verbs->context)) return 0;
  std::lock_guard guard(process_fabric().mutex);
  return CompletionQueue::from(verbs)->size();
}

bool cq_event_pending(ibv_cq* verbs) {
  if (verbs == nullptr || !owns(verbs->context)) return false;
  std::lock_guard guard(process_fabric().mutex);
  CompletionQueue* cq = CompletionQueue::from(verbs);
  return cq->channel() != nullptr && cq->channel()->has_event_of(cq);
}

bool work_pending() {
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return fabric.deadline_pending() || remote_work_possible(fabric);
}

int device_threads() {
  // Not process_fabric() before it exists: a process on a real provider
  // must not join a fabric by asking.
  if (!Fabric::exists()) return 0;
  Fabric& fabric = process_fabric();
  std::lock_guard guard(fabric.mutex);
  return fabric.service_started() ? 1 : 0;
}

// Not enter_device(): the thread scheduler's housekeeping is no verbs call of the
// application (it must not unmark a waiting process, count a call, or
// take a step).
bool advance_clock(std::span<const int> fds) {
  // Not process_fabric() before it exists: a process that waits before
  // it opens a device (a server in accept(2) that forks a child per
  // client, as qperf's) must not join the fabric by asking, or its
  // children would be born outside it (Fabric::leave_after_fork).
  if (!Fabric::exists()) return false;
  Fabric& fabric = process_fabric();
  Lock guard(fabric.mutex);
  // Not FabricWaiter::applies(): the thread scheduler calls this under its
  // own lock, and every application thread waits (that is why it asks).
  if (FabricWaiter::on_shared_fabric(fabric) && remote_work_possible(fabric)) {
    // With
    // another process on the fabric, virtual time moves only at quiescence
    // (fabric_wait.h). The process stays marked waiting until its next
    // verbs call or frame; the scheduler looks again after a short real-time
    // wait on the channels (shares_fabric()). A channel a frame made
    // readable since the scheduler looked at `fds` wakes its thread first:
    // the mark would stand for a wait that is over, and a peer would take
    // the fabric for quiescent.
    if (!fds.empty() && !fabric.begin_outside(fds)) return true;
    FabricWaiter waiter(fabric);
    const FabricWaiter::Look look = waiter.look();
    fabric.forget_outside_fds();
    if (look == FabricWaiter::Look::kActed) {
      fabric.notify_waiters();
      return true;
    }
    if (look != FabricWaiter::Look::kGaveUp) return false;
    waiter.finish(FabricWait::kGaveUp);
  }
  const bool advanced = fabric.advance_clock();
  if (advanced) fabric.notify_waiters();
  return advanced;
}

bool waiting_for_another_process() {
  return FabricWaiter::in_progress();
}

void idle_outside(bool idle, std::span<const int> fds) {
  if (!Fabric::exists()) return;
  Fabric& fabric = process_fabric();
  Lock guard(fabric.mutex);
  if (idle) {
    fabric.begin_outside(fds);
  } else {
    // A device wait of ours keeps its mark (the scheduler's decider calls
    // this while every application thread waits: none can be in one).
    fabric.end_outside(/*keep_waiting=*/FabricWaiter::in_progress());
  }
}

bool shares_fabric() {
  if (!Fabric::exists()) return false;
  Fabric& fabric = process_fabric();
  Lock guard(fabric.mutex);
  return FabricWaiter::on_shared_fabric(fabric) && remote_work_possible(fabric);
}

void set_freedom_seed(std::optional<std::uint64_t> seed) {
  // Not process_fabric() before it exists: making it joins the local
  // fabric, and a process that never opens a device (a shell or `timeout`
  // started under LD_PRELOAD before the program) must not take a member
  // index. The fabric takes the seed when it is made.
  if (Fabric::set_initial_freedom_seed(seed)) return;
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  fabric.freedoms().set_seed(seed);
}

std::vector<Diagnostic> diagnostics() {
  Lock guard = enter_device();
  return diagnostic_log();
}

// ---- devices ---------------------------------------------------------------

std::span<ibv_device* const> devices() {
  static const std::vector<ibv_device*> list = [] {
    unacked_destroy_policy();  // a malformed setting is reported up front
    std::vector<ibv_device*> out;
    for (auto& device : process_fabric().devices()) out.push_back(device->verbs());
    return out;
  }();
  return list;
}

void rejoin_if_forked() {
  if (!Fabric::exists()) return;  // a fabric is made fresh in the child
  Fabric& fabric = process_fabric();
  if (!fabric.rejoin_pending()) return;
  Lock guard = fabric.enter();
  fabric.rejoin_after_fork();
}

bool owns(const ibv_device* device) {
  if (device == nullptr) return false;
  auto list = devices();
  return std::find(list.begin(), list.end(), device) != list.end();
}

bool owns(const ibv_context* context) {
  return context != nullptr && owns(context->device);
}

__be64 device_guid(const ibv_device* device) {
  return Device::from(device)->profile().device.node_guid;
}

int get_device_index(const ibv_device* device) {
  return Device::from(device)->kernel_index();
}

namespace {
Device* device_of_sysfs_path(const char* dir) {
  if (dir == nullptr) return nullptr;
  for (ibv_device* d : devices())
    if (std::strcmp(d->ibdev_path, dir) == 0) return Device::from(d);
  return nullptr;
}
}  // namespace

namespace {

// A file below the sysfs root that the simulated devices serve, not in a
// device's directory (librdmacm reads "class/misc/rdma_cm/abi_version"
// under ibv_get_sysfs_path()); empty when not one.
std::string served_sysfs_file(const char* dir, const char* file) {
  if (dir == nullptr || file == nullptr || std::string_view(dir) != "/sys") return {};
  std::string path = std::string(dir) + "/" + file;
  return system_path_prefix(path) ? path : std::string();
}

}  // namespace

bool owns_sysfs_path(const char* dir, const char* file) {
  return device_of_sysfs_path(dir) != nullptr || !served_sysfs_file(dir, file).empty();
}

int read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  const Device* device = device_of_sysfs_path(dir);
  const std::string served = served_sysfs_file(dir, file);
  if ((device == nullptr && served.empty()) || file == nullptr || size == 0)
    return fail_int(ENOENT), -1;
  // The file as the system shows it (system_files.cpp), read as
  // libibverbs' ibv_read_sysfs_file reads one: the trailing newline cut.
  // By the device's own directory: the provider double renames ibdev_path.
  const SystemNode node = system_node(device != nullptr ? std::string(kInfinibandDevices) + "/" +
                                                              device->name() + "/" + file
                                                        : served);
  if (node.kind != SystemNodeKind::kFile) return fail_int(ENOENT), -1;
  if (node.read_error != 0) return fail_int(node.read_error), -1;
  std::string_view text = node.text;
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const int n = std::snprintf(buf, size, "%.*s", static_cast<int>(text.size()), text.data());
  return std::min<int>(n, static_cast<int>(size) - 1);
}

ibv_context* open_device(ibv_device* device) {
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  // The device answers other processes of the local fabric from now on,
  // whatever this process's threads do (its service thread).
  fabric.endpoint();
  auto* context = new Context(*Device::from(device));
  install_ops(context->verbs());
  return context->verbs();
}

bool owns_cmd_fd(int cmd_fd) {
  if (cmd_fd < 0) return false;
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  for (Context* context : fabric.contexts())
    if (context->has_cmd_fd(cmd_fd)) return true;
  return false;
}

ibv_context* import_device(int cmd_fd) {
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  for (Context* context : fabric.contexts()) {
    if (!context->has_cmd_fd(cmd_fd)) continue;
    ibv_context* imported = context->add_import(cmd_fd);
    install_ops(imported);
    return imported;
  }
  return fail<ibv_context>(EOPNOTSUPP);  // not a simulated device's descriptor
}

int close_device(ibv_context* verbs) {
  Lock guard = enter_device();
  Device& device = Context::from(verbs)->device();
  // One of several ibv_contexts of the context (ibv_import_device(3)): the
  // objects stay for the others.
  if (!Context::from(verbs)->close()) return 0;
  delete Context::from(verbs);
  // After DEVICE_FATAL the application closes its contexts and opens new
  // ones; like a driver resetting the HCA, the device works again once the
  // last context of the dead instance is gone.
  bool still_open = false;
  for (Context* context : device.fabric().contexts())
    if (&context->device() == &device) still_open = true;
  if (!still_open) device.recover();
  return 0;
}

int query_device(ibv_context* context, ibv_device_attr* attr) {
  if (attr == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  *attr = Context::from(context)->device().profile().device;
  return 0;
}

int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  if (!port_ok(port) || attr == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  *attr = Context::from(context)->device().port();
  return 0;
}

int query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  Lock guard = enter_device();
  Device& device = Context::from(context)->device();
  // ibv_query_gid(3): "returns 0 on success, and -1 on error" (not an errno).
  if (!port_ok(port) || index < 0 || index >= device.port().gid_tbl_len)
    return fail_int(EINVAL), -1;
  *gid = device.gid(index);
  return 0;
}

namespace {
void fill_gid_entry(const Device& device, uint32_t index, ibv_gid_entry* entry) {
  *entry = ibv_gid_entry{};
  entry->gid = device.gid(static_cast<int>(index));
  entry->gid_index = index;
  entry->port_num = 1;
  entry->gid_type = device.gid_type(static_cast<int>(index));
  // No netdev the kernel knows: 0, as for an InfiniBand port.
  entry->ndev_ifindex = 0;
}
}  // namespace

int query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                 uint32_t flags, size_t entry_size) {
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return fail_int(EINVAL);
  Lock guard = enter_device();
  Device& device = Context::from(context)->device();
  if (port != 1 || index >= static_cast<uint32_t>(device.port().gid_tbl_len))
    return fail_int(EINVAL);
  // _ibv_query_gid_ex(3): an empty table entry is ENODATA.
  if (device.gid_empty(static_cast<int>(index))) return fail_int(ENODATA);
  fill_gid_entry(device, index, entry);
  return 0;
}

ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                        uint32_t flags, size_t entry_size) {
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  Lock guard = enter_device();
  Device& device = Context::from(context)->device();
  size_t n = 0;
  for (int i = 0; i < device.port().gid_tbl_len; ++i) {
    if (device.gid_empty(i)) continue;
    if (n == max_entries) return -EINVAL;
    auto* e =
        reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<uint8_t*>(entries) + n * entry_size);
    fill_gid_entry(device, static_cast<uint32_t>(i), e);
    ++n;
  }
  return static_cast<ssize_t>(n);
}

int query_gid_type(ibv_context* context, uint8_t port, unsigned int index, int* type) {
  Lock guard = enter_device();
  Device& device = Context::from(context)->device();
  if (!port_ok(port) || index >= static_cast<unsigned>(device.port().gid_tbl_len))
    return fail_int(EINVAL);
  // libibverbs' private ibv_query_gid_type answers in the sysfs encoding
  // (IBV_GID_TYPE_SYSFS_IB_ROCE_V1 0, IBV_GID_TYPE_SYSFS_ROCE_V2 1): "IB/RoCE
  // v1" is one value there, told apart by the port's link layer.
  *type = device.gid_type(static_cast<int>(index)) == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
  return 0;
}

int query_pkey(ibv_context* context, uint8_t port, int index, __be16* pkey) {
  Lock guard = enter_device();
  Device& device = Context::from(context)->device();
  // ibv_query_pkey(3): "returns 0 on success, and -1 on error" (not an errno).
  if (!port_ok(port) || index < 0 || index >= device.port().pkey_tbl_len)
    return fail_int(EINVAL), -1;
  // The default partition, full membership, at index 0 (IBA 10.9.1.2).
  *pkey = index == 0 ? htobe16(0xffff) : 0;
  return 0;
}

int get_pkey_index(ibv_context* context, uint8_t port, __be16 pkey) {
  // ibv_get_pkey_index(3): the index, or -1 on error with errno set.
  if (!port_ok(port)) return fail_int(EINVAL), -1;
  (void)context;
  return be16toh(pkey) == 0xffff ? 0 : (fail_int(ENOENT), -1);
}

// ---- PD, MR, AH ------------------------------------------------------------

ibv_pd* alloc_pd(ibv_context* verbs) {
  Lock guard = enter_device();
  if (dead(verbs)) return fail<ibv_pd>(EIO);
  Context* context = Context::from(verbs);
  auto pd = std::make_unique<ProtectionDomain>(*context);
  pd->verbs()->context = verbs;
  pd->verbs()->handle = context->fabric().next_index(Fabric::Kind::kPd);
  return adopt(context->pds, std::move(pd))->verbs();
}

int dealloc_pd(ibv_pd* verbs) {
  Lock guard = enter_device();
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  if (pd->children > 0) return fail_int(EBUSY);
  pd->context().pds.erase(pd);
  return 0;
}

// ibv_import_pd(3) / ibv_import_mr(3): the object with that handle in the
// (shared) context, as a second ibv_pd / ibv_mr whose context is the
// importing one. The imported MR's address is unknown to the importer, as
// with the kernel's query (NULL). An import counts as a child of its PD (or
// MR): the original is not released while imported (EBUSY), where the
// kernel would release it under the importer.
namespace {

// An imported handle's entry in its context's list (Context::imported_*),
// taken out of it; nullptr when `verbs` is none of them.
template <class Verbs, class Owner>
std::unique_ptr<Handle<Verbs, Owner>> take_import(
    std::vector<std::unique_ptr<Handle<Verbs, Owner>>>& imported, const Verbs* verbs) {
  for (auto at = imported.begin(); at != imported.end(); ++at) {
    if (&(*at)->verbs != verbs) continue;
    std::unique_ptr<Handle<Verbs, Owner>> taken = std::move(*at);
    imported.erase(at);
    return taken;
  }
  return nullptr;
}

// A second handle on `owner`, with the libibverbs struct `verbs` (a copy of
// the original's, its context and PD the importer's), kept in `imported`.
template <class Verbs, class Owner>
Verbs* add_import(std::vector<std::unique_ptr<Handle<Verbs, Owner>>>& imported, Owner* owner,
                  const Verbs& verbs) {
  auto alias = std::make_unique<Handle<Verbs, Owner>>();
  alias->owner = owner;
  alias->verbs = verbs;
  imported.push_back(std::move(alias));
  return &imported.back()->verbs;
}

}  // namespace

ibv_pd* import_pd(ibv_context* verbs, uint32_t handle) {
  Lock guard = enter_device();
  Context* context = Context::from(verbs);
  for (auto& [pd, owned] : context->pds) {
    if (pd->verbs()->handle != handle) continue;
    ibv_pd alias = *pd->verbs();
    alias.context = verbs;
    ++pd->children;
    return add_import(context->imported_pds, pd, alias);
  }
  return fail<ibv_pd>(EINVAL);
}

void unimport_pd(ibv_pd* verbs) {
  Lock guard = enter_device();
  if (auto taken = take_import(Context::from(verbs->context)->imported_pds, verbs))
    --taken->owner->children;
}

ibv_mr* import_mr(ibv_pd* verbs, uint32_t handle) {
  Lock guard = enter_device();
  Context* context = Context::from(verbs->context);
  for (auto& [mr, owned] : context->mrs) {
    if (mr->verbs()->handle != handle) continue;
    ibv_mr alias = *mr->verbs();
    alias.context = verbs->context;
    alias.pd = verbs;
    alias.addr = nullptr;
    return add_import(context->imported_mrs, mr, alias);
  }
  return fail<ibv_mr>(EINVAL);
}

void unimport_mr(ibv_mr* verbs) {
  Lock guard = enter_device();
  take_import(Context::from(verbs->context)->imported_mrs, verbs);
}

namespace {
// The access flags an MR of the simulated device may have (ibv_reg_mr(3)).
bool valid_mr_access(unsigned int access) {
  // ibv_reg_mr(3): remote write or atomic access requires local write.
  constexpr unsigned kNeedsLocalWrite = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  constexpr unsigned kKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                              IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING |
                              IBV_ACCESS_MW_BIND;
  if ((access & kNeedsLocalWrite) && !(access & IBV_ACCESS_LOCAL_WRITE)) return false;
  return (access & ~kKnown) == 0;  // on-demand paging ...
}
}  // namespace

ibv_mr* reg_mr(ibv_pd* verbs, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!valid_mr_access(access)) return fail<ibv_mr>(EINVAL);
  // As the kernel's ib_umem_get: no pages, or a range that wraps, is
  // EINVAL; memory that cannot be pinned (NULL, not mapped, not writable
  // for a writable region) is EFAULT (registration.h).
  if (int error = check_registration(addr, length, access)) return fail<ibv_mr>(error);
  fault_guard::install();
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail<ibv_mr>(EIO);
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  if (length > pd->context().device().profile().device.max_mr_size) return fail<ibv_mr>(EINVAL);
  Fabric& fabric = pd->context().fabric();
  const uint32_t handle = fabric.next_index(Fabric::Kind::kMr);
  const uint32_t key = fabric.reserve_mr_key();
  auto mr = std::make_unique<MemoryRegion>(
      *pd, addr, length, (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova, access, key);
  mr->verbs()->handle = handle;
  fabric.bind_mr(key, mr.get());
  ++pd->children;
  return adopt(pd->context().mrs, std::move(mr))->verbs();
}

int rereg_mr(ibv_mr* verbs, int flags, ibv_pd* new_pd, void* addr, size_t length, int access) {
  // The input checks of libibverbs' ibv_rereg_mr: the MR stays as it was,
  // IBV_REREG_MR_ERR_INPUT with errno EINVAL.
  auto input_error = [] { return fail_int(EINVAL), IBV_REREG_MR_ERR_INPUT; };
  if (flags &
      ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS))
    return input_error();
  if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (addr == nullptr || length == 0))
    return input_error();
  if (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) return input_error();
  // What the kernel rejects (no flag at all, invalid access flags as for
  // ibv_reg_mr(3)) libibverbs reports as IBV_REREG_MR_ERR_CMD with errno
  // EINVAL; the simulated MR is left unchanged.
  if (flags == 0 ||
      ((flags & IBV_REREG_MR_CHANGE_ACCESS) && !valid_mr_access(static_cast<unsigned>(access))))
    return fail_int(EINVAL), IBV_REREG_MR_ERR_CMD;
  // The new translation, or the region with new access, is checked as a
  // registration (registration.h); a failure leaves the MR as it was.
  if (flags & (IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS)) {
    const bool moved = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
    const unsigned int new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS)
                                        ? static_cast<unsigned int>(access)
                                        : MemoryRegion::from(verbs)->access();
    if (int error = check_registration(moved ? addr : verbs->addr, moved ? length : verbs->length,
                                       new_access))
      return fail_int(error), IBV_REREG_MR_ERR_CMD;
  }
  Lock guard = enter_device();
  MemoryRegion* mr = MemoryRegion::from(verbs);
  ProtectionDomain* pd = nullptr;
  if (flags & IBV_REREG_MR_CHANGE_PD) {
    // The new PD must belong to the MR's own context.
    if (new_pd == nullptr || !Context::same(new_pd->context, verbs->context)) return input_error();
    pd = ProtectionDomain::from(new_pd);
    --mr->pd().children;
    ++pd->children;
  }
  mr->reregister(pd, (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? addr : nullptr, length,
                 (flags & IBV_REREG_MR_CHANGE_ACCESS) ? access : -1);
  return 0;
}

int dereg_mr(ibv_mr* verbs) {
  Lock guard = enter_device();
  MemoryRegion* mr = MemoryRegion::from(verbs);
  const auto& imported = mr->pd().context().imported_mrs;
  if (std::any_of(imported.begin(), imported.end(), [&](auto& i) { return i->owner == mr; }))
    return fail_int(EBUSY);  // imported (ibv_import_mr(3)): released by ibv_unimport_mr first
  // ibv_reg_mr(3): "ibv_dereg_mr() fails if any memory window is still
  // bound to this MR"; EINVAL as rxe (rxe_dereg_mr).
  if (memory_window::bound_to(*mr)) return fail_int(EINVAL);
  mr->pd().context().fabric().unregister_mr(mr->key());
  --mr->pd().children;
  mr->pd().context().mrs.erase(mr);
  return 0;
}

ibv_ah* create_ah(ibv_pd* verbs, ibv_ah_attr* attr) {
  if (attr == nullptr) return fail<ibv_ah>(EINVAL);
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail<ibv_ah>(EIO);
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  if (!pd->context().device().valid_address(*attr)) return fail<ibv_ah>(EINVAL);
  auto ah = std::make_unique<AddressHandle>(*pd, *attr);
  ah->verbs()->context = pd->verbs()->context;
  ah->verbs()->pd = verbs;
  ah->verbs()->handle = pd->context().fabric().next_index(Fabric::Kind::kAh);
  ++pd->children;
  return adopt(pd->context().ahs, std::move(ah))->verbs();
}

int destroy_ah(ibv_ah* verbs) {
  Lock guard = enter_device();
  AddressHandle* ah = AddressHandle::from(verbs);
  --ah->pd().children;
  ah->pd().context().ahs.erase(ah);
  return 0;
}

int init_ah_from_wc(ibv_context* context, uint8_t port, const ibv_wc* wc, const ibv_grh* grh,
                    ibv_ah_attr* attr) {
  if (!port_ok(port) || wc == nullptr || attr == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  const Device& device = Context::from(context)->device();
  *attr = ibv_ah_attr{};
  attr->dlid = wc->slid;
  attr->sl = wc->sl;
  attr->src_path_bits = wc->dlid_path_bits;
  attr->port_num = port;
  if (!(wc->wc_flags & IBV_WC_GRH)) {
    // A RoCE reply must have a GRH (ibv_create_ah would refuse it).
    return device.ethernet() ? fail_int(EINVAL) : 0;
  }
  if (grh == nullptr) return fail_int(EINVAL);
  const std::optional<ReceivedHeader> header = read_network_header(*grh);
  if (!header) return fail_int(EPROTONOSUPPORT);
  // The reply goes back to the sender: its GID (for IPv4, ::ffff: and the
  // source address, as libibverbs rebuilds it) is the destination, and the
  // source is our GID the message was sent to, of the same type.
  attr->is_global = 1;
  attr->grh.dgid = header->sgid;
  attr->grh.flow_label = header->flow_label;
  attr->grh.hop_limit = 0xff;
  attr->grh.traffic_class = header->traffic_class;
  if (!device.ethernet()) {
    attr->grh.sgid_index = 0;
    return 0;
  }
  const int index =
      device.find_gid(header->dgid, header->roce_v2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1);
  // libibverbs' ibv_find_gid_index fails when no entry matches.
  if (index < 0) return fail_int(ENOENT);
  attr->grh.sgid_index = static_cast<uint8_t>(index);
  return 0;
}

// ---- completion channels and CQs -------------------------------------------

ibv_comp_channel* create_comp_channel(ibv_context* verbs) {
  Lock guard = enter_device();
  if (dead(verbs)) return fail<ibv_comp_channel>(EIO);
  Context* context = Context::from(verbs);
  auto channel = std::make_unique<CompletionChannel>(*context);
  if (!channel->valid()) return fail<ibv_comp_channel>(EMFILE);
  channel->verbs()->context = verbs;
  return adopt(context->channels, std::move(channel))->verbs();
}

int destroy_comp_channel(ibv_comp_channel* verbs) {
  Lock guard = enter_device();
  CompletionChannel* channel = CompletionChannel::from(verbs);
  if (channel->attached_cqs > 0) return fail_int(EBUSY);
  channel->context().channels.erase(channel);
  return 0;
}

ibv_cq* create_cq(ibv_context* verbs, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  Lock guard = enter_device();
  if (dead(verbs)) return fail<ibv_cq>(EIO);
  Context* context = Context::from(verbs);
  const int max_cqe = context->device().profile().device.max_cqe;
  if (cqe < 1 || cqe > max_cqe) return fail<ibv_cq>(EINVAL);
  if (comp_vector < 0 || comp_vector >= verbs->num_comp_vectors) return fail<ibv_cq>(EINVAL);
  CompletionChannel* sim_channel = nullptr;
  if (channel != nullptr) {
    if (!Context::same(channel->context, verbs)) return fail<ibv_cq>(EINVAL);
    sim_channel = CompletionChannel::from(channel);
  }
  auto cq = std::make_unique<CompletionQueue>(*context, actual_cq_size(context->device(), cqe),
                                              cq_context, sim_channel);
  cq->verbs()->handle = context->fabric().next_index(Fabric::Kind::kCq);
  cq->verbs()->context = verbs;  // the import it was made on, if one
  if (sim_channel != nullptr) {
    ++sim_channel->attached_cqs;
    ++channel->refcnt;
  }
  return adopt(context->cqs, std::move(cq))->verbs();
}

int resize_cq(ibv_cq* verbs, int cqe) {
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail_int(EIO);
  CompletionQueue* cq = CompletionQueue::from(verbs);
  if (cqe < 1 || cqe > cq->context().device().profile().device.max_cqe) return fail_int(EINVAL);
  if (cq->in_error()) return fail_int(EIO);
  if (int err = cq->resize(actual_cq_size(cq->context().device(), cqe))) return fail_int(err);
  return 0;
}

int destroy_cq(ibv_cq* verbs) {
  Lock guard = enter_device();
  CompletionQueue* cq = CompletionQueue::from(verbs);
  if (cq->attached_queues > 0) return fail_int(EBUSY);
#ifdef VERBFAULT_BROKEN_DEVICE
  const bool ignore_acks = broken("ignore_acks");
#else
  const bool ignore_acks = false;
#endif
  auto settled = [&] {
    return ignore_acks || (cq->events_acked == cq->events_reported &&
                           cq->async_events_acked == cq->async_events_reported);
  };
  auto describe = [&] {
    return Described{"cq#" + std::to_string(verbs->handle),
                     printf_string("ibv_destroy_cq(cq#%u): %u completion events reported, %u "
                                   "acknowledged; %u async events reported, %u acknowledged",
                                   verbs->handle, cq->events_reported, cq->events_acked,
                                   cq->async_events_reported, cq->async_events_acked)};
  };
  if (int err = check_unacked_events(cq->context().fabric(), guard, "destroy_cq.unacked_events",
                                     settled, describe))
    return fail_int(err);
  Context& context = cq->context();
  if (CompletionChannel* channel = cq->channel()) {
    channel->discard_events_of(cq);
    --channel->attached_cqs;
    --channel->verbs()->refcnt;
  }
  context.discard_async_events_of(verbs);
  context.cqs.erase(cq);
  return 0;
}

int get_cq_event(ibv_comp_channel* verbs, ibv_cq** cq_out, void** cq_context) {
  Lock guard = enter_device();
  CompletionChannel* channel = CompletionChannel::from(verbs);
  if (int err = wait_for(channel->context().fabric(), guard, channel->nonblocking(),
                         [&] { return channel->has_event(); })) {
    errno = err;
    return -1;
  }
  CompletionQueue* cq = channel->take_event();
  ++cq->events_reported;
  *cq_out = cq->verbs();
  *cq_context = cq->verbs()->cq_context;
  return 0;
}

void ack_cq_events(ibv_cq* verbs, unsigned int nevents) {
  Lock guard = enter_device();
  CompletionQueue* cq = CompletionQueue::from(verbs);
  cq->events_acked += nevents;
  // Mirror libibverbs, which keeps the count in the ibv_cq itself.
  pthread_mutex_lock(&verbs->mutex);
  verbs->comp_events_completed += nevents;
  pthread_cond_signal(&verbs->cond);
  pthread_mutex_unlock(&verbs->mutex);
}

// ---- SRQ -------------------------------------------------------------------

ibv_srq* create_srq(ibv_pd* verbs, ibv_srq_init_attr* init) {
  if (init == nullptr) return fail<ibv_srq>(EINVAL);
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail<ibv_srq>(EIO);
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  const ibv_device_attr& limits = pd->context().device().profile().device;
  ibv_srq_attr& attr = init->attr;
  if (attr.max_wr == 0 || attr.max_wr > static_cast<uint32_t>(limits.max_srq_wr) ||
      attr.max_sge == 0 || attr.max_sge > static_cast<uint32_t>(limits.max_srq_sge) ||
      attr.srq_limit > attr.max_wr)
    return fail<ibv_srq>(EINVAL);
  // ibv_create_srq(3): attr returns the granted size (cx6: 2^n - 1, mlx5).
  const uint64_t granted =
      round_size(pd->context().device().profile().srq_wr_rounding, attr.max_wr);
  if (granted > static_cast<uint32_t>(limits.max_srq_wr)) return fail<ibv_srq>(EINVAL);
  attr.max_wr = static_cast<uint32_t>(granted);
  auto srq = std::make_unique<SharedReceiveQueue>(*pd, attr);
  srq->verbs()->srq_context = init->srq_context;
  srq->verbs()->handle = pd->context().fabric().next_index(Fabric::Kind::kSrq);
  ++pd->children;
  return adopt(pd->context().srqs, std::move(srq))->verbs();
}

int modify_srq(ibv_srq* verbs, ibv_srq_attr* attr, int mask) {
  if (attr == nullptr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))) return fail_int(EINVAL);
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail_int(EIO);
  SharedReceiveQueue* srq = SharedReceiveQueue::from(verbs);
  const ibv_device_attr& limits = srq->pd().context().device().profile().device;
  ibv_srq_attr& current = srq->attr();
  uint32_t max_wr = current.max_wr;
  if (mask & IBV_SRQ_MAX_WR) {
    // ibv_modify_srq(3): resizing needs IBV_DEVICE_SRQ_RESIZE.
    if (!(limits.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) return fail_int(EINVAL);
    const uint64_t granted =
        round_size(srq->pd().context().device().profile().srq_wr_rounding, attr->max_wr);
    if (attr->max_wr == 0 || granted > static_cast<uint32_t>(limits.max_srq_wr))
      return fail_int(EINVAL);
    max_wr = static_cast<uint32_t>(granted);
  }
  if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > max_wr) return fail_int(EINVAL);
  current.max_wr = max_wr;
  if (mask & IBV_SRQ_LIMIT) current.srq_limit = attr->srq_limit;
  return 0;
}

int query_srq(ibv_srq* verbs, ibv_srq_attr* attr) {
  Lock guard = enter_device();
  *attr = SharedReceiveQueue::from(verbs)->attr();
  return 0;
}

int destroy_srq(ibv_srq* verbs) {
  Lock guard = enter_device();
  SharedReceiveQueue* srq = SharedReceiveQueue::from(verbs);
  if (srq->attached_qps > 0) return fail_int(EBUSY);
  // libibverbs counts the acks in the ibv_srq (ibv_ack_async_event(3)).
  auto settled = [&] { return verbs->events_completed == srq->events_reported; };
  auto describe = [&] {
    return Described{
        "srq#" + std::to_string(verbs->handle),
        printf_string("ibv_destroy_srq(srq#%u): %u async events reported, %u acknowledged",
                      verbs->handle, srq->events_reported, verbs->events_completed)};
  };
  if (int err = check_unacked_events(srq->pd().context().fabric(), guard,
                                     "destroy_srq.unacked_events", settled, describe))
    return fail_int(err);
  Context& context = srq->pd().context();
  for (auto& [cq, owned] : context.cqs) cq->forget(srq);
  --srq->pd().children;
  context.discard_async_events_of(verbs);
  context.srqs.erase(srq);
  return 0;
}

// ---- QP --------------------------------------------------------------------

ibv_qp* create_qp(ibv_pd* verbs, ibv_qp_init_attr* init) {
  if (init == nullptr) return fail<ibv_qp>(EINVAL);
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail<ibv_qp>(EIO);
  ProtectionDomain* pd = ProtectionDomain::from(verbs);
  Context& context = pd->context();
  const ibv_device_attr& limits = context.device().profile().device;
  switch (init->qp_type) {
    case IBV_QPT_RC:
    case IBV_QPT_UC:
    case IBV_QPT_UD:
      break;
    case IBV_QPT_RAW_PACKET:
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV:
    case IBV_QPT_DRIVER:
      return fail<ibv_qp>(EOPNOTSUPP);
    default:
      return fail<ibv_qp>(EINVAL);
  }
  auto same_context = [&](auto* object) {
    return object != nullptr && Context::same(object->context, verbs->context);
  };
  if (!same_context(init->send_cq) || !same_context(init->recv_cq)) return fail<ibv_qp>(EINVAL);
  if (init->srq != nullptr) {
    // ibv_create_qp(3): only RC and UD QPs can use an SRQ.
    if (init->qp_type == IBV_QPT_UC || !same_context(init->srq)) return fail<ibv_qp>(EINVAL);
    init->cap.max_recv_wr = 0;
    init->cap.max_recv_sge = 0;
  }
  ibv_qp_cap& cap = init->cap;
  const auto max_wr = static_cast<uint32_t>(limits.max_qp_wr);
  const auto max_sge = static_cast<uint32_t>(limits.max_sge);
  if (cap.max_send_wr > max_wr || cap.max_recv_wr > max_wr || cap.max_send_sge > max_sge ||
      cap.max_recv_sge > max_sge ||
      cap.max_inline_data > context.device().profile().max_inline_data)
    return fail<ibv_qp>(EINVAL);
  // ibv_create_qp(3): cap returns what was granted, which may be more than
  // asked, as the profile rounds it (cx6: 2^n WQEs, like mlx5), within the
  // device's max_qp_wr.
  const Rounding rounding = context.device().profile().qp_wr_rounding;
  const uint64_t send_wr = round_size(rounding, cap.max_send_wr);
  const uint64_t recv_wr = round_size(rounding, cap.max_recv_wr);
  if (send_wr > max_wr || recv_wr > max_wr) return fail<ibv_qp>(EINVAL);
  cap.max_send_wr = static_cast<uint32_t>(send_wr);
  cap.max_recv_wr = static_cast<uint32_t>(recv_wr);

  Fabric& fabric = pd->context().fabric();
  const uint32_t qpn = fabric.reserve_qpn();
  auto qp = std::make_unique<QueuePair>(*pd, *init, qpn);
  fabric.bind_qp(qpn, qp.get());
  qp->creation_index = fabric.next_index(Fabric::Kind::kQp);
  ++pd->children;
  ++CompletionQueue::from(init->send_cq)->attached_queues;
  if (init->recv_cq != init->send_cq) ++CompletionQueue::from(init->recv_cq)->attached_queues;
  if (init->srq != nullptr) ++SharedReceiveQueue::from(init->srq)->attached_qps;
  return adopt(context.qps, std::move(qp))->verbs();
}

int modify_qp(ibv_qp* verbs, ibv_qp_attr* attr, int mask) {
  if (attr == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  if (dead(verbs->context)) return fail_int(EIO);
  if (int err = QueuePair::from(verbs)->modify(*attr, mask)) return fail_int(err);
  // libibverbs keeps the last state set through modify in the ibv_qp.
  if (mask & IBV_QP_STATE) {
    verbs->state = attr->qp_state;
    // A QP that can receive now (RTR) or no longer (ERR) changes what the
    // requests of other processes that wait for it (a group's messages
    // among them) wait for.
    remote::retry_held(QueuePair::from(verbs)->fabric());
  }
  return 0;
}

int query_qp(ibv_qp* verbs, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  (void)mask;  // ibv_query_qp(3): the provider may return more than asked
  if (attr == nullptr || init == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  QueuePair* qp = QueuePair::from(verbs);
  *attr = qp->attr();
  *init = qp->init_attr();
  init->cap = attr->cap;
  return 0;
}

int destroy_qp(ibv_qp* verbs) {
  Lock guard = enter_device();
  QueuePair* qp = QueuePair::from(verbs);
  Context& context = qp->context();
  // libibverbs counts the acks in the ibv_qp (ibv_ack_async_event(3)).
  auto settled = [&] { return verbs->events_completed == qp->events_reported; };
  auto describe = [&] {
    return Described{
        "qp#" + std::to_string(qp->creation_index),
        printf_string("ibv_destroy_qp(qp#%u, qp_num %u): %u async events reported, %u acknowledged",
                      qp->creation_index, verbs->qp_num, qp->events_reported,
                      verbs->events_completed)};
  };
  // uverbs_free_qp: a QP still attached to a multicast group is not
  // destroyed until the application detaches it (the attachments are no
  // objects of their own that a destroy could clean up). The kernel says
  // so before libibverbs waits for the acknowledgements (ibv_cmd_destroy_qp
  // waits after a destroy that succeeded).
  if (!qp->multicast_groups.empty()) return fail_int(EBUSY);
  Fabric& fabric = qp->fabric();
  if (int err = check_unacked_events(fabric, guard, "destroy_qp.unacked_events", settled, describe))
    return fail_int(err);
  fabric.unregister_qp(qp->qpn());
  fabric.unschedule(qp);
  memory_window::forget_qp(*qp);
  qp->send_cq().forget(qp);
  qp->recv_cq().forget(qp);
  --qp->send_cq().attached_queues;
  if (&qp->recv_cq() != &qp->send_cq()) --qp->recv_cq().attached_queues;
  if (qp->srq() != nullptr) --qp->srq()->attached_qps;
  --qp->pd().children;
  context.discard_async_events_of(verbs);
  context.qps.erase(qp);
  return 0;
}

ibv_qp_ex* qp_to_qp_ex(ibv_qp* verbs) {
  // The extended post API (ibv_wr_*) exists only for QPs created with
  // ibv_create_qp_ex and send_ops_flags; for any other, like libibverbs, NULL.
  Lock guard = enter_device();
  QueuePair* qp = QueuePair::from(verbs);
  return qp->send_ops_flags != 0 ? qp->verbs_ex() : nullptr;
}

int attach_mcast(ibv_qp* verbs, const ibv_gid* gid, uint16_t lid) {
  if (gid == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  if (int err = multicast::attach(*QueuePair::from(verbs), *gid, lid)) return fail_int(err);
  // Messages of another process to the group that waited for a receiver.
  remote::retry_held(QueuePair::from(verbs)->fabric());
  return 0;
}
int detach_mcast(ibv_qp* verbs, const ibv_gid* gid, uint16_t lid) {
  if (gid == nullptr) return fail_int(EINVAL);
  Lock guard = enter_device();
  if (int err = multicast::detach(*QueuePair::from(verbs), *gid, lid)) return fail_int(err);
  // A group's message that waited for this QP's receive WR waits no more.
  remote::retry_held(QueuePair::from(verbs)->fabric());
  return 0;
}

// ---- async events ----------------------------------------------------------

int get_async_event(ibv_context* verbs, ibv_async_event* event) {
  Lock guard = enter_device();
  Context* context = Context::from(verbs);
  if (int err = wait_for(context->fabric(), guard, context->async_nonblocking(),
                         [&] { return context->has_async_event(); })) {
    errno = err;
    return -1;
  }
  *event = context->take_async_event();
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      ++CompletionQueue::from(event->element.cq)->async_events_reported;
      break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      ++SharedReceiveQueue::from(event->element.srq)->events_reported;
      break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_DEVICE_FATAL:
      break;
    default:
      ++QueuePair::from(event->element.qp)->events_reported;
      break;
  }
  return 0;
}

void ack_async_event(ibv_async_event* event) {
  Fabric& fabric = process_fabric();
  Lock guard = fabric.enter();
  // libibverbs counts acks in the object's own struct, under its mutex.
  auto count = [](pthread_mutex_t* m, pthread_cond_t* c, uint32_t* counter) {
    pthread_mutex_lock(m);
    ++*counter;
    pthread_cond_signal(c);
    pthread_mutex_unlock(m);
  };
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
      ibv_cq* cq = event->element.cq;
      ++CompletionQueue::from(cq)->async_events_acked;
      count(&cq->mutex, &cq->cond, &cq->async_events_completed);
      break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      ibv_srq* srq = event->element.srq;
      count(&srq->mutex, &srq->cond, &srq->events_completed);
      break;
    }
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_DEVICE_FATAL:
      break;
    default: {
      ibv_qp* qp = event->element.qp;
      count(&qp->mutex, &qp->cond, &qp->events_completed);
      break;
    }
  }
  fabric.notify_waiters();
}

}  // namespace verbfault::sim

// The interposer: every context the front door hands out, simulated or
// real, is wrapped the same way. The exported calls run through calls.h,
// which calls the hooks below around the provider layer's call; the
// fast-path ops of the context (poll_cq, post_send, post_recv,
// req_notify_cq, post_srq_recv) are replaced by trampolines
// (trampolines.cpp) once the harness is on. A hook builds the call's
// record, asks the engine (engine/runtime) for its faults and hands the
// record to the observers (the trace, the checks).
//
// Without a seed, plan or trace (Config::active false) the hooks return at
// once, no trampoline is installed, and the provider's behaviour is
// untouched.
#pragma once

#include "call_record.h"
#include "verbfault/plan.h"

#include <infiniband/verbs.h>

#include <optional>
#include <string_view>

namespace verbfault::interposer {

// The run these hooks act on (run.h): every hook takes it from its caller.
class Run;

// The run of this process, for the entry points only: the front door's
// exports, the trampolines the provider calls through a context's ops,
// the libc wrappers (libc_files.cpp, system_files.cpp, cm_files.cpp), the
// process hooks (exit, fatal signals, fork) and the scheduler's callbacks.
// Each reads it here once and passes it on; every function below them
// takes the Run as a parameter. Made by the library's constructor before
// main, or at the first entry if another library's constructor calls in
// first; never destroyed (threads may still call in while the process
// exits).
Run& process_run();

// The arguments of a call as the trace shows them, in order.
using Fields = std::initializer_list<record::Field>;

// Whether the harness is configured to do anything.
bool active();

// ---- contexts ---------------------------------------------------------------
// Registers the context and installs the trampolines into its ops table.
void opened(Run& run, ibv_context* context, const char* device_name);
// Before the provider frees the context: restores nothing (the memory is
// about to go) but forgets the saved ops.
void closing(Run& run, ibv_context* context, int result);
// Before a real channel or context is destroyed: the provider's own fd goes
// back in place (destroyed() wraps it again if the destroy fails).
void unwrap_fd(Run& run, const void* handle);
// libibverbs hands file descriptors to the kernel when it creates objects:
// a CQ's completion channel (channel->fd) and, for CQs, QPs, SRQs and WQs,
// the context's async event file (context->async_fd), and the kernel knows
// them by those fds only. For such a call on a real provider the channel or
// context holds the provider's own fd, then the harness's again. Loans
// nest and overlap across threads (counted per object); another thread
// polling the fd meanwhile sees the provider's fd, which is readable for
// the provider's events. No-op for simulated objects and nullptr.
class FdLoan {
 public:
  FdLoan(Run& run, ibv_comp_channel* channel);
  FdLoan(Run& run, ibv_context* context);
  ~FdLoan();
  FdLoan(const FdLoan&) = delete;
  FdLoan& operator=(const FdLoan&) = delete;

 private:
  void lend(const void* handle, int* fd);
  Run& run_;
  const void* handle_ = nullptr;
  int* fd_ = nullptr;  // channel->fd or context->async_fd
};

// A real port the interposer has taken down reads as down.
void adjust_port_attr(Run& run, const ibv_context* context, uint8_t port, ibv_port_attr* attr);

// ---- calls ------------------------------------------------------------------
// Before a call on `object` (any verbs object, or a context): counts the
// opportunity for call-site faults (async_event, port_down, device_fatal,
// verb_failure of `verb`) and injects them. Returns the errno the call
// must fail with, or 0 to go ahead.
// `verb` is empty for calls no verb_failure rule can name. After an
// injected DEVICE_FATAL on a real provider the call fails with EIO, unless
// it still works on a dead device (OnDeadDevice::work: the polls).
enum class OnDeadDevice : bool { fail, work };
int before_call(Run& run, std::optional<Verb> verb, const void* object,
                OnDeadDevice on_dead = OnDeadDevice::fail);

// A modify of `qp` to RTR that cm_connect_error refuses (librdmacm's, as it
// reads the CONNECT_RESPONSE the fault fired on): EINVAL, as a QP that
// cannot take the REP's path or depths answers; else 0.
int cm_refused_modify(Run& run, const void* qp, const ibv_qp_attr& attr, int mask);

// A new object from a create call: names it ("qp#3") and traces the call.
void created(Run& run, ObjectKind kind, const void* handle, const void* parent, std::string_view call,
             Fields args = {});
// The SGE limits of a new QP or SRQ (what ibv_create_qp(3) left in cap):
// the harness reads no more of a posted WR's sg_list than they allow.
void sge_limits(Run& run, const void* handle, std::uint32_t max_send_sge, std::uint32_t max_recv_sge);
// A context or PD that the library which asked for it keeps until exit by
// design (librdmacm's): `caller` is the return address of the exported
// call; objects of any other caller are left alone.
void kept_by_library(Run& run, const void* handle, const void* caller);
// A creation that failed (handle nullptr) is traced against the parent.
void create_failed(Run& run, const void* parent, std::string_view call, Fields args, int error);
// A destroy call; the name is forgotten when it succeeded.
void destroyed(Run& run, const void* handle, std::string_view call, int result);
// Before the provider's destroy of a CQ, QP, SRQ or channel (the runtime
// checks look at what the application leaves unacknowledged, and at
// threads still waiting on the channel).
void destroying(Run& run, const void* handle);
// A thread of the program calls pthread_join (the checks' teardown window).
void joining(Run& run);
// After a successful ibv_modify_qp.
void qp_modified(Run& run, ibv_qp* qp, const ibv_qp_attr& attr, int mask);
// Any other call worth a trace record.
void traced(Run& run, const void* object, std::string_view call, Fields fields);

// ---- events -----------------------------------------------------------------
// ibv_get_cq_event / ibv_ack_cq_events and the asynchronous events go
// through calls.h like every verb (completion_events.cpp,
// async_events.cpp: injected events, dropped and coalesced events, trace
// records).
// A thread of the program waits on `fd` in poll(2), select(2), epoll_wait(2)
// or read(2), and the scheduler ended the wait for completions the harness
// holds back on the CQs of the channel whose fd it is (delayed_completion):
// they become visible, as before ibv_get_cq_event. Nothing when `fd` is no
// channel's.
void release_held_for_waiter(Run& run, int fd);
// Whether such a wait on `fd` ends for held completions (the scheduler
// asks, to know the waiter can run).
bool holds_for_waiter(Run& run, int fd);

}  // namespace verbfault::interposer

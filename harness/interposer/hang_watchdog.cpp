#include "hang_watchdog.h"

#include "hang_watch.h"
#include "scheduler.h"
#include "run.h"
#include "thread_world.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace verbfault::interposer::hang {

namespace {

// What one application thread was last seen doing. Written by the thread
// that claimed it (relaxed stores), read by the watchdog.
struct Slot {
  std::atomic<pid_t> tid{0};             // 0: free
  std::atomic<std::uint64_t> claims{0};  // bumped at each claim: a new thread in the slot
  std::atomic<std::uint64_t> idle_calls{0};
  std::atomic<const char*> idle_call{nullptr};
  std::atomic<std::uint64_t> idle_object{0};  // packed ObjectRef
  std::atomic<const char*> blocked_in{nullptr};
  std::atomic<std::uint64_t> blocked_on{0};  // packed ObjectRef
};

// More threads than this are not watched: a thread without a slot is never
// in sight, so such a program is never judged hung (it is not wrongly
// ended either).
constexpr std::size_t kSlots = 256;
Slot g_slots[kSlots];

// Written once by configure() before the watchdog starts.
std::uint64_t g_after_ns = 0;
std::atomic<std::uint64_t> g_progress{0};
// Bumped in a forked child: the slots of the parent's threads are gone.
std::atomic<std::uint64_t> g_generation{0};

std::uint64_t pack(ObjectRef object) {
  return (std::uint64_t{static_cast<std::uint8_t>(object.kind)} + 1) << 32 | object.index;
}

// "cq#0", or "" for none.
std::string name_of(std::uint64_t packed) {
  if (packed == 0) return "";
  return to_string(
      ObjectRef{static_cast<ObjectKind>((packed >> 32) - 1), static_cast<std::uint32_t>(packed)});
}

// The calling thread's slot (initial-exec: see scheduler.cpp, t_self; an
// empty poll reads it), and the generation it was claimed in.
__attribute__((tls_model("initial-exec"))) thread_local Slot* t_slot = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t t_slot_generation = 0;
// Its destructor gives a thread's slot back when the thread ends. A key,
// not a thread_local with a destructor: registering one of those
// allocates, on the first empty poll of each thread.
pthread_key_t g_slot_key;

void release_slot(void* slot) {
  static_cast<Slot*>(slot)->tid.store(0, std::memory_order_release);
}

Slot* my_slot() noexcept {
  const std::uint64_t generation = g_generation.load(std::memory_order_relaxed);
  if (t_slot != nullptr && t_slot_generation == generation) [[likely]]
    return t_slot;
  t_slot = nullptr;
  const pid_t tid = gettid();
  for (Slot& slot : g_slots) {
    pid_t free = 0;
    if (slot.tid.compare_exchange_strong(free, tid, std::memory_order_acq_rel)) {
      slot.claims.fetch_add(1, std::memory_order_relaxed);
      slot.idle_calls.store(0, std::memory_order_relaxed);
      slot.blocked_in.store(nullptr, std::memory_order_relaxed);
      t_slot = &slot;
      t_slot_generation = generation;
      pthread_setspecific(g_slot_key, &slot);
      return &slot;
    }
  }
  return nullptr;
}

// The watchdog's memory of each slot (only the watchdog thread touches it).
struct Remembered {
  std::uint64_t claims = 0;
  std::uint64_t idle_calls = 0;
  std::uint64_t idle_at_ns = 0;  // when its idle calls were last seen to grow
};
Remembered g_remembered[kSlots];
checkers::HangWatch* g_watch = nullptr;

// At most this many threads are looked at; a program with more is never
// judged hung (the rest are out of sight).
constexpr std::size_t kMaxThreads = 1024;

// Whether thread `tid` is one of the harness's own (the watchdog, the
// simulated fabric's wire): they are named "vf-..." (comm, proc(5)).
bool harness_thread(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[16] = {};
  const ssize_t n = ::read(fd, name, sizeof name - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(name, "vf-", 3) == 0;
}

// The program's threads (the process's, less the harness's own), by kernel
// id, into `tids`; their number, or kMaxThreads + 1 when there are more. By
// getdents64(2) into a buffer on the stack: a look allocates nothing (a
// program counting its allocations sees none of the watchdog's).
std::size_t other_threads(pid_t (&tids)[kMaxThreads]) {
  const int fd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return kMaxThreads + 1;
  std::size_t count = 0;
  alignas(8) char buffer[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
      at += entry->d_reclen;
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid <= 0 || harness_thread(tid)) continue;
      if (count == kMaxThreads) {
        ::close(fd);
        return kMaxThreads + 1;
      }
      tids[count++] = tid;
    }
  }
  ::close(fd);
  return count;
}

struct Seen {
  std::string label;  // "thread 1" (the scheduler's number) or "tid 4242"
  std::string what;
  std::uint64_t object = 0;  // packed: what it waits on, if a verbs object
};

[[noreturn]] void end_hung_run(const std::vector<Seen>& seen, std::uint64_t quiet_ns) {
  std::string waits;
  std::uint64_t object = 0;
  for (const Seen& one : seen) {
    waits += "  " + one.label + ": " + one.what + "\n";
    if (object == 0) object = one.object;
  }
  char message[320];
  std::snprintf(message, sizeof message,
                "no verbs call made progress for %.1f s while every thread waited or spun in a "
                "call the harness sees (a time limit: --hang-after S, VERBFAULT_HANG_AFTER)",
                static_cast<double>(quiet_ns) / 1e9);
  Run& run = process_run();
  run.mutex.lock();
  // The finding is about what the threads wait on; else the first context.
  const Tracked* target = nullptr;
  const std::string wanted = name_of(object);
  for (ObjectKind kind :
       {ObjectKind::channel, ObjectKind::cq, ObjectKind::context, ObjectKind::qp, ObjectKind::srq})
    for (Tracked* tracked : run.registry.all(kind))
      if (target == nullptr && tracked->name() == wanted) target = tracked;
  if (target == nullptr)
    for (Tracked* tracked : run.registry.all(ObjectKind::context))
      if (target == nullptr) target = tracked;
  if (target != nullptr) run.checkers.hung(run, *target, message, waits);
  std::fprintf(stderr, "verbfault: %s; what each thread waits for:\n%s", message, waits.c_str());
  std::fprintf(stderr, "verbfault: the program made no progress; ending it with exit status %d\n",
               exit_status::kHang);
  run.end_run(exit_status::kHang);
}

}  // namespace

void configure(std::uint64_t after_ns) {
  if (after_ns != 0 && pthread_key_create(&g_slot_key, release_slot) != 0) after_ns = 0;
  g_after_ns = after_ns;
  static checkers::HangWatch watch(0);
  watch = checkers::HangWatch(after_ns);
  g_watch = &watch;
  // A forked child has one thread: the parent's others are not its own.
  pthread_atfork(nullptr, nullptr, [] {
    g_generation.fetch_add(1, std::memory_order_relaxed);
    for (Slot& slot : g_slots) slot.tid.store(0, std::memory_order_relaxed);
    for (Remembered& remembered : g_remembered) remembered = {};
    if (g_watch != nullptr) *g_watch = checkers::HangWatch(g_after_ns);
  });
}

bool enabled() {
  return g_after_ns != 0;
}

std::uint64_t look_interval_ns() {
  return std::clamp<std::uint64_t>(g_after_ns / 8, 10'000'000, 250'000'000);
}

void progressed() noexcept {
  g_progress.fetch_add(1, std::memory_order_relaxed);
}

void idle(const char* call, ObjectRef object) noexcept {
  if (g_after_ns == 0) return;
  Slot* slot = my_slot();
  if (slot == nullptr) return;
  slot->idle_call.store(call, std::memory_order_relaxed);
  slot->idle_object.store(pack(object), std::memory_order_relaxed);
  slot->idle_calls.store(slot->idle_calls.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
}

Blocked::Blocked(const char* call, ObjectRef object) noexcept {
  enter(call, pack(object));
}

Blocked::Blocked(const char* call) noexcept {
  enter(call, 0);
}

void Blocked::enter(const char* call, std::uint64_t object) noexcept {
  Slot* slot = g_after_ns == 0 ? nullptr : my_slot();
  if (slot == nullptr) return;
  previous_ = slot->blocked_in.load(std::memory_order_relaxed);
  slot->blocked_on.store(object, std::memory_order_relaxed);
  slot->blocked_in.store(call, std::memory_order_release);
}

Blocked::~Blocked() {
  if (g_after_ns == 0) return;
  if (Slot* slot = my_slot()) slot->blocked_in.store(previous_, std::memory_order_release);
}

// What a slot's thread was seen doing at the last look.
enum class Doing : std::uint8_t { unseen, blocked, spinning };

void look(std::uint64_t wall_ns) {
  if (g_after_ns == 0 || g_watch == nullptr || !g_active.load(std::memory_order_relaxed)) return;
  // Nothing here allocates unless the run is hung.
  static pid_t tids[kMaxThreads];
  static pid_t modelled[kMaxThreads];
  static Doing doing[kSlots];
  const std::size_t threads = other_threads(tids);
  // A verbs call that blocks, or verbs calls that keep returning nothing
  // (spinning: its empty calls grew within the last second).
  const std::uint64_t spin_window = std::max<std::uint64_t>(1'000'000'000, 2 * look_interval_ns());
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    doing[i] = Doing::unseen;
    if (slot.tid.load(std::memory_order_acquire) == 0) continue;
    Remembered& remembered = g_remembered[i];
    const std::uint64_t claims = slot.claims.load(std::memory_order_relaxed);
    const std::uint64_t calls = slot.idle_calls.load(std::memory_order_relaxed);
    if (claims != remembered.claims) remembered = {claims, 0, 0};
    if (calls != remembered.idle_calls) {
      remembered.idle_calls = calls;
      remembered.idle_at_ns = wall_ns;
    }
    if (slot.blocked_in.load(std::memory_order_acquire) != nullptr)
      doing[i] = Doing::blocked;
    else if (remembered.idle_at_ns != 0 && wall_ns - remembered.idle_at_ns <= spin_window)
      doing[i] = Doing::spinning;
  }
  // A wait the scheduler models: a join, a lock, a condition, a sleep, a
  // channel, a socket with a channel.
  scheduler::Scheduler* const started = thread_calls::started_scheduler();
  const std::size_t waiting = started ? started->waiting_threads(modelled, kMaxThreads) : 0;
  // In sight: every thread of the program is seen waiting or spinning.
  auto slot_of = [&](pid_t tid) -> std::size_t {
    for (std::size_t i = 0; i < kSlots; ++i)
      if (doing[i] != Doing::unseen && g_slots[i].tid.load(std::memory_order_relaxed) == tid)
        return i;
    return kSlots;
  };
  auto is_modelled = [&](pid_t tid) {
    return std::find(modelled, modelled + waiting, tid) != modelled + waiting;
  };
  std::size_t in_sight = 0;
  if (threads <= kMaxThreads)
    for (std::size_t t = 0; t < threads; ++t)
      in_sight += slot_of(tids[t]) != kSlots || is_modelled(tids[t]);
  const bool all = threads <= kMaxThreads && threads > 0 && in_sight == threads;
  if (!g_watch->hung({wall_ns, g_progress.load(std::memory_order_relaxed), all})) return;

  // Hung: what each thread waits for, the scheduler's threads first, by
  // number, then the others by kernel id. A verbs wait is said as the
  // interposer saw it; else the scheduler's words; else the spin.
  std::map<pid_t, scheduler::Scheduler::Seen> scheduled;
  if (started)
    for (scheduler::Scheduler::Seen& thread : started->seen())
      scheduled[thread.tid] = std::move(thread);
  std::vector<std::pair<std::pair<int, pid_t>, Seen>> seen;
  for (std::size_t t = 0; t < threads; ++t) {
    const pid_t tid = tids[t];
    const std::size_t i = slot_of(tid);
    const auto known = scheduled.find(tid);
    Seen one;
    if (i != kSlots && doing[i] == Doing::blocked) {
      const char* call = g_slots[i].blocked_in.load(std::memory_order_acquire);
      one.object = g_slots[i].blocked_on.load(std::memory_order_relaxed);
      one.what = std::string(call != nullptr ? call : "a verbs call") +
                 (one.object != 0 ? " on " + name_of(one.object) : "");
    } else if (known != scheduled.end() && known->second.waiting) {
      one.what = known->second.what;
    } else if (i != kSlots) {
      one.object = g_slots[i].idle_object.load(std::memory_order_relaxed);
      const char* call = g_slots[i].idle_call.load(std::memory_order_relaxed);
      one.what = std::string(call != nullptr ? call : "a verbs call") + " of " +
                 name_of(one.object) + " returning nothing, over and over";
    } else {
      continue;
    }
    const bool numbered = known != scheduled.end();
    one.label =
        numbered ? "thread " + std::to_string(known->second.id) : "tid " + std::to_string(tid);
    seen.push_back({{numbered ? 0 : 1, numbered ? static_cast<pid_t>(known->second.id) : tid},
                    std::move(one)});
  }
  std::sort(seen.begin(), seen.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Seen> report;
  for (auto& [order, one] : seen) report.push_back(std::move(one));
  end_hung_run(report, g_watch->quiet_ns(wall_ns));
}

}  // namespace verbfault::interposer::hang

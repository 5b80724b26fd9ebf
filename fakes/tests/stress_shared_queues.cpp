// Stress: eight threads posting and polling across shared CQs and one SRQ
// of the simulated device, every completion accounted for exactly.
//
//   stress_shared_queues OPERATIONS [--faults [STATUS]]
//
// Eight RC pairs on vfsim0: thread t owns the sender QP of pair t and posts
// SEND_WITH_IMM on it (the immediate is the message's number; payload and
// length are a function of it); the eight receiver QPs take their receives
// from one SRQ. The senders of pairs 0-3 complete on send CQ 0, of 4-7 on
// send CQ 1; every receiver on the one receive CQ. Every thread polls all
// three CQs, whoever's completions they hold, and refills the SRQ with the
// buffer of each receive it polled. OPERATIONS counts work requests posted
// (sends and receives, about half each).
//
// Accounting, checked at the end: every send's wr_id completes exactly once;
// every receive's wr_id completes at most once (what is still posted at the
// end is the SRQ's); every message whose send succeeded arrived exactly once,
// with its length and bytes; no message arrived twice. Exit status 0 when
// all of it holds, 1 when not, 2 when the setup failed.
//
// --faults: the run is under `verbfault run` with a plan whose errors
// target the senders' SEND_WITH_IMM (flush, completion_error, ...). A send
// then completes with success or an error; after a QP's first error
// everything later on it is an error too (the injected status, or
// IBV_WC_WR_FLUSH_ERR: ibv_poll_cq(3), IBA 10.7.3.1). A failed send's
// message may still have arrived (an effect-level error rewrites a
// completion of a WR the device executed), at most once. The owner of a
// failed QP stops posting on it, waits for its outstanding sends, and goes
// on with a newly connected pair (the failed pair stays until the end, so
// nothing of it is lost from the shared CQs). STATUS (a number of enum
// ibv_wc_status) is the one error the plan injects: any other but a flush
// fails the run. The last line counts the errors, for the test to compare
// with the trace's faults.
// Under --faults a thread posts on its QP under its send CQ's poll lock:
// the harness reports a post to a QP whose error completion was polled
// (error.post_to_qp_in_err), and only the poller knows that it was.
#include "verbfault_testing/rc_connect.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr int kWindow = 16;        // sends in flight per thread (its QP's max_send_wr)
constexpr int kSlot = 64;          // bytes of a send or receive buffer
constexpr int kReceives = 512;     // receive buffers, all posted to the SRQ at the start
constexpr int kMaxPairs = 255;     // pairs per thread over the run (generations)
constexpr int kCqDepth = 1 << 16;  // room for the QPs of every generation (F16)
constexpr int kPollBatch = 16;
constexpr uint64_t kRecvTag = 1ull << 63;

// A message's number: thread * per_thread + seq. Its length and bytes.
uint32_t length_of(uint32_t message) {
  return 8 + message % (kSlot - 8 + 1);
}
uint8_t byte_of(uint32_t message, uint32_t i) {
  return static_cast<uint8_t>(message * 131u + i * 7u + (message >> 8));
}

// A send's wr_id: its generation (which pair of the thread) and message.
uint64_t send_wr_id(uint32_t generation, uint32_t message) {
  return static_cast<uint64_t>(generation) << 32 | message;
}
// A receive's wr_id: its serial number (each posted receive has its own)
// and the buffer it fills.
uint64_t recv_wr_id(uint64_t serial, uint32_t buffer) {
  return kRecvTag | serial << 16 | buffer;
}

enum SendState : uint8_t { kUnposted = 0, kPosted, kSucceeded, kFailedInjected, kFlushed };

struct Pair {
  ibv_qp* sender = nullptr;
  ibv_qp* receiver = nullptr;
  // Set by whichever thread polls the pair's first error completion; read
  // by the owner before each post.
  std::atomic<bool> failed{false};
};

struct Run {
  bool faults = false;
  int injected_status = -1;  // --faults STATUS; -1: any
  uint32_t per_thread = 0;   // messages each thread sends, at most
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* send_cq[2] = {};
  ibv_cq* recv_cq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_mr* mr = nullptr;
  uint16_t lid = 0;
  ibv_global_route grh{};
  // Registered memory: per thread kWindow send slots, then kReceives
  // receive buffers.
  std::vector<uint8_t> memory;
  // Guards each send CQ's polls in --faults mode (see the file comment).
  std::mutex poll_lock[2];

  // Per message (thread * per_thread + seq), each written by the thread
  // that polls its completions; read by the owner (send_state, to reuse a
  // slot) and by main after the threads are joined.
  std::unique_ptr<std::atomic<uint8_t>[]> send_state;
  std::unique_ptr<std::atomic<uint8_t>[]> send_completions;
  std::unique_ptr<std::atomic<uint8_t>[]> arrivals;
  std::unique_ptr<std::atomic<uint8_t>[]> send_generation;
  // Per receive serial: how often its wr_id completed (at most once).
  std::unique_ptr<std::atomic<uint8_t>[]> recv_completions;
  uint64_t max_receives = 0;
  std::atomic<uint64_t> next_receive_serial{0};

  // pairs[t][g]: thread t's generation g; created by t, read by pollers
  // through the wr_id's generation once published (pair_count[t], release).
  std::unique_ptr<Pair> pairs[kThreads][kMaxPairs];
  std::atomic<uint32_t> pair_count[kThreads] = {};

  std::atomic<uint64_t> sends_posted{0}, sends_completed{0};
  std::atomic<uint64_t> receives_posted{0}, receives_completed{0};
  std::atomic<int> posters_done{0};
  std::atomic<uint64_t> injected{0}, flushed{0};
  std::atomic<int> last_error_status{-1};
  std::atomic<bool> broken{false};  // an accounting error: stop, and say which

  uint8_t* send_slot(int thread, uint32_t seq) {
    return memory.data() + (static_cast<size_t>(thread) * kWindow + seq % kWindow) * kSlot;
  }
  uint8_t* recv_slot(uint32_t buffer) {
    return memory.data() + (static_cast<size_t>(kThreads) * kWindow + buffer) * kSlot;
  }
};

Run run;

void fail(const char* what, uint64_t a, uint64_t b = 0) {
  if (!run.broken.exchange(true))
    std::fprintf(stderr, "stress_shared_queues: %s (%llu, %llu)\n", what,
                 static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
}

bool connect_pair(int thread) {
  const uint32_t g = run.pair_count[thread].load(std::memory_order_relaxed);
  if (g == kMaxPairs) return false;
  auto pair = std::make_unique<Pair>();
  ibv_qp_init_attr attr{};
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = kWindow;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.send_cq = run.send_cq[thread / 4];
  attr.recv_cq = run.recv_cq;
  attr.srq = run.srq;
  attr.sq_sig_all = 1;
  pair->sender = ibv_create_qp(run.pd, &attr);
  pair->receiver = ibv_create_qp(run.pd, &attr);
  if (pair->sender == nullptr || pair->receiver == nullptr) return false;
  verbfault::testing::RcConnectOptions to_receiver;
  to_receiver.dest_qp_num = pair->receiver->qp_num;
  to_receiver.dlid = run.lid;
  to_receiver.grh = run.grh;
  verbfault::testing::RcConnectOptions to_sender = to_receiver;
  to_sender.dest_qp_num = pair->sender->qp_num;
  if (verbfault::testing::rc_connect(pair->sender, to_receiver) != 0 ||
      verbfault::testing::rc_connect(pair->receiver, to_sender) != 0)
    return false;
  run.pairs[thread][g] = std::move(pair);
  run.pair_count[thread].store(g + 1, std::memory_order_release);
  return true;
}

bool post_receive(uint32_t buffer) {
  const uint64_t serial = run.next_receive_serial.fetch_add(1, std::memory_order_relaxed);
  if (serial >= run.max_receives) {
    fail("more receives than budgeted", serial);
    return false;
  }
  ibv_sge sge{reinterpret_cast<uint64_t>(run.recv_slot(buffer)), kSlot, run.mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = recv_wr_id(serial, buffer);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_srq_recv(run.srq, &wr, &bad) != 0) {
    fail("ibv_post_srq_recv failed", serial);
    return false;
  }
  run.receives_posted.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void account_send(const ibv_wc& wc) {
  const uint32_t message = static_cast<uint32_t>(wc.wr_id);
  const uint32_t generation = static_cast<uint32_t>(wc.wr_id >> 32);
  if (message >= kThreads * run.per_thread) return fail("send wr_id out of range", wc.wr_id);
  if (run.send_completions[message].fetch_add(1) != 0)
    return fail("a send completed twice", message);
  if (run.send_generation[message].load() != generation)
    return fail("a send completed with another generation's wr_id", message, generation);
  uint8_t state;
  if (wc.status == IBV_WC_SUCCESS) {
    if (wc.opcode != IBV_WC_SEND) return fail("a send completed with opcode", wc.opcode);
    state = kSucceeded;
  } else {
    if (!run.faults) return fail("a send failed without a plan", message, wc.status);
    const uint32_t thread = message / run.per_thread;
    if (generation < run.pair_count[thread].load(std::memory_order_acquire))
      run.pairs[thread][generation]->failed.store(true, std::memory_order_release);
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      state = kFlushed;
      run.flushed.fetch_add(1, std::memory_order_relaxed);
    } else {
      if (run.injected_status >= 0 && wc.status != run.injected_status)
        return fail("a send failed with a status no rule injects", message, wc.status);
      state = kFailedInjected;
      run.injected.fetch_add(1, std::memory_order_relaxed);
      run.last_error_status.store(wc.status, std::memory_order_relaxed);
    }
  }
  run.send_state[message].store(state, std::memory_order_release);
  run.sends_completed.fetch_add(1, std::memory_order_release);
}

void account_receive(const ibv_wc& wc) {
  const uint64_t serial = (wc.wr_id & ~kRecvTag) >> 16;
  const uint32_t buffer = static_cast<uint32_t>(wc.wr_id & 0xffff);
  if (serial >= run.max_receives || buffer >= kReceives)
    return fail("receive wr_id out of range", wc.wr_id);
  if (run.recv_completions[serial].fetch_add(1) != 0)
    return fail("a receive completed twice", serial);
  // The SRQ's receives are not flushed by a QP's error (IBA 10.2.9.5): a
  // receive completes with success or not at all.
  if (wc.status != IBV_WC_SUCCESS) return fail("a receive failed", serial, wc.status);
  if (wc.opcode != IBV_WC_RECV || !(wc.wc_flags & IBV_WC_WITH_IMM))
    return fail("a receive without its immediate", serial, wc.opcode);
  const uint32_t message = ntohl(wc.imm_data);
  if (message >= kThreads * run.per_thread) return fail("immediate out of range", message);
  if (wc.byte_len != length_of(message)) return fail("wrong length", message, wc.byte_len);
  const uint8_t* bytes = run.recv_slot(buffer);
  for (uint32_t i = 0; i < wc.byte_len; ++i)
    if (bytes[i] != byte_of(message, i)) return fail("wrong payload byte", message, i);
  if (run.arrivals[message].fetch_add(1) != 0) return fail("a message arrived twice", message);
  run.receives_completed.fetch_add(1, std::memory_order_release);
  post_receive(buffer);
}

// One poll of a CQ; whether it returned anything.
bool poll_once(ibv_cq* cq, std::mutex* lock) {
  ibv_wc wc[kPollBatch];
  std::unique_lock<std::mutex> guard;
  if (lock != nullptr) guard = std::unique_lock<std::mutex>(*lock);
  const int n = ibv_poll_cq(cq, kPollBatch, wc);
  if (n < 0) {
    fail("ibv_poll_cq failed", static_cast<uint64_t>(-n));
    return false;
  }
  for (int i = 0; i < n; ++i) {
    if (wc[i].wr_id & kRecvTag)
      account_receive(wc[i]);
    else
      account_send(wc[i]);
  }
  return n > 0;
}

bool poll_all(int thread) {
  std::mutex* lock0 = run.faults ? &run.poll_lock[0] : nullptr;
  std::mutex* lock1 = run.faults ? &run.poll_lock[1] : nullptr;
  // Own send CQ first, then the other's, then the receives.
  const int own = thread / 4;
  bool any = poll_once(run.send_cq[own], own == 0 ? lock0 : lock1);
  any |= poll_once(run.send_cq[1 - own], own == 0 ? lock1 : lock0);
  any |= poll_once(run.recv_cq, nullptr);
  return any;
}

// Whether every send before `message` of this thread's `generation` is done.
bool generation_drained(int thread, uint32_t first, uint32_t next) {
  for (uint32_t seq = first; seq < next; ++seq)
    if (run.send_state[thread * run.per_thread + seq].load(std::memory_order_acquire) == kPosted)
      return false;
  return true;
}

void worker(int thread) {
  uint32_t seq = 0;
  uint32_t generation = 0;
  uint32_t generation_start = 0;  // first seq posted on the current pair
  bool posting = true;
  while (!run.broken.load(std::memory_order_relaxed)) {
    if (posting) {
      Pair& pair = *run.pairs[thread][generation];
      if (pair.failed.load(std::memory_order_acquire)) {
        // Wait for the failed pair's sends, then go on with a new pair.
        if (generation_drained(thread, generation_start, seq)) {
          if (!connect_pair(thread)) {
            fail("cannot connect a new pair", thread, generation);
            break;
          }
          ++generation;
          generation_start = seq;
        }
      } else if (seq == run.per_thread) {
        posting = false;
        run.posters_done.fetch_add(1, std::memory_order_release);
      } else {
        const uint32_t message = thread * run.per_thread + seq;
        // The slot's previous send (seq - kWindow) must be done with it.
        const bool slot_free = seq < kWindow || run.send_state[message - kWindow].load(
                                                    std::memory_order_acquire) != kPosted;
        if (slot_free) {
          uint8_t* slot = run.send_slot(thread, seq);
          const uint32_t length = length_of(message);
          for (uint32_t i = 0; i < length; ++i) slot[i] = byte_of(message, i);
          ibv_sge sge{reinterpret_cast<uint64_t>(slot), length, run.mr->lkey};
          ibv_send_wr wr{};
          wr.wr_id = send_wr_id(generation, message);
          wr.sg_list = &sge;
          wr.num_sge = 1;
          wr.opcode = IBV_WR_SEND_WITH_IMM;
          wr.imm_data = htonl(message);
          wr.send_flags = IBV_SEND_SIGNALED;
          run.send_generation[message].store(static_cast<uint8_t>(generation),
                                             std::memory_order_relaxed);
          run.send_state[message].store(kPosted, std::memory_order_relaxed);
          ibv_send_wr* bad = nullptr;
          int rc;
          {
            std::unique_lock<std::mutex> guard;
            if (run.faults) guard = std::unique_lock<std::mutex>(run.poll_lock[thread / 4]);
            // Under the lock: a poller that saw this pair fail has said so.
            if (run.faults && pair.failed.load(std::memory_order_acquire)) {
              run.send_state[message].store(kUnposted, std::memory_order_relaxed);
              continue;
            }
            rc = ibv_post_send(pair.sender, &wr, &bad);
          }
          if (rc != 0) {
            fail("ibv_post_send failed", message, static_cast<uint64_t>(rc));
            break;
          }
          run.sends_posted.fetch_add(1, std::memory_order_relaxed);
          ++seq;
        }
      }
    }
    poll_all(thread);
    if (!posting && run.posters_done.load(std::memory_order_acquire) == kThreads &&
        run.sends_completed.load(std::memory_order_acquire) ==
            run.sends_posted.load(std::memory_order_acquire))
      break;
  }
  // A message of a failed send may still be on its way (held by the
  // harness: delayed_completion); a few more rounds of polls let it out.
  for (int idle = 0; idle < 64 && !run.broken.load(std::memory_order_relaxed);)
    idle = poll_all(thread) ? 0 : idle + 1;
}

bool setup() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return false;
  for (int i = 0; i < n && run.context == nullptr; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0)
      run.context = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (run.context == nullptr) return false;
  ibv_port_attr port{};
  if (ibv_query_port(run.context, 1, &port) != 0) return false;
  run.lid = port.lid;
  if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
    // RoCE: addressed by the port's first GID (a RoCE v2 one on vfsim).
    ibv_gid_entry entries[16];
    const ssize_t found = ibv_query_gid_table(run.context, entries, 16, 0);
    for (ssize_t i = 0; i < found; ++i)
      if (entries[i].gid_type == IBV_GID_TYPE_ROCE_V2) {
        run.grh.dgid = entries[i].gid;
        run.grh.sgid_index = static_cast<uint8_t>(entries[i].gid_index);
        run.grh.hop_limit = 64;
        break;
      }
  }
  run.pd = ibv_alloc_pd(run.context);
  if (run.pd == nullptr) return false;
  run.memory.assign((static_cast<size_t>(kThreads) * kWindow + kReceives) * kSlot, 0);
  run.mr = ibv_reg_mr(run.pd, run.memory.data(), run.memory.size(), IBV_ACCESS_LOCAL_WRITE);
  for (ibv_cq*& cq : run.send_cq) cq = ibv_create_cq(run.context, kCqDepth, nullptr, nullptr, 0);
  run.recv_cq = ibv_create_cq(run.context, kCqDepth, nullptr, nullptr, 0);
  ibv_srq_init_attr srq{};
  srq.attr.max_wr = kReceives;
  srq.attr.max_sge = 1;
  run.srq = ibv_create_srq(run.pd, &srq);
  if (run.mr == nullptr || run.send_cq[0] == nullptr || run.send_cq[1] == nullptr ||
      run.recv_cq == nullptr || run.srq == nullptr)
    return false;
  for (int t = 0; t < kThreads; ++t)
    if (!connect_pair(t)) return false;
  for (uint32_t b = 0; b < kReceives; ++b)
    if (!post_receive(b)) return false;
  return true;
}

void teardown() {
  for (auto& thread_pairs : run.pairs)
    for (auto& pair : thread_pairs)
      if (pair) {
        ibv_destroy_qp(pair->sender);
        ibv_destroy_qp(pair->receiver);
      }
  ibv_destroy_srq(run.srq);
  for (ibv_cq* cq : run.send_cq) ibv_destroy_cq(cq);
  ibv_destroy_cq(run.recv_cq);
  ibv_dereg_mr(run.mr);
  ibv_dealloc_pd(run.pd);
  ibv_close_device(run.context);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stress_shared_queues OPERATIONS [--faults [STATUS]]\n");
    return 2;
  }
  char* end = nullptr;
  const unsigned long long operations = std::strtoull(argv[1], &end, 10);
  if (*end != '\0' || operations < 2 * kThreads || operations > 100'000'000) {
    std::fprintf(stderr,
                 "verbfault: stress_shared_queues OPERATIONS: expected a number of work "
                 "requests from %d to 100000000, got '%s'\n",
                 2 * kThreads, argv[1]);
    return 2;
  }
  run.faults = argc > 2 && std::string(argv[2]) == "--faults";
  if (argc > 2 && !run.faults) {
    std::fprintf(stderr, "verbfault: stress_shared_queues: expected --faults, got '%s'\n", argv[2]);
    return 2;
  }
  if (run.faults && argc > 3) {
    const long status = std::strtol(argv[3], &end, 10);
    if (*end != '\0' || status <= IBV_WC_SUCCESS || status > IBV_WC_TM_RNDV_INCOMPLETE) {
      std::fprintf(stderr,
                   "verbfault: stress_shared_queues --faults STATUS: expected a number of "
                   "enum ibv_wc_status, got '%s'\n",
                   argv[3]);
      return 2;
    }
    run.injected_status = static_cast<int>(status);
  }
  // Half the operations are sends, the other half the receives they take.
  run.per_thread = static_cast<uint32_t>(operations / 2 / kThreads);
  const size_t messages = static_cast<size_t>(kThreads) * run.per_thread;
  run.max_receives = kReceives + messages;
  run.send_state.reset(new std::atomic<uint8_t>[messages]());
  run.send_completions.reset(new std::atomic<uint8_t>[messages]());
  run.arrivals.reset(new std::atomic<uint8_t>[messages]());
  run.send_generation.reset(new std::atomic<uint8_t>[messages]());
  run.recv_completions.reset(new std::atomic<uint8_t>[run.max_receives]());
  if (!setup()) {
    std::fprintf(stderr, "stress_shared_queues: setup failed on vfsim0\n");
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The books, now that every thread is joined.
  uint64_t succeeded = 0, arrived = 0;
  for (size_t m = 0; m < messages && !run.broken; ++m) {
    const uint8_t state = run.send_state[m].load();
    const uint8_t arrivals = run.arrivals[m].load();
    arrived += arrivals;
    if (state == kPosted) fail("a send never completed", m);
    if (state != kUnposted && run.send_completions[m].load() != 1)
      fail("a send did not complete exactly once", m);
    if (state == kSucceeded) {
      ++succeeded;
      if (arrivals != 1) fail("a successful send's message did not arrive", m);
    } else if (state == kUnposted && arrivals != 0) {
      fail("an unposted message arrived", m);
    }
  }
  // Within each pair, no success after an error (the QP was in ERR).
  for (int t = 0; t < kThreads && !run.broken; ++t) {
    bool failed_before = false;
    uint8_t generation = 0;
    for (uint32_t seq = 0; seq < run.per_thread; ++seq) {
      const size_t m = static_cast<size_t>(t) * run.per_thread + seq;
      const uint8_t state = run.send_state[m].load();
      if (state == kUnposted) continue;
      if (run.send_generation[m].load() != generation) {
        generation = run.send_generation[m].load();
        failed_before = false;
      }
      if (state == kSucceeded && failed_before) fail("a send succeeded after its QP failed", m);
      if (state == kFailedInjected || state == kFlushed) failed_before = true;
    }
  }
  if (run.receives_completed.load() != arrived) fail("receives != arrivals", arrived);
  const uint64_t posted = run.sends_posted.load() + run.receives_posted.load();
  std::printf(
      "stress_shared_queues: %llu operations (%llu sends, %llu receives) in %.2f s: %llu "
      "sends succeeded, %llu arrived; errors: %llu injected (last status %d), %llu flushed; "
      "%llu pairs; %s\n",
      static_cast<unsigned long long>(posted),
      static_cast<unsigned long long>(run.sends_posted.load()),
      static_cast<unsigned long long>(run.receives_posted.load()), seconds,
      static_cast<unsigned long long>(succeeded), static_cast<unsigned long long>(arrived),
      static_cast<unsigned long long>(run.injected.load()), run.last_error_status.load(),
      static_cast<unsigned long long>(run.flushed.load()),
      [] {
        unsigned long long pairs = 0;
        for (auto& c : run.pair_count) pairs += c.load();
        return pairs;
      }(),
      run.broken ? "FAILED" : "OK");
  teardown();
  return run.broken ? 1 : 0;
}

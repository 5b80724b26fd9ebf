// Measures the wire between two forked processes, with plain pipes and a
// plain UNIX socket pair in the same run for comparison. Prints numbers,
// asserts nothing about them (the machine may be shared); exits non-zero
// only when a measurement could not run (a frame missing or wrong).
//
//   wire_throughput            the full run (a few seconds)
//   wire_throughput --quick    a smoke run (ctest: WireMeasure.quick)
//
// Stream: 64 KiB frames from a child to the parent, whose FrameHandler
// copies each into a 64 KiB buffer (as an RDMA WRITE lands in a memory
// region). "window": the parent acks every window/4 frames and the child keeps at
// most 64 frames (4 MiB) unacked, as a send queue of 64 would; "no window":
// the child sends them all at once (they queue in its process). The same
// with 64-byte frames and a window of 256 counts frames per second.
// Ping-pong: a 64-byte frame to the child, whose FrameHandler sends one
// back; "thread to thread" waits for the answer on the parent's main thread
// (the handler wakes it through a condition variable, as the device model
// wakes a thread waiting for a completion), "handler to
// handler" sends the next ping from the parent's FrameHandler.
#include "wire_process.h"

#include "wire/endpoint.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace verbfault::sim::wire;
using namespace verbfault::sim::wire::testing;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<Endpoint> join_or_die(const std::string& fabric, uint32_t index) {
  std::string error;
  auto endpoint = Endpoint::join(fabric, index, error);
  if (!endpoint) {
    std::fprintf(stderr, "%s\n", error.c_str());
    _exit(4);
  }
  return endpoint;
}

bool send_bytes(Endpoint& endpoint, uint32_t to, const void* bytes, std::size_t size) {
  const std::span<const uint8_t> parts[] = {{static_cast<const uint8_t*>(bytes), size}};
  return endpoint.send(to, parts);
}

// A result line, and whether it could be measured.
bool report(const char* what, bool ok, const std::string& value) {
  std::printf("%-52s %s\n", what, ok ? value.c_str() : "FAILED");
  std::fflush(stdout);
  return ok;
}

std::string gigabytes_per_second(double bytes, double seconds) {
  char text[96];
  std::snprintf(text, sizeof text, "%.2f GB/s (%.0f MiB in %.3f s)", bytes / seconds / 1e9,
                bytes / (1 << 20), seconds);
  return text;
}

std::string microseconds(std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (const double s : samples) sum += s;
  char text[96];
  std::snprintf(text, sizeof text, "%.1f us round trip (median; mean %.1f, p99 %.1f)",
                samples[samples.size() / 2] * 1e6, sum / samples.size() * 1e6,
                samples[samples.size() * 99 / 100] * 1e6);
  return text;
}

constexpr std::size_t kStreamFrameBytes = 64 * 1024;

// Frames of `frame_bytes`, child to parent. window == 0: no flow control.
bool wire_stream(uint32_t frames, std::size_t frame_bytes, uint32_t window, const char* what) {
  ScratchFabric fabric("stream" + std::to_string(frame_bytes) + "-" + std::to_string(window));
  Signal parent_joined, go, done;
  Child child = spawn([&]() -> int {
    if (parent_joined.wait() != 'j') return 10;
    auto endpoint = join_or_die(fabric.name(), 1);
    std::mutex mutex;
    std::condition_variable wakeup;
    uint32_t acked = 0;  // guarded by mutex
    endpoint->start(
        [&](uint32_t, std::span<const uint8_t> frame) {
          uint32_t count = 0;
          std::memcpy(&count, frame.data(), sizeof count);
          {
            std::lock_guard lock(mutex);
            acked = count;
          }
          wakeup.notify_one();
        },
        {});
    std::vector<uint8_t> payload(frame_bytes, 0x5a);
    if (go.wait() != 'g') return 11;
    for (uint32_t i = 0; i < frames; ++i) {
      if (window != 0) {
        std::unique_lock lock(mutex);
        wakeup.wait(lock, [&] { return i - acked < window; });
      }
      std::memcpy(payload.data(), &i, sizeof i);
      if (!send_bytes(*endpoint, 0, payload.data(), payload.size())) return 12;
    }
    // Stays until the parent has them all (some may still be queued here).
    return done.wait(120) == 'd' ? 0 : 13;
  });
  std::vector<uint8_t> region(frame_bytes);
  std::atomic<uint32_t> received{0};
  std::atomic<bool> wrong{false};
  auto endpoint = join_or_die(fabric.name(), 0);
  Endpoint* self = endpoint.get();
  endpoint->start(
      [&](uint32_t, std::span<const uint8_t> frame) {
        const uint32_t count = received.load(std::memory_order_relaxed);
        uint32_t seq = 0;
        std::memcpy(&seq, frame.data(), sizeof seq);
        if (frame.size() != frame_bytes || seq != count) wrong.store(true);
        std::memcpy(region.data(), frame.data(), std::min(frame.size(), region.size()));
        received.store(count + 1, std::memory_order_release);
        if (window != 0 && ((count + 1) % (window / 4) == 0 || count + 1 == frames)) {
          const uint32_t acked = count + 1;
          send_bytes(*self, 1, &acked, sizeof acked);
        }
      },
      {});
  parent_joined.post('j');
  eventually([&] { return endpoint->alive(1); });
  const auto start = Clock::now();
  go.post('g');
  const bool all = eventually([&] { return received.load() == frames; }, 120);
  const double elapsed = seconds_since(start);
  done.post('d');
  const bool ok = all && !wrong.load() && child.wait() == 0;
  if (frame_bytes >= 4096) {
    return report(what, ok, gigabytes_per_second(double(frames) * frame_bytes, elapsed));
  }
  char text[96];
  std::snprintf(text, sizeof text, "%.2f M frames/s (%u in %.3f s)", frames / elapsed / 1e6, frames,
                elapsed);
  return report(what, ok, text);
}

// 64-byte ping-pong; the child's handler answers each ping.
bool wire_ping_pong(uint32_t rounds, bool from_handler, const char* what) {
  ScratchFabric fabric(from_handler ? "pinghandler" : "pingthread");
  Signal parent_joined, done;
  Child child = spawn([&]() -> int {
    if (parent_joined.wait() != 'j') return 10;
    auto endpoint = join_or_die(fabric.name(), 1);
    Endpoint* self = endpoint.get();
    endpoint->start(
        [&](uint32_t, std::span<const uint8_t> frame) {
          send_bytes(*self, 0, frame.data(), frame.size());
        },
        {});
    return done.wait(120) == 'd' ? 0 : 13;
  });
  std::mutex mutex;
  std::condition_variable wakeup;
  std::atomic<uint32_t> pongs{0};
  std::atomic<bool> chain{false};  // the handler sends the next ping
  std::vector<double> samples;
  samples.reserve(rounds);
  uint8_t ping[64] = {};
  Clock::time_point sent_at;
  auto endpoint = join_or_die(fabric.name(), 0);
  Endpoint* self = endpoint.get();
  endpoint->start(
      [&](uint32_t, std::span<const uint8_t>) {
        const uint32_t count = pongs.load(std::memory_order_relaxed) + 1;
        if (chain.load(std::memory_order_acquire)) {
          samples.push_back(std::chrono::duration<double>(Clock::now() - sent_at).count());
          if (count < rounds) {
            sent_at = Clock::now();
            send_bytes(*self, 1, ping, sizeof ping);
          }
        }
        {
          // As the device model wakes a thread waiting for a completion.
          std::lock_guard lock(mutex);
          pongs.store(count, std::memory_order_release);
        }
        wakeup.notify_one();
      },
      {});
  parent_joined.post('j');
  eventually([&] { return endpoint->alive(1); });
  bool ok = true;
  // A few rounds first, so that both connections exist.
  for (uint32_t i = 0; i < 10 && ok; ++i) {
    ok = send_bytes(*endpoint, 1, ping, sizeof ping);
    ok = ok && eventually([&] { return pongs.load() == i + 1; });
  }
  pongs.store(0);
  if (from_handler) {
    chain.store(true, std::memory_order_release);
    sent_at = Clock::now();
    ok = ok && send_bytes(*endpoint, 1, ping, sizeof ping);
    ok = ok && eventually([&] { return pongs.load() == rounds; }, 120);
  } else {
    for (uint32_t i = 0; i < rounds && ok; ++i) {
      const auto start = Clock::now();
      ok = send_bytes(*endpoint, 1, ping, sizeof ping);
      if (ok) {
        std::unique_lock lock(mutex);
        wakeup.wait(lock, [&] { return pongs.load(std::memory_order_acquire) == i + 1; });
      }
      samples.push_back(seconds_since(start));
    }
  }
  done.post('d');
  ok = ok && child.wait() == 0 && samples.size() == rounds;
  return report(what, ok, ok ? microseconds(samples) : "");
}

// 64-byte ping-pong over two pipes, blocking read(2)/write(2). With
// `reader_thread`, the answers are read by another thread of the parent,
// which wakes the main thread through a condition variable: the shape of
// the wire's "thread to thread" (one more wakeup per round trip).
bool pipe_ping_pong(uint32_t rounds, bool reader_thread, const char* what) {
  int to_child[2];
  int to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) return report(what, false, "");
  const uint32_t total = rounds + 10;  // the first 10 are not measured
  Child child = spawn([&]() -> int {
    uint8_t buffer[64];
    for (uint32_t i = 0; i < total; ++i) {
      if (read(to_child[0], buffer, sizeof buffer) != sizeof buffer) return 10;
      if (write(to_parent[1], buffer, sizeof buffer) != sizeof buffer) return 11;
    }
    return 0;
  });
  std::mutex mutex;
  std::condition_variable wakeup;
  uint32_t answers = 0;  // guarded by mutex
  std::thread reader;
  if (reader_thread) {
    reader = std::thread([&] {
      uint8_t buffer[64];
      for (uint32_t i = 0; i < total; ++i) {
        if (read(to_parent[0], buffer, sizeof buffer) != sizeof buffer) return;
        {
          std::lock_guard lock(mutex);
          ++answers;
        }
        wakeup.notify_one();
      }
    });
  }
  uint8_t buffer[64] = {};
  std::vector<double> samples;
  bool ok = true;
  for (uint32_t i = 0; i < total && ok; ++i) {
    const auto start = Clock::now();
    ok = write(to_child[1], buffer, sizeof buffer) == sizeof buffer;
    if (ok && reader_thread) {
      std::unique_lock lock(mutex);
      ok = wakeup.wait_for(lock, std::chrono::seconds(10), [&] { return answers == i + 1; });
    } else if (ok) {
      ok = read(to_parent[0], buffer, sizeof buffer) == sizeof buffer;
    }
    if (i >= 10) samples.push_back(seconds_since(start));
  }
  if (reader.joinable()) {
    if (!ok) kill(child.pid(), SIGKILL);
    reader.join();
  }
  ok = child.wait() == 0 && ok;
  for (const int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  return report(what, ok, ok ? microseconds(samples) : "");
}

// 64-byte ping-pong over a UNIX socket pair, each side waiting in
// epoll_wait(2) and then reading: the mechanism under the wire's "handler
// to handler", without the wire.
bool socket_epoll_ping_pong(uint32_t rounds, const char* what) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return report(what, false, "");
  const uint32_t total = rounds + 10;  // the first 10 are not measured
  auto answer = [](int fd, uint8_t* buffer) {
    static thread_local int set = -1;
    if (set < 0) {
      set = epoll_create1(0);
      epoll_event event{};
      event.events = EPOLLIN;
      epoll_ctl(set, EPOLL_CTL_ADD, fd, &event);
    }
    epoll_event event{};
    return epoll_wait(set, &event, 1, 10000) == 1 && read(fd, buffer, 64) == 64;
  };
  Child child = spawn([&]() -> int {
    close(pair[0]);
    uint8_t buffer[64];
    for (uint32_t i = 0; i < total; ++i) {
      if (!answer(pair[1], buffer)) return 10;
      if (write(pair[1], buffer, sizeof buffer) != sizeof buffer) return 11;
    }
    return 0;
  });
  close(pair[1]);
  uint8_t buffer[64] = {};
  std::vector<double> samples;
  bool ok = true;
  for (uint32_t i = 0; i < total && ok; ++i) {
    const auto start = Clock::now();
    ok = write(pair[0], buffer, sizeof buffer) == sizeof buffer && answer(pair[0], buffer);
    if (i >= 10) samples.push_back(seconds_since(start));
  }
  close(pair[0]);
  ok = child.wait() == 0 && ok;
  return report(what, ok, ok ? microseconds(samples) : "");
}

// 64 KiB write(2)s on a blocking UNIX socket pair, read(2) into 256 KiB.
bool socketpair_stream(uint32_t frames, const char* what) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return report(what, false, "");
  Child child = spawn([&]() -> int {
    close(pair[0]);
    std::vector<uint8_t> payload(kStreamFrameBytes, 0x5a);
    for (uint32_t i = 0; i < frames; ++i) {
      std::size_t sent = 0;
      while (sent < payload.size()) {
        const ssize_t n = write(pair[1], payload.data() + sent, payload.size() - sent);
        if (n <= 0) return 10;
        sent += static_cast<std::size_t>(n);
      }
    }
    return 0;
  });
  close(pair[1]);
  std::vector<uint8_t> buffer(256 * 1024);
  const double total = double(frames) * kStreamFrameBytes;
  double got = 0;
  const auto start = Clock::now();
  while (got < total) {
    const ssize_t n = read(pair[0], buffer.data(), buffer.size());
    if (n <= 0) break;
    got += static_cast<double>(n);
  }
  const double elapsed = seconds_since(start);
  close(pair[0]);
  const bool ok = child.wait() == 0 && got == total;
  return report(what, ok, gigabytes_per_second(total, elapsed));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const uint32_t stream_frames = quick ? 512 : 32768;  // 32 MiB / 2 GiB
  const uint32_t blast_frames = quick ? 512 : 4096;    // 32 / 256 MiB
  const uint32_t small_frames = quick ? 10000 : 1000000;
  const uint32_t rounds = quick ? 200 : 20000;
  bool ok = true;
  ok &= wire_stream(stream_frames, kStreamFrameBytes, 64, "wire: 64 KiB frames, window 64:");
  ok &= wire_stream(blast_frames, kStreamFrameBytes, 0, "wire: 64 KiB frames, no window:");
  ok &= wire_stream(small_frames, 64, 256, "wire: 64 B frames, window 256:");
  ok &= socketpair_stream(stream_frames, "unix socketpair: 64 KiB writes (baseline):");
  ok &= wire_ping_pong(rounds, false, "wire: 64 B ping-pong, thread to thread:");
  ok &= wire_ping_pong(rounds, true, "wire: 64 B ping-pong, handler to handler:");
  ok &= pipe_ping_pong(rounds, true, "pipe + reader thread: 64 B ping-pong (baseline):");
  ok &= pipe_ping_pong(rounds, false, "pipe: 64 B ping-pong (baseline):");
  ok &= socket_epoll_ping_pong(rounds, "unix socketpair + epoll: 64 B ping-pong (baseline):");
  return ok ? 0 : 1;
}

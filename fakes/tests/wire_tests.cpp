// The local fabric's wire (sim/wire/): membership, frames between forked
// processes, the peer-gone news, the status table's quiescence, fork.
#include "wire_process.h"

#include "wire/byte_queue.h"
#include "wire/endpoint.h"
#include "wire/fabric_name.h"
#include "wire/status_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace verbfault::sim::wire::testing {
namespace {

using Bytes = std::vector<uint8_t>;
using Parts = std::vector<std::span<const uint8_t>>;

std::unique_ptr<Endpoint> must_join(const std::string& fabric,
                                    std::optional<uint32_t> index = std::nullopt) {
  std::string error;
  auto endpoint = Endpoint::join(fabric, index, error);
  if (!endpoint) ADD_FAILURE() << error;
  return endpoint;
}

// In a child.
std::unique_ptr<Endpoint> child_join(const std::string& fabric,
                                     std::optional<uint32_t> index = std::nullopt) {
  std::string error;
  auto endpoint = Endpoint::join(fabric, index, error);
  if (!endpoint) {
    std::fprintf(stderr, "child: %s\n", error.c_str());
    _exit(4);
  }
  return endpoint;
}

bool send_bytes(Endpoint& endpoint, uint32_t to, std::span<const uint8_t> bytes) {
  const std::span<const uint8_t> parts[] = {bytes};
  return endpoint.send(to, parts);
}
bool send_char(Endpoint& endpoint, uint32_t to, char c) {
  const uint8_t byte = static_cast<uint8_t>(c);
  return send_bytes(endpoint, to, {&byte, 1});
}

// ---- numbered frames whose size and bytes follow from their number ---------

constexpr uint32_t kOrderFrames = 10000;

std::size_t frame_size(uint32_t seq) {
  if (seq == kOrderFrames / 2) return 3 << 20;
  if (seq % 10 == 0) return 0;
  if (seq % 10 == 1) return 1;
  return (seq * 2654435761u) % 20000;
}
uint8_t frame_byte(uint32_t seq, std::size_t k) {
  return static_cast<uint8_t>(seq * 131u + k * 7u + (k >> 9));
}
Bytes make_frame(uint32_t seq) {
  Bytes bytes(frame_size(seq));
  for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = frame_byte(seq, k);
  return bytes;
}
bool frame_ok(uint32_t seq, std::span<const uint8_t> frame) {
  if (frame.size() != frame_size(seq)) return false;
  for (std::size_t k = 0; k < frame.size(); ++k) {
    if (frame[k] != frame_byte(seq, k)) return false;
  }
  return true;
}
// In 1 to 3 parts, some of them empty: the frame is their concatenation.
bool send_numbered(Endpoint& endpoint, uint32_t to, uint32_t seq) {
  const Bytes bytes = make_frame(seq);
  const std::span<const uint8_t> all(bytes);
  const std::size_t cut = all.size() / 3;
  Parts parts;
  switch (seq % 3) {
    case 0:
      parts = {all};
      break;
    case 1:
      parts = {all.first(cut), all.subspan(cut)};
      break;
    default:
      parts = {all.first(cut), all.subspan(cut, 0), all.subspan(cut)};
      break;
  }
  return endpoint.send(to, parts);
}

// Checks numbered frames from one member, in order.
struct OrderedReceiver {
  explicit OrderedReceiver(uint32_t from) : from(from) {}
  void operator()(uint32_t member, std::span<const uint8_t> frame) {
    const uint32_t seq = next.load(std::memory_order_relaxed);
    if (member != from || !frame_ok(seq, frame)) bad.store(true);
    next.store(seq + 1, std::memory_order_release);
  }
  uint32_t from;
  std::atomic<uint32_t> next{0};
  std::atomic<bool> bad{false};
};

// What a parent's handlers saw, in order. Declared before the endpoint
// whose handlers use it: they may run until the endpoint is destroyed.
struct Log {
  void frame(uint32_t member, std::span<const uint8_t> bytes) {
    std::lock_guard lock(mutex);
    events.push_back("frame " + std::to_string(member) + " " +
                     std::string(bytes.begin(), bytes.end()));
  }
  void gone(uint32_t member) {
    std::lock_guard lock(mutex);
    events.push_back("gone " + std::to_string(member));
  }
  std::size_t count(const std::string& event) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count(events.begin(), events.end(), event));
  }
  std::vector<std::string> copy() {
    std::lock_guard lock(mutex);
    return events;
  }
  Endpoint::FrameHandler frame_handler() {
    return [this](uint32_t member, std::span<const uint8_t> bytes) { frame(member, bytes); };
  }
  Endpoint::PeerGoneHandler gone_handler() {
    return [this](uint32_t member) { gone(member); };
  }
  std::mutex mutex;
  std::vector<std::string> events;
};

std::set<int> open_fds() {
  std::set<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd != dirfd(dir)) fds.insert(fd);
  }
  closedir(dir);
  return fds;
}

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

// ---- the outgoing queue ----------------------------------------------------

// Drains `queue` as a socket would, `chunk` bytes per write.
Bytes drain(ByteQueue& queue, std::size_t chunk) {
  Bytes out;
  while (!queue.empty()) {
    iovec iov[4];
    const int count = queue.gather(iov, 4);
    std::size_t room = chunk;
    std::size_t taken = 0;
    for (int i = 0; i < count && room > 0; ++i) {
      const std::size_t take = std::min(room, iov[i].iov_len);
      const auto* bytes = static_cast<const uint8_t*>(iov[i].iov_base);
      out.insert(out.end(), bytes, bytes + take);
      room -= take;
      taken += take;
    }
    queue.consume(taken);
  }
  return out;
}

TEST(WireByteQueue, KeepsBytesInOrderAcrossBlocks) {
  ByteQueue queue;
  Bytes expected;
  uint32_t seq = 0;
  // Appends that straddle blocks, drained in pieces of every size,
  // interleaved with more appends.
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{4095}, ByteQueue::kBlockBytes - 3,
                                  ByteQueue::kBlockBytes, 3 * ByteQueue::kBlockBytes + 17}) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{5}, ByteQueue::kBlockBytes + 1,
                                   std::size_t{70000}, 2 * ByteQueue::kBlockBytes}) {
      const Bytes bytes = [&] {
        Bytes b(size);
        for (std::size_t k = 0; k < size; ++k) b[k] = frame_byte(seq, k);
        ++seq;
        return b;
      }();
      queue.append(bytes);
      expected.insert(expected.end(), bytes.begin(), bytes.end());
      EXPECT_EQ(queue.size(), expected.size());
    }
    EXPECT_EQ(drain(queue, chunk), expected);
    EXPECT_TRUE(queue.empty());
    expected.clear();
  }
  // Half-drained, then more: the order holds.
  const Bytes first(1000, 1);
  const Bytes second(ByteQueue::kBlockBytes, 2);
  queue.append(first);
  iovec iov[4];
  ASSERT_EQ(queue.gather(iov, 4), 1);
  queue.consume(600);
  queue.append(second);
  Bytes rest(first.begin() + 600, first.end());
  rest.insert(rest.end(), second.begin(), second.end());
  EXPECT_EQ(drain(queue, 333), rest);
}

// ---- membership ------------------------------------------------------------

TEST(WireJoin, TakesTheLowestFreeIndex) {
  ScratchFabric fabric("lowest");
  auto a = must_join(fabric.name());
  auto b = must_join(fabric.name());
  auto c = must_join(fabric.name());
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->member(), 0u);
  EXPECT_EQ(b->member(), 1u);
  EXPECT_EQ(c->member(), 2u);
  EXPECT_EQ(a->fabric(), fabric.name());
  EXPECT_EQ(c->members(), (std::vector<uint32_t>{0, 1, 2}));
  b.reset();  // its name is free at once
  EXPECT_EQ(a->members(), (std::vector<uint32_t>{0, 2}));
  EXPECT_FALSE(a->alive(1));
  auto d = must_join(fabric.name());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->member(), 1u);
  EXPECT_TRUE(a->alive(1));
}

TEST(WireJoin, RequestedIndexOrATakenError) {
  ScratchFabric fabric("requested");
  auto a = must_join(fabric.name(), 5);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->member(), 5u);
  std::string error;
  EXPECT_EQ(Endpoint::join(fabric.name(), 5, error), nullptr);
  EXPECT_EQ(error,
            "verbfault: fabric '" + fabric.name() + "': member index 5 is taken by a live process");
  EXPECT_EQ(Endpoint::join(fabric.name(), kMaxMembers, error), nullptr);
  EXPECT_EQ(error,
            "verbfault: fabric '" + fabric.name() + "': member index 64 is out of range (0..63)");
  // Unrequested, the lowest free one is below it.
  auto b = must_join(fabric.name());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->member(), 0u);
}

TEST(WireJoin, AllIndexesTaken) {
  ScratchFabric fabric("full");
  std::vector<std::unique_ptr<Endpoint>> all;
  for (uint32_t i = 0; i < kMaxMembers; ++i) {
    all.push_back(must_join(fabric.name()));
    ASSERT_TRUE(all.back());
    EXPECT_EQ(all.back()->member(), i);
  }
  EXPECT_EQ(all[0]->members().size(), kMaxMembers);
  std::string error;
  EXPECT_EQ(Endpoint::join(fabric.name(), std::nullopt, error), nullptr);
  EXPECT_EQ(error, "verbfault: fabric '" + fabric.name() +
                       "': all 64 member indexes are taken by live processes");
}

TEST(WireJoin, BadFabricNames) {
  const std::string too_long(kMaxFabricNameLength + 1, 'a');
  for (const std::string& name : {std::string(), too_long, std::string("a/b"), std::string("a b"),
                                  std::string("caf\xc3\xa9")}) {
    std::string error;
    EXPECT_EQ(Endpoint::join(name, std::nullopt, error), nullptr) << name;
    EXPECT_EQ(error, "verbfault: fabric name '" + name +
                         "' is invalid: expected 1 to 64 characters from [A-Za-z0-9._-]");
  }
  // The longest and every allowed character.
  ScratchFabric fabric("x");
  const std::string longest = fabric.name() + "." + std::string(63 - fabric.name().size(), '_');
  ASSERT_EQ(longest.size(), kMaxFabricNameLength);
  auto a = must_join(longest);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->fabric(), longest);
  a.reset();
  ::unlink(status_table_path(longest).c_str());
}

TEST(WireJoin, StatusTableFileIsPrivateAndSized) {
  ScratchFabric fabric("file");
  auto a = must_join(fabric.name());
  ASSERT_TRUE(a);
  struct stat status {};
  ASSERT_EQ(stat(status_table_path(fabric.name()).c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<std::size_t>(status.st_size), StatusTable::file_bytes());
}

TEST(WireJoin, ForeignStatusTableFileIsAnError) {
  ScratchFabric fabric("foreign");
  const std::string path = status_table_path(fabric.name());
  {
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 100), 0);
    ::close(fd);
  }
  std::string error;
  EXPECT_EQ(Endpoint::join(fabric.name(), std::nullopt, error), nullptr);
  EXPECT_EQ(error, "verbfault: fabric '" + fabric.name() + "': " + path +
                       " has 100 bytes, not the " + std::to_string(StatusTable::file_bytes()) +
                       " of a status table (another verbfault version's? remove it while no "
                       "member runs)");
  {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(StatusTable::file_bytes())), 0);
    const uint64_t garbage = 0x1234;
    ASSERT_EQ(pwrite(fd, &garbage, sizeof garbage, 0), static_cast<ssize_t>(sizeof garbage));
    ::close(fd);
  }
  EXPECT_EQ(Endpoint::join(fabric.name(), std::nullopt, error), nullptr);
  EXPECT_EQ(error, "verbfault: fabric '" + fabric.name() + "': " + path +
                       " is not a status table of this verbfault version (remove it while no "
                       "member runs)");
}

TEST(WireJoin, EveryDescriptorIsCloseOnExec) {
  ScratchFabric fabric("cloexec");
  const std::set<int> before = open_fds();
  Log log;
  auto a = must_join(fabric.name());
  auto b = must_join(fabric.name());
  ASSERT_TRUE(a && b);
  a->start(log.frame_handler(), log.gone_handler());
  b->start(log.frame_handler(), log.gone_handler());
  ASSERT_TRUE(send_char(*a, 1, 'x'));
  ASSERT_TRUE(send_char(*b, 0, 'y'));
  ASSERT_TRUE(eventually([&] { return log.copy().size() == 2; }));
  int checked = 0;
  for (const int fd : open_fds()) {
    if (before.count(fd) != 0) continue;
    EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "fd " << fd;
    ++checked;
  }
  // Per endpoint a table, an epoll set, an eventfd, a listener; and the two
  // connections each way.
  EXPECT_EQ(checked, 2 * 4 + 2 * 2);
}

TEST(WireJoin, DestroyingStopsTheThreadAndFreesTheIndex) {
  ScratchFabric fabric("destroy");
  Log log;
  auto a = must_join(fabric.name());
  ASSERT_TRUE(a);
  a->start(log.frame_handler(), log.gone_handler());
  ASSERT_TRUE(send_char(*a, 0, 's'));
  ASSERT_TRUE(eventually([&] { return log.count("frame 0 s") == 1; }));
  a.reset();
  auto b = must_join(fabric.name());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->member(), 0u);
  // Destroyed without ever starting, too.
  b.reset();
}

// ---- frames ----------------------------------------------------------------

TEST(WireFrames, SendToSelf) {
  ScratchFabric fabric("self");
  Log log;
  auto a = must_join(fabric.name(), 3);
  ASSERT_TRUE(a);
  a->start(log.frame_handler(), log.gone_handler());
  ASSERT_TRUE(send_char(*a, 3, 'm'));
  ASSERT_TRUE(send_bytes(*a, 3, {}));
  ASSERT_TRUE(eventually([&] { return log.copy().size() == 2; }));
  EXPECT_EQ(log.copy(), (std::vector<std::string>{"frame 3 m", "frame 3 "}));
}

TEST(WireFrames, SendToAnAbsentMemberFails) {
  ScratchFabric fabric("absent");
  auto a = must_join(fabric.name());
  ASSERT_TRUE(a);
  EXPECT_FALSE(send_char(*a, 7, 'x'));
  EXPECT_FALSE(send_char(*a, kMaxMembers, 'x'));
  EXPECT_FALSE(a->alive(7));
  EXPECT_FALSE(a->alive(kMaxMembers));
  EXPECT_TRUE(a->alive(0));
  // Too long a frame (never read: refused for its length alone).
  const Bytes mebibyte(1 << 20);
  const Parts parts((kMaxFrameBytes >> 20) + 1, std::span<const uint8_t>(mebibyte));
  EXPECT_FALSE(a->send(0, parts));
}

TEST(WireFrames, InOrderBothWaysBetweenProcesses) {
  ScratchFabric fabric("order");
  Signal parent_joined, parent_got_all;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(parent_joined.wait() == 'j');
    auto endpoint = child_join(fabric.name(), 1);
    OrderedReceiver from_parent(0);
    endpoint->start(std::ref(from_parent), {});
    for (uint32_t seq = 0; seq < kOrderFrames; ++seq) CHILD_CHECK(send_numbered(*endpoint, 0, seq));
    CHILD_CHECK(eventually([&] { return from_parent.next.load() == kOrderFrames; }));
    CHILD_CHECK(!from_parent.bad.load());
    // Its own frames may still be queued here: it stays until they are in.
    CHILD_CHECK(parent_got_all.wait(60) == 'g');
    return 0;
  });
  OrderedReceiver from_child(1);
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start(std::ref(from_child), {});
  parent_joined.post('j');
  ASSERT_TRUE(eventually([&] { return endpoint->alive(1); }));
  for (uint32_t seq = 0; seq < kOrderFrames; ++seq) ASSERT_TRUE(send_numbered(*endpoint, 1, seq));
  EXPECT_TRUE(eventually([&] { return from_child.next.load() == kOrderFrames; }, 60));
  EXPECT_FALSE(from_child.bad.load());
  parent_got_all.post('g');
  EXPECT_EQ(child.wait(), 0);
}

// A request (send_expecting_answer) sent while an answer is owed waits in
// the sender's queue; the answer's arrival writes it, in order. So does
// the sender waiting in the fabric, without any answer; and a frame that
// is not deferred (an answer, or one too large to defer) takes what waits
// ahead of it along.
TEST(WireFrames, RequestsBehindAnOwedAnswerLeaveWhenItComes) {
  ScratchFabric fabric("deferred");
  Signal parent_joined, sent, next, done;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(parent_joined.wait() == 'j');
    auto endpoint = child_join(fabric.name(), 1);
    endpoint->start([](uint32_t, std::span<const uint8_t>) {}, {});
    const auto expecting = [&](char c) {
      const uint8_t byte = static_cast<uint8_t>(c);
      const std::span<const uint8_t> parts[] = {{&byte, 1}};
      return endpoint->send_expecting_answer(0, parts);
    };
    CHILD_CHECK(expecting('A') && expecting('B') && expecting('C'));
    sent.post('s');
    CHILD_CHECK(next.wait() == 'n');
    CHILD_CHECK(expecting('D'));
    endpoint->set_waiting(true);
    endpoint->set_waiting(false);
    sent.post('s');
    CHILD_CHECK(next.wait() == 'n');
    CHILD_CHECK(expecting('E') && send_char(*endpoint, 0, 'F'));
    sent.post('s');
    CHILD_CHECK(next.wait() == 'n');
    const Bytes large(8192, 'H');
    CHILD_CHECK(expecting('G') && send_bytes(*endpoint, 0, large));
    sent.post('s');
    CHILD_CHECK(done.wait() == 'd');
    return 0;
  });
  Log log;
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start(log.frame_handler(), log.gone_handler());
  parent_joined.post('j');
  const auto first_bytes = [&] {
    std::string seen;
    for (const std::string& event : log.copy())
      seen += event.substr(std::string("frame 1 ").size(), 1);
    return seen;
  };

  ASSERT_EQ(sent.wait(), 's');
  ASSERT_TRUE(eventually([&] { return first_bytes() == "A"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(first_bytes(), "A") << "B and C wait for the answer to A";
  ASSERT_TRUE(send_char(*endpoint, 1, 'a'));
  EXPECT_TRUE(eventually([&] { return first_bytes() == "ABC"; }));

  next.post('n');
  ASSERT_EQ(sent.wait(), 's');
  EXPECT_TRUE(eventually([&] { return first_bytes() == "ABCD"; })) << "set_waiting(true) wrote D";

  // An answer is what the other side waits for: deferred behind an answer
  // owed to us, each side's answer could wait for the other's (riostream:
  // both applications spinning on memory, outside verbs, forever).
  next.post('n');
  ASSERT_EQ(sent.wait(), 's');
  EXPECT_TRUE(eventually([&] { return first_bytes() == "ABCDEF"; }))
      << "F, an answer, left at once and took E along";

  next.post('n');
  ASSERT_EQ(sent.wait(), 's');
  EXPECT_TRUE(eventually([&] { return first_bytes() == "ABCDEFGH"; }))
      << "a large frame goes at once";
  EXPECT_EQ(log.copy().back().size(), std::string("frame 1 ").size() + 8192);
  done.post('d');
  EXPECT_EQ(child.wait(), 0);
}

// Both send 64 MiB to the other from inside their FrameHandler, at the same
// time: were send() to wait for the peer to read, each would wait for the
// other's service thread, which waits in send() too.
TEST(WireFrames, NoDeadlockSendingFromHandlersBothWays) {
  ScratchFabric fabric("deadlock");
  constexpr uint32_t kFrames = 1024;
  constexpr std::size_t kFrameBytes = 64 * 1024;  // 64 MiB in all
  struct Side {
    explicit Side(uint32_t peer) : peer(peer), payload(kFrameBytes) {}
    // On 'G', sends kFrames numbered frames; checks the numbered ones.
    void on_frame(Endpoint& self, std::span<const uint8_t> frame) {
      if (frame.size() == 1 && frame[0] == 'G') {
        for (uint32_t seq = 0; seq < kFrames; ++seq) {
          std::memcpy(payload.data(), &seq, sizeof seq);
          std::memset(payload.data() + sizeof seq, static_cast<int>(seq & 0xff),
                      payload.size() - sizeof seq);
          if (!send_bytes(self, peer, payload)) failed.store(true);
        }
        sent.store(true);
        return;
      }
      uint32_t seq = 0;
      std::memcpy(&seq, frame.data(), sizeof seq);
      bool ok = frame.size() == kFrameBytes && seq == received.load();
      for (std::size_t k = sizeof seq; ok && k < frame.size(); k += 4099) {
        ok = frame[k] == static_cast<uint8_t>(seq & 0xff);
      }
      if (!ok) failed.store(true);
      received.fetch_add(1);
    }
    uint32_t peer;
    Bytes payload;
    std::atomic<bool> sent{false};
    std::atomic<bool> failed{false};
    std::atomic<uint32_t> received{0};
  };
  Signal parent_joined, child_started, parent_done;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(parent_joined.wait() == 'j');
    auto endpoint = child_join(fabric.name(), 1);
    Side side(0);
    endpoint->start([&](uint32_t, std::span<const uint8_t> f) { side.on_frame(*endpoint, f); }, {});
    child_started.post('s');
    CHILD_CHECK(send_char(*endpoint, 0, 'G'));
    CHILD_CHECK(eventually([&] { return side.received.load() == kFrames; }, 60));
    CHILD_CHECK(side.sent.load() && !side.failed.load());
    CHILD_CHECK(parent_done.wait(60) == 'd');
    return 0;
  });
  Side side(1);
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start([&](uint32_t, std::span<const uint8_t> f) { side.on_frame(*endpoint, f); }, {});
  parent_joined.post('j');
  ASSERT_EQ(child_started.wait(), 's');
  ASSERT_TRUE(send_char(*endpoint, 1, 'G'));
  EXPECT_TRUE(eventually([&] { return side.received.load() == kFrames; }, 60));
  EXPECT_TRUE(side.sent.load());
  EXPECT_FALSE(side.failed.load());
  parent_done.post('d');
  EXPECT_EQ(child.wait(), 0);
}

// ---- peers gone ------------------------------------------------------------

// Child 1 sends frames and is killed before the parent reads any; child 2
// only receives. Each gone is told once, and 1's after its last frame.
TEST(WirePeers, GoneAfterTheLastFrameOfAKilledMember) {
  ScratchFabric fabric("killed");
  Signal go_1, go_2, ready_1, ready_2;
  Child sender = spawn([&]() -> int {
    CHILD_CHECK(go_1.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    for (int i = 0; i < 50; ++i)
      CHILD_CHECK(send_char(*endpoint, 0, static_cast<char>('a' + i % 26)));
    ready_1.post('r');
    sleep_forever();
  });
  Child receiver = spawn([&]() -> int {
    CHILD_CHECK(go_2.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 2);
    endpoint->start([](uint32_t, std::span<const uint8_t>) {}, {});
    ready_2.post('r');
    sleep_forever();
  });
  Log log;
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  go_1.post('g');
  go_2.post('g');
  ASSERT_EQ(ready_1.wait(), 'r');
  ASSERT_EQ(ready_2.wait(), 'r');
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0, 1, 2}));
  ASSERT_TRUE(send_char(*endpoint, 2, 'z'));
  // Both dead before the parent's thread reads anything: 1's frames wait in
  // the parent's socket, its connection in the listen backlog.
  kill(sender.pid(), SIGKILL);
  kill(receiver.pid(), SIGKILL);
  EXPECT_EQ(sender.wait(), 128 + SIGKILL);
  EXPECT_EQ(receiver.wait(), 128 + SIGKILL);
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0}));
  EXPECT_FALSE(endpoint->alive(1));

  endpoint->start(log.frame_handler(), log.gone_handler());
  ASSERT_TRUE(eventually([&] { return log.count("gone 1") == 1 && log.count("gone 2") == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<std::string> expected_1;
  for (int i = 0; i < 50; ++i) expected_1.push_back("frame 1 " + std::string(1, 'a' + i % 26));
  expected_1.push_back("gone 1");
  std::vector<std::string> seen_1;
  for (const std::string& event : log.copy()) {
    if (event.starts_with("frame 1") || event == "gone 1") seen_1.push_back(event);
  }
  EXPECT_EQ(seen_1, expected_1);
  EXPECT_EQ(log.count("gone 2"), 1u);
  EXPECT_FALSE(send_char(*endpoint, 1, 'x'));
  EXPECT_FALSE(send_char(*endpoint, 2, 'x'));
}

// A member that ended counts as live (and the fabric as not quiescent)
// until its departure has been handled here: the kernel drops its table
// lock when it dies, while its last frames still wait to be read. Taken as
// gone at once, a waiter judged the fabric idle with the peer's last ACK
// unread (local_fabric.same_seed, ibv_rc_pingpong -e, once in a CI run).
TEST(WirePeers, AnEndedMemberCountsUntilItsLastFrameIsHandled) {
  ScratchFabric fabric("departing");
  Signal go, sent;
  Child sender = spawn([&]() -> int {
    CHILD_CHECK(go.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    for (char c : std::string("abc")) CHILD_CHECK(send_char(*endpoint, 0, c));
    sent.post('s');
    return 0;  // ends with the frames unread: drain() wrote them
  });
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> handled{0};
  std::atomic<bool> holding{false};
  std::atomic<bool> gone{false};
  endpoint->start(
      [&](uint32_t, std::span<const uint8_t>) {
        holding = true;
        released.wait();  // the first frame holds the service thread
        ++handled;
      },
      [&](uint32_t) { gone = true; });
  go.post('g');
  ASSERT_EQ(sent.wait(), 's');
  EXPECT_EQ(sender.wait(), 0);
  // The member's connection admitted (its first frame is being handled):
  // on a loaded machine the service thread may come to it only after the
  // member ended.
  ASSERT_TRUE(eventually([&] { return holding.load(); }));
  EXPECT_TRUE(endpoint->alive(1));
  EXPECT_TRUE(endpoint->others_live());
  endpoint->set_waiting(true);
  EXPECT_FALSE(endpoint->quiescent());
  EXPECT_EQ(handled.load(), 0);
  release.set_value();
  ASSERT_TRUE(eventually([&] { return gone.load(); }));
  EXPECT_EQ(handled.load(), 3);
  EXPECT_FALSE(endpoint->alive(1));
  EXPECT_FALSE(endpoint->others_live());
  EXPECT_TRUE(endpoint->quiescent());
  endpoint->set_waiting(false);
}

// What send() queued because the socket was full is written by drain()
// before the member ends (the fabric calls it at exit): the peer gets every
// frame, then the news.
TEST(WirePeers, DrainWritesWhatTheSocketHadNotTakenBeforeTheEnd) {
  constexpr uint32_t kFrames = 2000;  // about 20 MB: far more than a socket buffer
  ScratchFabric fabric("drain");
  Signal parent_joined, sent;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(parent_joined.wait() == 'j');
    auto endpoint = child_join(fabric.name(), 1);
    for (uint32_t seq = 0; seq < kFrames; ++seq) CHILD_CHECK(send_numbered(*endpoint, 0, seq));
    sent.post('s');
    endpoint->drain(std::chrono::seconds(60));
    _exit(0);  // the endpoint not destroyed: as at exit(3), nothing else writes
  });
  Log log;
  OrderedReceiver from_child(1);
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  parent_joined.post('j');
  ASSERT_EQ(sent.wait(60), 's');
  endpoint->start(std::ref(from_child), log.gone_handler());
  EXPECT_EQ(child.wait(60), 0);
  EXPECT_TRUE(eventually([&] { return log.count("gone 1") == 1; }, 60));
  EXPECT_EQ(from_child.next.load(), kFrames);
  EXPECT_FALSE(from_child.bad.load());
}

// Killed in the middle of a stream: gone once, and no frame of it after.
TEST(WirePeers, GoneOnceWhenKilledMidStream) {
  ScratchFabric fabric("midstream");
  Signal go;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(go.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    endpoint->start([](uint32_t, std::span<const uint8_t>) {}, {});
    const Bytes frame(3000, 'k');
    for (;;) {
      if (!send_bytes(*endpoint, 0, frame)) _exit(5);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  std::atomic<int> frames{0};
  std::atomic<int> gone{0};
  std::atomic<bool> frame_after_gone{false};
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start(
      [&](uint32_t, std::span<const uint8_t>) {
        if (gone.load() != 0) frame_after_gone.store(true);
        frames.fetch_add(1);
      },
      [&](uint32_t member) {
        if (member == 1) gone.fetch_add(1);
      });
  go.post('g');
  ASSERT_TRUE(eventually([&] { return frames.load() > 200; }));
  // Keeps a connection to it too, so both directions end.
  ASSERT_TRUE(send_char(*endpoint, 1, 'x'));
  kill(child.pid(), SIGKILL);
  EXPECT_EQ(child.wait(), 128 + SIGKILL);
  ASSERT_TRUE(eventually([&] { return gone.load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(gone.load(), 1);
  EXPECT_FALSE(frame_after_gone.load());
}

// ---- the status table ------------------------------------------------------

TEST(WireStatus, QuiescentOnlyWhenAllWaitAndAllIsHandled) {
  ScratchFabric fabric("quiescent");
  Signal go, commands, acks, release;
  Child child = spawn([&]() -> int {
    CHILD_CHECK(go.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    // A frame 'B' keeps the handler until the parent releases it.
    endpoint->start(
        [&](uint32_t, std::span<const uint8_t> frame) {
          if (frame.size() == 1 && frame[0] == 'B') CHILD_CHECK(release.wait() == 'r');
        },
        {});
    acks.post('a');
    for (;;) {
      const char command = commands.wait(60);
      if (command == 'w') endpoint->set_waiting(true);
      if (command == 'n') endpoint->set_waiting(false);
      if (command == 'q' || command == 0) return command == 'q' ? 0 : 6;
      acks.post('a');
    }
  });
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start([](uint32_t, std::span<const uint8_t>) {}, {});
  go.post('g');
  ASSERT_EQ(acks.wait(), 'a');
  auto child_does = [&](char command) {
    commands.post(command);
    ASSERT_EQ(acks.wait(), 'a');
  };
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0, 1}));
  EXPECT_FALSE(endpoint->quiescent());  // nobody waits
  endpoint->set_waiting(true);
  EXPECT_FALSE(endpoint->quiescent());  // the child does not wait
  child_does('w');
  EXPECT_TRUE(endpoint->quiescent());
  // A frame that is sent but not handled yet.
  ASSERT_TRUE(send_char(*endpoint, 1, 'B'));
  EXPECT_FALSE(endpoint->quiescent());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(endpoint->quiescent());
  release.post('r');
  EXPECT_TRUE(eventually([&] { return endpoint->quiescent(); }));
  // Frames the other way, handled at once.
  endpoint->set_waiting(false);
  EXPECT_FALSE(endpoint->quiescent());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(send_char(*endpoint, 1, 'x'));
  endpoint->set_waiting(true);
  EXPECT_TRUE(eventually([&] { return endpoint->quiescent(); }));
  child_does('n');
  EXPECT_FALSE(endpoint->quiescent());
  child_does('w');
  EXPECT_TRUE(endpoint->quiescent());
  commands.post('q');
  EXPECT_EQ(child.wait(), 0);
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(endpoint->quiescent());
}

// A member dies with frames sent to it unhandled; the process that joins
// with its index is not held to them.
TEST(WireStatus, AReusedIndexStartsClean) {
  ScratchFabric fabric("reused");
  Signal go_1, ready_1, go_2, ready_2, finish_2;
  Child first = spawn([&]() -> int {
    CHILD_CHECK(go_1.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    endpoint->set_waiting(true);  // and never started: nothing is handled
    ready_1.post('r');
    sleep_forever();
  });
  Child second = spawn([&]() -> int {
    CHILD_CHECK(go_2.wait() == 'g');
    auto endpoint = child_join(fabric.name(), 1);
    endpoint->start([](uint32_t, std::span<const uint8_t>) {}, {});
    endpoint->set_waiting(true);
    ready_2.post('r');
    CHILD_CHECK(finish_2.wait(60) == 'f');
    return 0;
  });
  Log log;
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  endpoint->start(log.frame_handler(), log.gone_handler());
  endpoint->set_waiting(true);
  go_1.post('g');
  ASSERT_EQ(ready_1.wait(), 'r');
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(send_char(*endpoint, 1, 'u'));
  EXPECT_FALSE(endpoint->quiescent());
  kill(first.pid(), SIGKILL);
  EXPECT_EQ(first.wait(), 128 + SIGKILL);
  ASSERT_TRUE(eventually([&] { return log.count("gone 1") == 1; }));
  EXPECT_TRUE(endpoint->quiescent());  // frames to a dead member do not count

  go_2.post('g');
  ASSERT_EQ(ready_2.wait(), 'r');
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(endpoint->quiescent());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_char(*endpoint, 1, 'n'));
  EXPECT_TRUE(eventually([&] { return endpoint->quiescent(); }));
  finish_2.post('f');
  EXPECT_EQ(second.wait(), 0);
  // The news comes from the service thread, after the child's end.
  EXPECT_TRUE(eventually([&] { return log.count("gone 1") == 2; }));
}

// ---- fork and exit ---------------------------------------------------------

TEST(WireFork, AbandonAfterForkLeavesTheParentsEndpointWorking) {
  ScratchFabric fabric("fork");
  Signal child_done;
  const std::set<int> before = open_fds();
  Log log;
  auto endpoint = must_join(fabric.name(), 0);
  ASSERT_TRUE(endpoint);
  Endpoint* self = endpoint.get();
  endpoint->start(
      [&](uint32_t member, std::span<const uint8_t> frame) {
        log.frame(member, frame);
        if (frame.size() == 1 && frame[0] == 'c') send_char(*self, member, 'r');
      },
      log.gone_handler());
  // Connections to itself, whose descriptors the child inherits.
  ASSERT_TRUE(send_char(*endpoint, 0, 'p'));
  ASSERT_TRUE(eventually([&] { return log.count("frame 0 p") == 1; }));

  Child child = spawn([&]() -> int {
    Endpoint::abandon_after_fork(endpoint);
    CHILD_CHECK(endpoint == nullptr);
    CHILD_CHECK(open_fds() == before);
    std::unique_ptr<Endpoint> none;
    Endpoint::abandon_after_fork(none);
    // The parent still holds 0.
    std::string error;
    CHILD_CHECK(Endpoint::join(fabric.name(), 0, error) == nullptr);
    auto mine = child_join(fabric.name());
    CHILD_CHECK(mine->member() == 1);
    CHILD_CHECK(mine->alive(0));
    std::atomic<int> replies{0};
    mine->start(
        [&](uint32_t from, std::span<const uint8_t> f) {
          if (from == 0 && f.size() == 1 && f[0] == 'r') replies.fetch_add(1);
        },
        {});
    CHILD_CHECK(send_char(*mine, 0, 'c'));
    CHILD_CHECK(eventually([&] { return replies.load() == 1; }));
    mine.reset();  // its own thread, joined
    child_done.post('d');
    return 0;
  });
  EXPECT_EQ(child_done.wait(), 'd');
  EXPECT_EQ(child.wait(), 0);
  EXPECT_TRUE(eventually([&] { return log.count("gone 1") == 1; }));
  EXPECT_EQ(log.count("frame 1 c"), 1u);
  // The parent's own connections survived the child's closing its copies.
  ASSERT_TRUE(send_char(*endpoint, 0, 'q'));
  EXPECT_TRUE(eventually([&] { return log.count("frame 0 q") == 1; }));
  EXPECT_EQ(log.count("gone 0"), 0u);
  EXPECT_EQ(endpoint->members(), (std::vector<uint32_t>{0}));
}

// exit(3) with the endpoint leaked and its thread running, even inside a
// handler: the process ends at once.
TEST(WireFork, ExitWithTheEndpointLeaked) {
  ScratchFabric fabric("leaked");
  Child child = spawn([&]() -> int {
    std::string error;
    Endpoint* leaked = Endpoint::join(fabric.name(), std::nullopt, error).release();
    CHILD_CHECK(leaked != nullptr);
    std::atomic<bool> in_handler{false};
    leaked->start(
        [&](uint32_t, std::span<const uint8_t> frame) {
          if (frame.size() == 1 && frame[0] == 's') {
            in_handler.store(true);
            std::this_thread::sleep_for(std::chrono::seconds(30));
          }
        },
        {});
    for (int i = 0; i < 10; ++i) CHILD_CHECK(send_char(*leaked, leaked->member(), 'a'));
    CHILD_CHECK(send_char(*leaked, leaked->member(), 's'));
    CHILD_CHECK(eventually([&] { return in_handler.load(); }));
    std::exit(0);
  });
  const auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(child.wait(20), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(10));
}

}  // namespace
}  // namespace verbfault::sim::wire::testing

// A process whose application threads all wait outside the device (on a
// socket, a pipe) counts as waiting for its peers' quiescence while nothing
// they wait on is readable (sim/fabric/fabric.h, Fabric::begin_outside). A peer
// that wrote to what they wait on before it waits must not take that mark
// for quiescence: it asks the member to look again first, and the member,
// finding the bytes there, is no longer counted waiting. Two members of a
// fabric of their own in forked children, using the simulated provider
// directly.
#include "two_members.h"
#include "verbfault/sim/provider.h"
#include "wire_process.h"

#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace verbfault::sim {
namespace {

using wire::testing::Child;
using wire::testing::ScratchFabric;
using wire::testing::spawn;

// Whether a wait of this process gave up on its peers (the wall clock
// decided: a peer outside verbs that is not counted waiting).
bool gave_up() {
  for (const std::string& note : take_timing_notes())
    if (note.find("gave up waiting") != std::string::npos) return true;
  return false;
}

// Member 1 waits outside its device on the read end of `outside` (it
// never reads it) from when it says so until the other is done. Member 0
// polls its CQ, which nothing will fill, first with nothing written to
// `outside`, then after writing to it.
TEST(OutsideWait, APeerThatWroteToWhatTheMemberWaitsOnIsNotTakenForQuiescence) {
  ScratchFabric fabric("outside");
  Pipe outside, to_waiter, to_poller;
  Child waiter = spawn([&] {
    Member m(fabric.name(), 1);
    Card poller;
    CHILD_CHECK(to_poller.put(m.card(nullptr)) && to_waiter.get(poller));
    m.connect(poller);
    const int fds[] = {outside.read_fd()};
    idle_outside(true, fds);
    CHILD_CHECK(to_poller.put('w'));
    char done = 0;
    CHILD_CHECK(to_waiter.get(done) && done == 'd');
    idle_outside(false);
    return 0;
  });
  Child poller = spawn([&] {
    Member m(fabric.name(), 0);
    Card waiter;
    CHILD_CHECK(to_poller.get(waiter) && to_waiter.put(m.card(nullptr)));
    m.connect(waiter);
    char waiting = 0;
    CHILD_CHECK(to_poller.get(waiting) && waiting == 'w');
    ibv_wc wc{};
    // Nothing readable: the member counts as waiting, the fabric is
    // quiescent, and the empty poll returns without giving up.
    CHILD_CHECK(ibv_poll_cq(m.cq(), 1, &wc) == 0);
    CHILD_CHECK(!gave_up());
    // Written: the member, asked to look again, sees the byte and is not
    // counted waiting; the poll waits for it until the grace period ends.
    CHILD_CHECK(outside.put('x'));
    CHILD_CHECK(ibv_poll_cq(m.cq(), 1, &wc) == 0);
    CHILD_CHECK(gave_up());
    CHILD_CHECK(to_waiter.put('d'));
    return 0;
  });
  EXPECT_EQ(poller.wait(), 0);
  EXPECT_EQ(waiter.wait(), 0);
}

}  // namespace
}  // namespace verbfault::sim

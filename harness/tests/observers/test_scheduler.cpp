// The thread scheduler on its own: threads of the test take turns through
// its API (the front door's pthread functions are not involved here).
#include "scheduler.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace verbfault::scheduler {
namespace {

// A world with no device and no fds; a deadlock prints its report and
// ends the process with 122, as the harness does.
class QuietWorld : public World {
 public:
  bool fd_readable(int) override { return false; }
  Outside wait_external(const std::vector<int>&, std::uint64_t, bool) override {
    return Outside::quiet;
  }
  std::string fd_name(int fd) override { return "fd " + std::to_string(fd); }
  bool advance_device(const std::vector<int>&) override { return false; }
  [[noreturn]] void deadlock(const std::string& report) override {
    std::fprintf(stderr, "%s\n", report.c_str());
    std::fflush(stderr);
    _exit(122);
  }
};

QuietWorld world;

// Starts `bodies.size()` scheduled threads, each running its body, and
// joins them through the scheduler (as pthread_join does).
void run_threads(Scheduler& s, const std::vector<std::function<void()>>& bodies) {
  std::vector<std::thread> threads;
  std::vector<ThreadId> ids;
  threads.reserve(bodies.size());
  for (const auto& body : bodies) {
    const ThreadId id = s.reserve_thread();
    threads.emplace_back([&s, id, body] {
      s.enter_thread(id);
      body();
      s.exit_thread();
    });
    s.created(id, threads.back().native_handle());
    ids.push_back(id);
    s.point();
  }
  for (std::size_t i = 0; i < threads.size(); ++i) {
    while (!s.finished(ids[i])) {
      Wait wait;
      wait.kind = WaitKind::join;
      wait.thread = ids[i];
      wait.call = "pthread_join";
      s.block(wait);
    }
    threads[i].join();
  }
}

// Which thread ran each step of `workers` threads doing `steps` points
// each, under `options`; checks that no two ran at once.
std::vector<int> interleaving(Options options, int workers, int steps) {
  Scheduler scheduler;
  scheduler.start(options, world);
  std::vector<int> log;
  std::atomic<int> inside{0};
  bool overlapped = false;
  std::vector<std::function<void()>> bodies;
  for (int w = 0; w < workers; ++w)
    bodies.push_back([&, w] {
      for (int i = 0; i < steps; ++i) {
        overlapped |= inside.fetch_add(1) != 0;
        log.push_back(w);
        inside.fetch_sub(1);
        scheduler.point();
      }
    });
  run_threads(scheduler, bodies);
  scheduler.stop();
  EXPECT_FALSE(overlapped) << "two scheduled threads ran at once";
  return log;
}

// Each test's own scheduler, as each run of the harness owns one
// (Run::scheduler).
class Scheduling : public ::testing::Test {
 protected:
  Scheduler& scheduler() { return scheduler_; }

 private:
  Scheduler scheduler_;
};

TEST_F(Scheduling, TheSameSeedGivesTheSameInterleaving) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Options options;
    options.seed = seed;
    options.steps = 100;
    const std::vector<int> first = interleaving(options, 3, 20);
    EXPECT_EQ(first.size(), 60u);
    EXPECT_EQ(interleaving(options, 3, 20), first) << "seed " << seed;
  }
}

TEST_F(Scheduling, SeedsGiveDifferentInterleavings) {
  std::set<std::vector<int>> seen;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Options options;
    options.seed = seed;
    options.steps = 100;
    seen.insert(interleaving(options, 3, 20));
  }
  EXPECT_GE(seen.size(), 10u);
}

TEST_F(Scheduling, ARandomWalkIsDeterministicToo) {
  std::set<std::vector<int>> seen;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Options options;
    options.seed = seed;
    options.strategy = Strategy::random_walk;
    const std::vector<int> first = interleaving(options, 4, 10);
    EXPECT_EQ(interleaving(options, 4, 10), first) << "seed " << seed;
    seen.insert(first);
  }
  EXPECT_GE(seen.size(), 9u);
}

TEST_F(Scheduling, PctRunsTheHighestPriorityThreadUntilAChangePoint) {
  // Without change points (depth 1) one thread runs all its steps before
  // any other: the first worker to run is never interrupted.
  Options options;
  options.seed = 5;
  options.depth = 1;
  const std::vector<int> log = interleaving(options, 2, 10);
  ASSERT_EQ(log.size(), 20u);
  for (int i = 1; i < 10; ++i) EXPECT_EQ(log[i], log[0]);
}

TEST_F(Scheduling, AYieldingThreadLetsAnotherRun) {
  // A spinner of the highest priority that yields (an empty poll) cannot
  // starve the thread it waits for.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Options options;
    options.seed = seed;
    options.depth = 1;
    scheduler().start(options, world);
    bool posted = false;
    int spins = 0;
    run_threads(scheduler(), {[&] {
                                while (!posted) {
                                  ++spins;
                                  scheduler().point(/*yielding=*/true);
                                }
                              },
                              [&] {
                                for (int i = 0; i < 3; ++i) scheduler().point();
                                posted = true;
                              }});
    scheduler().stop();
    EXPECT_TRUE(posted);
    EXPECT_LT(spins, 10) << "seed " << seed;
  }
}

TEST_F(Scheduling, WakeOneWakesTheEarliestWaiter) {
  Options options;
  options.seed = 3;
  scheduler().start(options, world);
  int condition = 0;
  std::vector<int> waiting;
  std::vector<int> woken;
  auto waiter = [&](int who) {
    return [&, who] {
      waiting.push_back(who);
      Wait wait;
      wait.kind = WaitKind::cond;
      wait.object = &condition;
      wait.call = "pthread_cond_wait";
      EXPECT_TRUE(scheduler().block(wait));
      woken.push_back(who);
    };
  };
  run_threads(scheduler(), {waiter(1), waiter(2), [&] {
                              // The waiters may not wait yet: wake until both woke.
                              while (woken.size() < 2) {
                                scheduler().wake_one(WaitKind::cond, &condition);
                                scheduler().point(/*yielding=*/true);
                              }
                            }});
  scheduler().stop();
  EXPECT_EQ(woken, waiting);
}

TEST_F(Scheduling, VirtualTimeJumpsToTheNextDeadlineWhenEveryThreadWaits) {
  Options options;
  options.seed = 9;
  scheduler().start(options, world);
  std::uint64_t woke_at = 0;
  run_threads(scheduler(), {[&] {
                scheduler().sleep_until(5'000'000, "nanosleep");  // 5 ms of virtual time
                woke_at = scheduler().now_ns();
              }});
  scheduler().stop();
  EXPECT_GE(woke_at, 5'000'000u);
  EXPECT_LT(woke_at, 5'100'000u);
}

// A world whose fds are real pipes: readable when a byte waits. Its
// "outside" (wait_external) writes into `outside_fd` when asked to wait
// without a limit, as a peer process or a real device would.
class PipeWorld : public QuietWorld {
 public:
  bool fd_readable(int fd) override {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  Outside wait_external(const std::vector<int>& fds, std::uint64_t timeout_ns, bool) override {
    timeouts.push_back(timeout_ns);
    if (timeout_ns != kNoDeadline || outside_fd < 0) return Outside::quiet;
    EXPECT_EQ(write(outside_fd, "x", 1), 1);
    return fd_readable(fds.front()) ? Outside::readable : Outside::quiet;
  }
  int outside_fd = -1;
  std::vector<std::uint64_t> timeouts;
};

struct Pipe {
  int fds[2];
  Pipe() { EXPECT_EQ(pipe(fds), 0); }
  ~Pipe() {
    close(fds[0]);
    close(fds[1]);
  }
};

TEST_F(Scheduling, AWaitOnSeveralFdsEndsWhenAnyIsReadable) {
  PipeWorld pipes;
  Pipe first, second;
  Options options;
  options.seed = 4;
  scheduler().start(options, pipes);
  bool woken = false;
  run_threads(scheduler(), {[&] {
                              Wait wait;
                              wait.kind = WaitKind::fd;
                              wait.add_fd(first.fds[0]);
                              wait.add_fd(second.fds[0]);
                              wait.call = "poll";
                              woken = scheduler().block(wait);
                            },
                            [&] {
                              for (int i = 0; i < 3; ++i) scheduler().point();
                              EXPECT_EQ(write(second.fds[1], "x", 1), 1);  // the second fd only
                            }});
  scheduler().stop();
  EXPECT_TRUE(woken);
}

TEST_F(Scheduling, AnFdWaitWithADeadlineEndsOnTheVirtualClock) {
  PipeWorld pipes;
  Pipe quiet;
  Options options;
  options.seed = 2;
  scheduler().start(options, pipes);
  bool woken = true;
  std::uint64_t ended_at = 0;
  run_threads(scheduler(), {[&] {
                Wait wait;
                wait.kind = WaitKind::fd;
                wait.add_fd(quiet.fds[0]);
                wait.deadline_ns = scheduler().now_ns() + 3'000'000;
                wait.call = "poll";
                woken = scheduler().block(wait);
                ended_at = scheduler().now_ns();
              }});
  scheduler().stop();
  EXPECT_FALSE(woken);
  EXPECT_GE(ended_at, 3'000'000u);
  EXPECT_LT(ended_at, 3'100'000u);
}

// The world is asked about fds with the scheduler's lock held; the
// interposer's answer takes its own lock, which a thread reading the clock
// may hold (a poll under the interposer's lock reads clock_gettime). So the
// clock must be read without the scheduler's lock, or the two orders
// deadlock (issue 32): here the world reads it from inside the scheduler.
class ClockReadingWorld : public PipeWorld {
 public:
  explicit ClockReadingWorld(Scheduler& scheduler) : scheduler_(scheduler) {}
  bool fd_readable(int fd) override {
    clock_seen = scheduler_.now_ns();
    return PipeWorld::fd_readable(fd);
  }
  std::uint64_t clock_seen = 0;

 private:
  Scheduler& scheduler_;
};

TEST_F(Scheduling, TheClockIsReadWithoutTheSchedulersLock) {
  ClockReadingWorld world_reading(scheduler());
  Pipe quiet;
  Options options;
  options.seed = 3;
  scheduler().start(options, world_reading);
  bool woken = true;
  run_threads(scheduler(), {[&] {
                Wait wait;
                wait.kind = WaitKind::fd;
                wait.add_fd(quiet.fds[0]);
                wait.deadline_ns = scheduler().now_ns() + 1'000'000;
                wait.call = "poll";
                woken = scheduler().block(wait);
              }});
  scheduler().stop();
  EXPECT_FALSE(woken);
  EXPECT_GT(world_reading.clock_seen, 0u) << "the world was asked about the fd";
}

TEST_F(Scheduling, TheClockOnlyMovesForward) {
  Options options;
  options.seed = 5;
  scheduler().start(options, world);
  const std::uint64_t before = scheduler().now_ns();
  scheduler().advance_clock_to(before + 7'000'000);
  const std::uint64_t jumped = scheduler().now_ns();
  scheduler().advance_clock_to(before);  // the past: no change
  const std::uint64_t after = scheduler().now_ns();
  scheduler().stop();
  EXPECT_GT(jumped, before + 7'000'000);
  EXPECT_GT(after, jumped);
}

// A thread holding one of the harness's locks runs the harness's code:
// the interposer lets its calls through instead of making them scheduling
// points (threads/thread_world.cpp, scheduled()), which would wait for the lock.
TEST(RunLock, MarksTheThreadsThatHoldOne) {
  record::RunLock one, two;
  EXPECT_FALSE(record::RunLock::held_by_this_thread());
  one.lock();
  EXPECT_TRUE(record::RunLock::held_by_this_thread());
  bool seen_elsewhere = true;
  std::thread([&] { seen_elsewhere = record::RunLock::held_by_this_thread(); }).join();
  EXPECT_FALSE(seen_elsewhere) << "the mark is the holder's own";
  ASSERT_TRUE(two.try_lock());
  one.unlock();
  EXPECT_TRUE(record::RunLock::held_by_this_thread()) << "still holds the second";
  two.unlock();
  EXPECT_FALSE(record::RunLock::held_by_this_thread());
  one.lock();
  EXPECT_FALSE(one.try_lock()) << "a failed try_lock marks nothing";
  one.unlock();
  EXPECT_FALSE(record::RunLock::held_by_this_thread());
}

// A wait on an fd fed from outside is no deadlock: the scheduler waits in
// real time, without a limit when nothing is due on the virtual clock, at
// most the escape time while a sleeper is (then the sleeper wakes first).
TEST_F(Scheduling, AnExternalFdWaitsInRealTimeAndLetsASleeperWake) {
  PipeWorld pipes;
  Pipe socket;
  pipes.outside_fd = socket.fds[1];
  Options options;
  options.seed = 6;
  options.escape_ns = 2'000'000;
  scheduler().start(options, pipes);
  std::vector<int> order;
  run_threads(scheduler(), {[&] {
                              Wait wait;
                              wait.kind = WaitKind::fd;
                              wait.add_fd(socket.fds[0]);
                              wait.external = true;
                              wait.call = "poll";
                              EXPECT_TRUE(scheduler().block(wait));
                              order.push_back(1);
                            },
                            [&] {
                              scheduler().sleep_until(scheduler().now_ns() + 1'000'000, "usleep");
                              order.push_back(2);
                            }});
  scheduler().stop();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
  ASSERT_GE(pipes.timeouts.size(), 2u);
  // As long in real time as the virtual clock has to go to the sleeper's
  // deadline (1 ms after a few quanta).
  EXPECT_LE(pipes.timeouts.front(), 1'000'000u) << "bounded while the sleeper is due";
  EXPECT_GT(pipes.timeouts.front(), 900'000u) << "bounded while the sleeper is due";
  EXPECT_EQ(pipes.timeouts.back(), kNoDeadline) << "unbounded once only the fd is left";
}

TEST_F(Scheduling, AnExternalFdWaitLastsInRealTimeUntilTheNextDeadlineHoweverFar) {
  PipeWorld pipes;
  Pipe socket;
  pipes.outside_fd = socket.fds[1];
  Options options;
  options.seed = 6;
  options.escape_ns = 2'000'000;
  scheduler().start(options, pipes);
  run_threads(scheduler(),
              {[&] {
                 Wait wait;
                 wait.kind = WaitKind::fd;
                 wait.add_fd(socket.fds[0]);
                 wait.external = true;
                 wait.call = "poll";
                 EXPECT_TRUE(scheduler().block(wait));
               },
               [&] { scheduler().sleep_until(scheduler().now_ns() + 50'000'000, "usleep"); }});
  scheduler().stop();
  ASSERT_GE(pipes.timeouts.size(), 1u);
  EXPECT_GT(pipes.timeouts.front(), 49'000'000u) << "the sleeper's 50 ms, not the escape time";
  EXPECT_LE(pipes.timeouts.front(), 50'000'000u);
}

// A lock released by a thread outside the schedule (the harness's own code,
// a thread the scheduler does not manage) wakes the scheduled thread
// blocked on it; one released between its try and its block ends the
// block at once. Neither is taken for a deadlock meanwhile.
TEST_F(Scheduling, ALockReleasedOutsideTheScheduleWakesItsWaiter) {
  Options options;
  options.seed = 2;
  scheduler().start(options, world);
  int lock = 0;  // stands for a pthread_rwlock_t: the scheduler only compares its address
  std::atomic<bool> released{false};
  bool woken = false;
  std::thread outside;
  run_threads(scheduler(), {[&] {
                Wait wait;
                wait.kind = WaitKind::rwlock;
                wait.object = &lock;
                wait.call = "pthread_rwlock_wrlock";
                scheduler().begin_lock_wait();  // as the front door's wrlock does before its try
                wait.outside_releases = scheduler().outside_releases();
                outside = std::thread([&] {
                  std::this_thread::sleep_for(std::chrono::milliseconds(20));
                  released = true;
                  Scheduler::note_release_outside(&lock);
                });
                woken = scheduler().block(wait);
                scheduler().end_lock_wait();
              }});
  scheduler().stop();
  outside.join();
  EXPECT_TRUE(released);
  EXPECT_TRUE(woken);
}

TEST_F(Scheduling, ALockReleasedOutsideBeforeTheBlockEndsItAtOnce) {
  Options options;
  options.seed = 3;
  scheduler().start(options, world);
  int lock = 0;
  bool woken = false;
  run_threads(scheduler(), {[&] {
                Wait wait;
                wait.kind = WaitKind::mutex;
                wait.object = &lock;
                wait.call = "pthread_mutex_lock";
                scheduler().begin_lock_wait();
                wait.outside_releases = scheduler().outside_releases();
                std::thread([&] { Scheduler::note_release_outside(&lock); }).join();
                woken =
                    scheduler().block(wait);  // nobody else could wake it: a deadlock if it blocked
                scheduler().end_lock_wait();
              }});
  scheduler().stop();
  EXPECT_TRUE(woken);
}

// A wait on outside fds only (a socket, a pipe) is not idle for the checks,
// and not among the waits they judge.
TEST_F(Scheduling, AWaitOnOutsideFdsOnlyIsNeitherIdleNorJudged) {
  PipeWorld pipes;
  Pipe socket;
  pipes.outside_fd = socket.fds[1];  // speaks once nothing else can move
  Options options;
  options.seed = 5;
  scheduler().start(options, pipes);
  std::atomic<bool> blocked{false};
  bool idle = true;
  std::size_t judged = 99;
  run_threads(scheduler(), {[&] {
                              Wait wait;
                              wait.kind = WaitKind::fd;
                              wait.add_fd(socket.fds[0]);
                              wait.external = true;
                              wait.outside_only = true;
                              wait.call = "poll";
                              blocked = true;
                              scheduler().block(wait);
                            },
                            [&] {
                              while (!blocked) scheduler().point(/*yielding=*/true);
                              idle = scheduler().others_idle();
                              pid_t tids[4];
                              judged = scheduler().waiting_threads(tids, 4);
                            }});
  scheduler().stop();
  EXPECT_FALSE(idle);
  EXPECT_EQ(judged, 1u) << "only run_threads' join of the main thread";
}

using SchedulingDeathTest = Scheduling;

TEST_F(SchedulingDeathTest, ADeadlockIsReportedWithWhatEachThreadWaitsFor) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Options options;
        options.seed = 1;
        scheduler().start(options, world);
        // A real mutex: the report reads its holder from it (an int read
        // past its end: AddressSanitizer, stack-buffer-overflow).
        pthread_mutex_t mutex;
        pthread_mutex_init(&mutex, nullptr);
        run_threads(scheduler(), {[&] {
                      Wait wait;
                      wait.kind = WaitKind::mutex;
                      wait.object = &mutex;
                      wait.call = "pthread_mutex_lock";
                      scheduler().block(wait);
                    }});
      },
      testing::ExitedWithCode(122),
      "deadlock: every thread waits.*\n  thread 0: pthread_join of thread 1, which never "
      "ends\n  thread 1: pthread_mutex_lock of mutex 0x");
}

TEST_F(Scheduling, TheWatchdogReleasesAThreadThatReachesNoPointWhileAnotherWaitsItsTurn) {
  Options options;
  options.escape_ns = 1'000'000;
  scheduler().start(options, world);
  std::atomic<bool> released{false};
  std::optional<Escape> escape;
  int after_release = 0;
  // Thread 1 takes the baton and then spins outside any scheduling point
  // (as in a read the harness does not model) until the watchdog has let
  // thread 0 run; thread 0's points then go on without it.
  std::atomic<bool> spinning{false};
  const ThreadId id = scheduler().reserve_thread();
  std::thread spinner([&] {
    scheduler().enter_thread(id);
    spinning = true;
    while (!released) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    scheduler().point();  // back in the schedule
    scheduler().exit_thread();
  });
  scheduler().created(id, spinner.native_handle());
  // The watcher, outside the schedule, as the interposer's watchdog thread.
  // It starts once thread 1 holds the baton: its wall clock is made up, and
  // before that, on a loaded machine, thread 0 may hold the baton for many
  // of its steps (descheduled by the OS) and be the one released.
  std::thread watcher([&] {
    while (!spinning) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::uint64_t wall = 1;
    while (!(escape = scheduler().watch(wall))) {
      wall += 500'000;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  // Thread 1 has the higher priority or not: yield until it has the baton;
  // thread 0 runs again when the watchdog released thread 1.
  while (!spinning) scheduler().point(/*yielding=*/true);
  watcher.join();
  // Here thread 0 runs again (the baton came back to it).
  ++after_release;
  released = true;
  for (int i = 0; i < 3; ++i) scheduler().point();
  while (!scheduler().finished(id)) {
    Wait wait;
    wait.kind = WaitKind::join;
    wait.thread = id;
    wait.call = "pthread_join";
    scheduler().block(wait);
  }
  spinner.join();
  scheduler().stop();
  ASSERT_TRUE(escape.has_value());
  EXPECT_EQ(escape->thread, id);
  EXPECT_FALSE(escape->what.empty());
  EXPECT_EQ(after_release, 1);
}

TEST_F(Scheduling, AThreadThatNeverWaitsCannotStarveTheOthers) {
  // A worker loops until main, asleep for 5 ms of virtual time, tells it to
  // stop. With the higher priority and no change point left, PCT alone
  // would run the worker forever; the fairness bound moves it below main.
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    Options options;
    options.seed = seed;
    options.depth = 1;  // no change points: only the fairness bound helps
    scheduler().start(options, world);
    bool stop = false;
    std::uint64_t loops = 0;
    run_threads(scheduler(), {[&] {
                                while (!stop) {
                                  ++loops;
                                  scheduler().point();
                                }
                              },
                              [&] {
                                scheduler().sleep_until(scheduler().now_ns() + 5'000'000, "usleep");
                                stop = true;
                              }});
    scheduler().stop();
    EXPECT_TRUE(stop) << "seed " << seed;
    EXPECT_LE(loops, 5000u + 2 * options.fairness_steps) << "seed " << seed;
  }
}

TEST_F(Scheduling, ThreadsOptionsParse) {
  EXPECT_FALSE(parse_threads("free").has_value());
  EXPECT_EQ(describe(*parse_threads("pct")), "pct:depth=3:steps=20000:preempt=10");
  EXPECT_EQ(describe(*parse_threads("pct:depth=5")), "pct:depth=5:steps=20000:preempt=10");
  EXPECT_EQ(describe(*parse_threads("pct:steps=100:depth=2")), "pct:depth=2:steps=100:preempt=10");
  EXPECT_EQ(describe(*parse_threads("random")), "random:preempt=10");
  EXPECT_EQ(describe(*parse_threads("pct:preempt=0")), "pct:depth=3:steps=20000:preempt=0");
  EXPECT_EQ(describe(*parse_threads("random:preempt=100")), "random:preempt=100");
  EXPECT_EQ(parse_threads("pct:escape=40")->escape_ns, 40'000'000u);
  EXPECT_EQ(parse_threads("random:escape=7")->escape_ns, 7'000'000u);
  EXPECT_EQ(describe(*parse_threads("random:escape=7")), "random:preempt=10");
  for (const char* bad :
       {"", "fair", "pct:", "pct:depth", "pct:depth=0", "pct:depth=65", "pct:depth=x",
        "pct:steps=0", "pct:width=3", "pctx", "random:depth=2", "randomx", "pct:escape=0",
        "pct:escape=", "pct:preempt=101", "pct:preempt=", "random:preempt=x"})
    EXPECT_THROW(parse_threads(bad), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace verbfault::scheduler

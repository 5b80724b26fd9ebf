// The hang watchdog (docs/threads-and-time.md, "The hang watchdog"; issue 17): `verbfault
// run` of programs that never finish ends them with exit status 122, the
// check liveness.hang, what every thread waits for, the replay line and the
// trace's end-of-run line; on a real provider (the provider double: vfreal0
// through its libibverbs.so.1, no simulated device listed) and on vfsim0,
// with the thread scheduler and without. A wait the harness does not see is
// never judged; a program that only pauses is not ended; the simulated
// device's exact diagnoses keep priority. Every run has a --timeout far
// above its hang time, so that a watchdog that failed to act fails the test
// with the timeout's status instead of hanging it.
#include "findings_file.h"
#include "shell.h"
#include "verbfault/matchers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;

enum class Provider { real, simulated };

// A run's exit status and output, and the findings it kept (--findings).
struct RunResult : ProcessResult {
  std::vector<Finding> findings;
};

// `verbfault run` of hang_program MODE on `provider`, with `options`,
// ended after `timeout` seconds if it has not ended by then.
RunResult run_program(Provider provider, const std::string& mode,
                      const std::string& options = "--hang-after 1",
                      const std::string& environment = "", int timeout = 60) {
  std::string command = environment + " ";
  if (provider == Provider::real)
    command += "LD_LIBRARY_PATH=" PROVIDER_DOUBLE_DIR " VERBFAULT_SIM_DEVICES=0 ";
  // Seed 7 unless the options give one.
  const std::string seed = contains(options, "--seed ") ? "" : " --seed 7";
  const std::string findings = scratch_findings_path();
  command += std::string(VERBFAULT_CLI) + " run --findings " + findings + seed + " --timeout " +
             std::to_string(timeout) +
             // The library as the user names it: `verbfault run` puts a
             // sanitizer runtime first itself (preload_line.h).
             " --library " + VERBFAULT_LIBRARY + " " + options + " -- " HANG_PROGRAM " " + mode;
  RunResult r;
  static_cast<ProcessResult&>(r) = run_shell(command);
  r.findings = take_findings(findings);
  return r;
}

// What a hang report holds: the check, the threads' waits, the replay line
// and the end-of-run line (the trace was written).
void expect_hang_report(const RunResult& r, const std::string& on,
                        const std::vector<std::string>& waits) {
  EXPECT_EQ(r.status, 122) << r.output;
  EXPECT_THAT(r.findings,
              Contains(AllOf(FindingOn("liveness.hang", on),
                             Field(&Finding::message, HasSubstr("no verbs call made progress for")),
                             Field(&Finding::replay, HasSubstr("verbfault run --seed ")))))
      << r.output;
  EXPECT_TRUE(contains(r.output, "what each thread waits for:")) << r.output;
  for (const std::string& wait : waits) EXPECT_TRUE(contains(r.output, wait)) << r.output;
  EXPECT_TRUE(contains(r.output, "ending it with exit status 122")) << r.output;
  EXPECT_FALSE(trace_hash_of(r.output).empty()) << r.output;
}

TEST(HangWatchdog, OnARealProviderAWaitForAnEventThatNeverComesEnds) {
  expect_hang_report(run_program(Provider::real, "wait_event"), "channel#0",
                     {"thread 0: ibv_get_cq_event on channel#0"});
}

TEST(HangWatchdog, OnARealProviderSpinningOnAnEmptyCqEnds) {
  expect_hang_report(run_program(Provider::real, "spin"), "cq#0",
                     {"thread 0: ibv_poll_cq of cq#0 returning nothing, over and over"});
}

TEST(HangWatchdog, OnARealProviderEveryThreadIsListed) {
  expect_hang_report(run_program(Provider::real, "waiter_thread"), "channel#0",
                     // The waiter is thread 1 (thread 2 in a sanitized build, where the
                     // fabric's wire thread is one of the scheduled threads).
                     {"thread 0: pthread_join of thread ", ": ibv_get_cq_event on channel#0"});
}

TEST(HangWatchdog, WithoutTheSchedulerTooOnARealProvider) {
  for (const char* mode : {"wait_event", "spin", "waiter_thread"}) {
    SCOPED_TRACE(mode);
    const RunResult r = run_program(Provider::real, mode, "--hang-after 1 --threads free");
    EXPECT_EQ(r.status, 122) << r.output;
    EXPECT_THAT(r.findings, Contains(FindingOf("liveness.hang"))) << r.output;
  }
  // Both threads, by their kernel ids: the join and the wait.
  const RunResult r = run_program(Provider::real, "waiter_thread", "--hang-after 1 --threads free");
  EXPECT_TRUE(contains(r.output, ": pthread_join\n")) << r.output;
  EXPECT_TRUE(contains(r.output, ": ibv_get_cq_event on channel#0\n")) << r.output;
}

TEST(HangWatchdog, AWaitTheHarnessDoesNotSeeIsNeverJudged) {
  // read(2) of a pipe nobody writes: the thread may be waiting for anything.
  const RunResult r = run_program(Provider::real, "read_pipe", "--hang-after 1", "", 4);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.output;
  EXPECT_TRUE(contains(r.output, "timeout: 4 s passed")) << r.output;
  EXPECT_THAT(r.findings, Not(Contains(FindingOf("liveness.hang")))) << r.output;
}

TEST(HangWatchdog, ZeroTurnsItOff) {
  const RunResult r = run_program(Provider::real, "wait_event", "--hang-after 0", "", 4);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.output;
  EXPECT_TRUE(contains(r.output, "timeout: 4 s passed")) << r.output;
  EXPECT_THAT(r.findings, Not(Contains(FindingOf("liveness.hang")))) << r.output;
}

TEST(HangWatchdog, AProgramThatPausesIsNotEnded) {
  for (Provider provider : {Provider::real, Provider::simulated})
    for (const char* threads : {"", " --threads free"}) {
      SCOPED_TRACE(std::string(provider == Provider::real ? "real" : "simulated") + threads);
      const RunResult r =
          run_program(provider, "event_after_wait", std::string("--hang-after 1") + threads);
      EXPECT_EQ(r.status, 0) << r.output;
      EXPECT_TRUE(contains(r.output, "both completions arrived")) << r.output;
    }
}

TEST(HangWatchdog, OnTheSimulatedDeviceTheExactDiagnosisComesFirst) {
  const RunResult r = run_program(Provider::simulated, "wait_event", "--hang-after 30");
  EXPECT_EQ(r.status, 122) << r.output;
  EXPECT_THAT(r.findings, Contains(FindingOf("liveness.blocked_forever"))) << r.output;
  EXPECT_THAT(r.findings, Not(Contains(FindingOf("liveness.hang")))) << r.output;
}

TEST(HangWatchdog, OnTheSimulatedDeviceItIsTheBackstop) {
  // The exact checks off and no scheduler to see the deadlock: the watchdog.
  expect_hang_report(run_program(Provider::simulated, "wait_event", "--hang-after 1 --threads free",
                                 "VERBFAULT_CHECKS=-liveness.blocked_forever"),
                     "channel#0", {"ibv_get_cq_event on channel#0"});
}

TEST(HangWatchdog, ADestroyThatWouldWaitForeverForAcksEndsTheRunOnARealProvider) {
  const RunResult real = run_program(Provider::real, "overacked_destroy");
#ifdef VERBFAULT_SANITIZER_RUNTIME
  // In a sanitized build the fabric's wire thread is one of the scheduled
  // threads, so another thread "can act" and the run is not ended at the
  // destroy: the findings are made and the double refuses the destroy.
  // A known limitation of that build (the closing note of issue 17).
  EXPECT_THAT(real.findings, Contains(FindingOn("ack.cq_events_unacked_at_destroy", "cq#0")))
      << real.output;
  return;
#endif
  EXPECT_EQ(real.status, 122) << real.output;
  EXPECT_THAT(real.findings, Contains(FindingOn("ack.cq_events_overacked", "cq#0"))) << real.output;
  EXPECT_THAT(real.findings, Contains(FindingOn("ack.cq_events_unacked_at_destroy", "cq#0")))
      << real.output;
  EXPECT_FALSE(contains(real.output, "ibv_destroy_cq returned")) << real.output;
  // The simulated device refuses the destroy (EBUSY) instead of waiting.
  const RunResult simulated = run_program(Provider::simulated, "overacked_destroy");
  EXPECT_EQ(simulated.status, 1) << simulated.output;
  EXPECT_TRUE(contains(simulated.output, "ibv_destroy_cq returned 16")) << simulated.output;
}

// A program that takes one completion per event, its completions spaced
// so that each has an event of its own: coalescing (an event that stands
// for the next completion too) exposes it on a real provider as on the
// simulated device (issue 17), where the seed also draws whether the
// device fires an event on an arm with completions waiting; the program
// that drains after each event passes.
TEST(HangWatchdog, CoalescingExposesOneCompletionPerEventOnEveryProvider) {
  const std::string coalesce = "--hang-after 1 --fault coalesce_cq_event";
  for (const char* threads : {"", " --threads free"}) {
    SCOPED_TRACE(threads);
    const RunResult real = run_program(Provider::real, "one_per_event", coalesce + threads);
    EXPECT_EQ(real.status, 122) << real.output;
    EXPECT_THAT(real.findings, Contains(FindingOf("liveness.hang"))) << real.output;
    EXPECT_EQ(run_program(Provider::real, "one_per_event", std::string("--hang-after 1") + threads)
                  .status,
              0)
        << "without the fault each completion has its event";
    EXPECT_EQ(run_program(Provider::real, "drain_per_event", coalesce + threads).status, 0);
  }
  int exposed = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    const std::string options = coalesce + " --seed " + std::to_string(seed);
    const RunResult simulated = run_program(Provider::simulated, "one_per_event", options);
    EXPECT_TRUE(simulated.status == 0 || simulated.status == 122) << simulated.output;
    exposed += simulated.status == 122;
    EXPECT_EQ(run_program(Provider::simulated, "drain_per_event", options).status, 0);
  }
  EXPECT_GE(exposed, 1) << "seeds 1..6 on vfsim0 (3 of 6 when measured)";
}

// How many times `needle` occurs in `haystack`.
std::size_t occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++count;
  return count;
}

TEST(HangWatchdog, ARunOnARealProviderSaysOnceWhichChecksAreOffAndWhy) {
  const RunResult real = run_program(Provider::real, "waiter_thread");
  EXPECT_EQ(occurrences(real.output,
                        "verbfault: checks off on vfreal0, a real provider: "
                        "poll.wait_without_drain, poll.stranded_between_poll_and_arm, "
                        "liveness.blocked_forever, liveness.spinning (they need the "
                        "simulated device's view"),
            1u)
      << real.output;
  EXPECT_TRUE(contains(real.output, "hangs are judged by time instead (liveness.hang after 1 s"))
      << real.output;
  // Checks switched off by the user are not listed; with liveness.hang off
  // too, the line says a hang is left to the timeout.
  const RunResult fewer = run_program(Provider::real, "wait_event", "--hang-after 1",
                                      "VERBFAULT_CHECKS=-poll.*,-liveness.hang", 3);
  EXPECT_TRUE(contains(fewer.output,
                       "checks off on vfreal0, a real provider: "
                       "liveness.blocked_forever, liveness.spinning ("))
      << fewer.output;
  EXPECT_TRUE(contains(fewer.output, "liveness.hang is off too: a hang is left to --timeout"))
      << fewer.output;
  EXPECT_EQ(fewer.status, 128 + SIGTERM) << fewer.output;
  // On the simulated device every check is on: no such line.
  const RunResult simulated = run_program(Provider::simulated, "event_after_wait");
  EXPECT_FALSE(contains(simulated.output, "checks off")) << simulated.output;
}

TEST(HangWatchdog, ABadHangTimeIsOneLineAndAUsageError) {
  for (const char* value : {"abc", "-1", "1e3", " 5", "5 ", "", "86401", "1.2.3"}) {
    SCOPED_TRACE(value);
    const RunResult r =
        run_program(Provider::simulated, "wait_event", std::string("--hang-after '") + value + "'");
    EXPECT_EQ(r.status, 125) << r.output;
    EXPECT_TRUE(contains(r.output,
                         "verbfault: --hang-after='" + std::string(value) + "': expected seconds"))
        << r.output;
  }
  const RunResult r =
      run_program(Provider::simulated, "wait_event", "", "VERBFAULT_HANG_AFTER=soon");
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: VERBFAULT_HANG_AFTER='soon': expected seconds"))
      << r.output;
}

}  // namespace
}  // namespace verbfault::testing

// `verbfault run` end to end: unmodified binaries (the bundled sample and
// Debian's ibv_devinfo) under plans, its exit statuses, its output, the
// trace, and the environment-variable form of the configuration.
#include "findings_file.h"
#include "shell.h"
#include "verbfault/matchers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

namespace verbfault::testing {
namespace {

using ::testing::IsEmpty;

std::string verbfault_run(const std::string& options, const std::string& command) {
  return std::string(VERBFAULT_CLI) + " run " + options + " -- " + command;
}

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "verbfault_run_" + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(VerbfaultRun, SampleWithoutFaultsPassesItsStatusThrough) {
  ProcessResult r = run_shell(verbfault_run("--seed 5", SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: seed 5, threads pct:depth=3:steps=20000:preempt=10\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: plan: 0 rules")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: reproduce: verbfault run --seed 5 --")) << r.output;
  EXPECT_TRUE(contains(r.output, "sample_rc: OK")) << r.output;
  EXPECT_TRUE(contains(r.output, ", trace hash ")) << r.output;
}

// --findings keeps the checks' findings as JSON Lines, one object a
// finding: the sample's buggy wait (the conform reproduce line of
// docs/cli.md) leaves two poll.wait_without_drain, each with its replay
// line; a path that cannot be written is a usage error, said before the run.
TEST(VerbfaultRun, FindingsAreKeptAsJsonLinesWhereAsked) {
  const std::string findings = scratch("findings.jsonl");
  ProcessResult r = run_shell(
      verbfault_run("--findings " + findings + " --seed 1 --fault 'delayed_completion(2) p=0.3'",
                    std::string(SAMPLE_RC) + " --buggy"));
  EXPECT_EQ(r.status, 121) << r.output;
  std::istringstream lines(read_file(findings));
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_TRUE(contains(line, "{\"check\":\"poll.wait_without_drain\",\"object\":\"cq#")) << line;
    EXPECT_TRUE(contains(line, "\"replay\":\"verbfault run --seed 1 --fault")) << line;
    EXPECT_TRUE(contains(line, "\"fails_run\":true}")) << line;
  }
  EXPECT_EQ(count, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: 2 runtime check findings")) << r.output;
  // A clean run leaves the file empty, the earlier run's findings gone.
  r = run_shell(verbfault_run("--findings " + findings + " --seed 1", SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_file(findings), "");
  std::remove(findings.c_str());
}

TEST(VerbfaultRun, AFindingsFileThatCannotBeWrittenIsAUsageError) {
  ProcessResult r =
      run_shell(verbfault_run("--findings /nonexistent/findings.jsonl --seed 1", SAMPLE_RC));
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(
      contains(r.output, "verbfault: --findings '/nonexistent/findings.jsonl': cannot be written"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "sample_rc")) << "the program must not run\n" << r.output;
}

// `verbfault trace`: one line a record, filtered by object and by kind.
TEST(VerbfaultTrace, PrintsRecordsForPeopleFilteredByObjectAndKind) {
  const std::string trace = scratch("view.jsonl");
  ProcessResult r =
      run_shell(verbfault_run("--seed 3 --fault 'flush qp#1 nth=2' --trace " + trace, SAMPLE_RC));
  ASSERT_NE(r.status, 125) << r.output;
  const std::string cli = std::string(VERBFAULT_CLI) + " trace " + trace;

  ProcessResult faults = run_shell(cli + " --kind fault");
  EXPECT_EQ(faults.status, 0) << faults.output;
  EXPECT_TRUE(contains(faults.output, "qp#1 #")) << faults.output;
  EXPECT_TRUE(contains(faults.output, "fault flush rule=0 level=cause nth=2 wr=0"))
      << faults.output;
  EXPECT_FALSE(contains(faults.output, "poll_cq")) << "calls are not faults\n" << faults.output;

  ProcessResult qp0 = run_shell(cli + " --object qp#0");
  EXPECT_EQ(qp0.status, 0);
  EXPECT_TRUE(contains(qp0.output, "qp#0 #0")) << qp0.output;
  EXPECT_TRUE(contains(qp0.output, "create_qp parent=pd#0")) << qp0.output;
  EXPECT_FALSE(contains(qp0.output, "qp#1 #")) << qp0.output;
  EXPECT_FALSE(contains(qp0.output, "cq#0 #")) << qp0.output;

  ProcessResult bad = run_shell(cli + " --kind bogus");
  EXPECT_EQ(bad.status, 125);
  EXPECT_TRUE(contains(bad.output, "--kind 'bogus': expected call, fault, check or event"))
      << bad.output;
  ProcessResult missing = run_shell(std::string(VERBFAULT_CLI) + " trace " + trace + ".absent");
  EXPECT_EQ(missing.status, 125);
  EXPECT_TRUE(contains(missing.output, "cannot open for reading")) << missing.output;
  std::remove(trace.c_str());
}

TEST(VerbfaultRun, RnrRetryExhaustionFailsTheSampleWithItsOwnMessage) {
  const std::string trace = scratch("rnr.jsonl");
  // Canonical freedoms: the RNR error completion is polled before the
  // flushed receives (a drawn interleaving may legally put one first).
  ProcessResult r = run_shell("env VERBFAULT_FREEDOMS=canonical " +
                              verbfault_run("--seed 11 --fault 'rnr_retry_exhausted qp#0 "
                                            "opcode=send nth=2' --trace " +
                                                trace,
                                            SAMPLE_RC));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "RNR retry counter exceeded")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   #0 rnr_retry_exhausted qp#0 opcode=send nth=2"))
      << r.output;
  const std::string records = read_file(trace);
  EXPECT_TRUE(contains(records, "\"fault\":\"rnr_retry_exhausted\",\"rule\":0,\"level\":"))
      << records;
  EXPECT_TRUE(contains(records, "\"status\":\"rnr_retry_exc_err\"")) << records;
  std::remove(trace.c_str());
}

TEST(VerbfaultRun, PlanFileAndCoverageOfRulesThatNeverFired) {
  const std::string plan = scratch("plan.yaml");
  std::ofstream(plan) << "rules:\n  - kind: flush\n    object: qp#7\n    nth: 1\n";
  ProcessResult r = run_shell(verbfault_run("--seed 3 --plan " + plan, SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: coverage: rule #0 (flush qp#7 nth=1) never fired"))
      << r.output;
  std::remove(plan.c_str());
}

TEST(VerbfaultRun, IbvDevinfoRunsUnmodified) {
  ProcessResult r = run_shell(verbfault_run("--seed 1", std::string(IBV_DEVINFO) + " -d vfsim0"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hca_id:\tvfsim0")) << r.output;
  EXPECT_TRUE(contains(r.output, "PORT_ACTIVE")) << r.output;
}

TEST(VerbfaultRun, VerbFailureReachesAnUnmodifiedBinary) {
  // ibv_devinfo opens the device and queries it; alloc_pd is not among its
  // calls, so a failure of open is shown through a context verb instead:
  // the sample fails its first ibv_alloc_pd.
  ProcessResult r =
      run_shell(verbfault_run("--seed 1 --fault 'verb_failure(alloc_pd,ENOMEM)'", SAMPLE_RC));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ibv_alloc_pd")) << r.output;
}

TEST(VerbfaultRun, BadRuleIsAUsageErrorWithOneLine) {
  ProcessResult r = run_shell(verbfault_run("--fault 'cq_overflw cq#0'", SAMPLE_RC));
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: --fault: 'cq_overflw': unknown fault kind: expected"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "sample_rc:")) << "the program must not run\n" << r.output;
}

TEST(VerbfaultRun, BadSeedIsAUsageError) {
  ProcessResult r = run_shell(verbfault_run("--seed twelve", SAMPLE_RC));
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "expected a 64-bit unsigned seed")) << r.output;
}

TEST(VerbfaultRun, MissingCommandIs127) {
  ProcessResult r = run_shell(verbfault_run("--seed 1", "/nonexistent/program"));
  EXPECT_EQ(r.status, 127) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: cannot run '/nonexistent/program'")) << r.output;
}

TEST(VerbfaultRun, DrawnSeedIsPrintedAndReplays) {
  ProcessResult first = run_shell(verbfault_run("", SAMPLE_RC));
  ASSERT_EQ(first.status, 0) << first.output;
  const auto at = first.output.find("verbfault: seed ");
  ASSERT_NE(at, std::string::npos) << first.output;
  const std::string seed = first.output.substr(at + 16, first.output.find(' ', at + 16) - at - 16);
  EXPECT_TRUE(contains(first.output, "(drawn)")) << first.output;
  ProcessResult again = run_shell(verbfault_run("--seed " + seed, SAMPLE_RC));
  EXPECT_TRUE(contains(again.output, "verbfault: seed " + seed + ", threads pct")) << again.output;
}

TEST(VerbfaultRun, EnvironmentVariablesConfigureAProgramStartedDirectly) {
  const std::string trace = scratch("env.jsonl");
  ProcessResult r =
      run_shell("env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) +
                " VERBFAULT_SEED=9 VERBFAULT_TRACE=" + trace +
                " VERBFAULT_FAULTS='completion_error(rem_access_err) qp#0 nth=1' " + SAMPLE_RC);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "remote access error")) << r.output;
  EXPECT_TRUE(contains(read_file(trace), "\"fault\":\"completion_error\"")) << read_file(trace);
  std::remove(trace.c_str());
}

TEST(VerbfaultRun, BadEnvironmentVariableStopsTheProgramWithOneLine) {
  ProcessResult r = run_shell("env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) +
                              " VERBFAULT_FAULTS='flush qp#x' " + SAMPLE_RC);
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: VERBFAULT_FAULTS: 'qp#x'")) << r.output;
  EXPECT_FALSE(contains(r.output, "sample_rc:")) << r.output;
}

TEST(VerbfaultRun, SameSeedSameTraceDifferentSeedDifferentTrace) {
  const std::string plan = "--fault 'partial_poll p=0.5' --fault 'delayed_completion(2) p=0.2'";
  std::set<std::string> traces;
  for (const char* seed : {"21", "21", "22"}) {
    const std::string trace = scratch(std::string("det_") + seed + ".jsonl");
    ProcessResult r =
        run_shell(verbfault_run("--seed " + std::string(seed) + " " + plan + " --trace " + trace,
                                std::string(SAMPLE_RC) + " --messages 4"));
    ASSERT_EQ(r.status, 0) << r.output;
    traces.insert(read_file(trace));
    std::remove(trace.c_str());
  }
  EXPECT_EQ(traces.size(), 2u) << "seed 21 twice must give one trace, seed 22 another";
}

// The issue's determinism check: the sample under probabilistic rules, 50
// seeds, each run twice. The trace hash printed at the end of each run must
// be the same both times, and differ from seed to seed.
TEST(VerbfaultRun, FiftySeedsTwiceGiveIdenticalHashesPerSeedAndDistinctAcrossSeeds) {
  const std::string plan =
      "--fault 'partial_poll p=0.3' --fault 'delayed_completion(2) p=0.1' "
      "--fault 'spurious_cq_event p=0.2' --fault 'coalesce_cq_event p=0.1'";
  auto hash_of = [&](int seed) {
    ProcessResult r =
        run_shell(verbfault_run("--seed " + std::to_string(seed) + " " + plan, SAMPLE_RC));
    EXPECT_EQ(r.status, 0) << r.output;
    const auto at = r.output.find(", trace hash ");
    EXPECT_NE(at, std::string::npos) << r.output;
    return at == std::string::npos ? std::string() : r.output.substr(at + 13, 16);
  };
  std::set<std::string> hashes;
  for (int seed = 1000; seed < 1050; ++seed) {
    const std::string first = hash_of(seed);
    EXPECT_EQ(hash_of(seed), first) << "seed " << seed << " ran twice";
    hashes.insert(first);
  }
  EXPECT_EQ(hashes.size(), 50u) << "every seed its own trace";
}

// With no rule at all, the seed still draws the simulated device's
// freedoms (interleavings, events on arm): different seeds,
// different traces; VERBFAULT_FREEDOMS=canonical takes them away.
TEST(VerbfaultRun, TheSeedDrawsTheDevicesFreedomsUnlessCanonical) {
  auto trace_of = [](const std::string& environment, const char* seed) {
    const std::string trace = scratch(std::string("freedoms_") + seed + ".jsonl");
    ProcessResult r =
        run_shell(environment + " " +
                  verbfault_run(std::string("--seed ") + seed + " --trace " + trace, SAMPLE_RC));
    EXPECT_EQ(r.status, 0) << r.output;
    std::string records = read_file(trace);
    std::remove(trace.c_str());
    return records;
  };
  EXPECT_NE(trace_of("env", "1"), trace_of("env", "2"));
  EXPECT_EQ(trace_of("env VERBFAULT_FREEDOMS=canonical", "1"),
            trace_of("env VERBFAULT_FREEDOMS=canonical", "2"));
}

TEST(VerbfaultRun, BadFreedomsVariableIsOneLine) {
  ProcessResult r =
      run_shell("env VERBFAULT_FREEDOMS=sometimes " + verbfault_run("--seed 1", SAMPLE_RC));
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(
      r.output, "verbfault: VERBFAULT_FREEDOMS='sometimes': expected 'drawn' or 'canonical'"))
      << r.output;
}

TEST(VerbfaultRun, CheckDeterminismReportsTheFirstDifferingRecord) {
  // The program sends one more message in the second run than in the first.
  const std::string counter = scratch("runs");
  std::remove(counter.c_str());
  const std::string command = "bash -c 'n=$(cat " + counter +
                              " 2>/dev/null || echo 1); echo $((n + 1)) > " + counter + "; exec " +
                              SAMPLE_RC + " --messages $n'";
  ProcessResult r = run_shell(verbfault_run("--seed 4 --check-determinism", command));
  std::remove(counter.c_str());
  EXPECT_EQ(r.status, 124) << r.output;
  EXPECT_TRUE(
      contains(r.output, "verbfault: determinism check FAILED: the traces differ at record "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   run 1: {")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   run 2: {")) << r.output;
}

TEST(VerbfaultRun, TheTraceSurvivesAFatalSignal) {
  const std::string trace = scratch("abort.jsonl");
  ProcessResult r = run_shell(verbfault_run("--seed 6 --trace " + trace, ABORT_AFTER_VERBS));
  EXPECT_EQ(r.status, 128 + SIGABRT) << r.output;
  EXPECT_TRUE(contains(r.output, ", trace hash ")) << "the end-of-run line, even on a signal\n"
                                                   << r.output;
  // The handler renders nothing (signal-safety(7): no stdio, no
  // allocation): the records are in the journal, which verbfault run renders.
  EXPECT_TRUE(contains(r.output, "2 records recovered from its journal")) << r.output;
  EXPECT_FALSE(std::ifstream(trace + ".journal").good()) << "the journal is removed once rendered";
  const std::string records = read_file(trace);
  EXPECT_TRUE(contains(records, "\"call\":\"open_device\"")) << records;
  EXPECT_TRUE(contains(records, "\"call\":\"alloc_pd\"")) << records;
  std::remove(trace.c_str());
}

// SIGKILL runs no handler: the records are in the journal beside the
// trace, which `verbfault run` renders when the program is gone.
TEST(VerbfaultRun, TheTraceSurvivesSigkill) {
  const std::string trace = scratch("killed.jsonl");
  ProcessResult r = run_shell(
      verbfault_run("--seed 6 --trace " + trace, std::string(ABORT_AFTER_VERBS) + " kill"));
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.output;
  EXPECT_TRUE(contains(r.output, "records recovered from its journal")) << r.output;
  const std::string records = read_file(trace);
  EXPECT_TRUE(contains(records, "\"call\":\"open_device\"")) << records;
  EXPECT_TRUE(contains(records, "\"call\":\"alloc_pd\"")) << records;
  EXPECT_FALSE(std::ifstream(trace + ".journal").good()) << "the journal is removed once rendered";
  std::remove(trace.c_str());
}

// Outside `verbfault run` the journal of a killed program stays, and
// `verbfault trace` reads it as it reads a trace.
TEST(VerbfaultRun, TheTraceCommandReadsTheJournalOfAKilledProgram) {
  const std::string trace = scratch("killed-alone.jsonl");
  ProcessResult killed =
      run_shell("VERBFAULT_SEED=6 VERBFAULT_TRACE=" + trace +
                " LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) + " " + ABORT_AFTER_VERBS + " kill");
  EXPECT_EQ(killed.status, 128 + SIGKILL) << killed.output;
  ProcessResult view = run_shell(std::string(VERBFAULT_CLI) + " trace " + trace + ".journal");
  EXPECT_EQ(view.status, 0) << view.output;
  EXPECT_TRUE(contains(view.output, "open_device")) << view.output;
  EXPECT_TRUE(contains(view.output, "alloc_pd")) << view.output;
  std::remove(trace.c_str());
  std::remove((trace + ".journal").c_str());
}

// A forked child shares the parent's trace journal (a shared mapping): it
// lets go of it, so the parent's trace stays whole and holds its own
// records only (the child's 100 alloc_pd are not in it). The child is
// traced as a process of its own, beside the parent's trace, and what it
// inherited alive (pd#0, context#0) is not its leak.
TEST(VerbfaultRun, AForkedChildIsTracedAsItsOwnProcessAndLeavesTheParentsTraceWhole) {
  const std::string trace = scratch("forked.jsonl");
  const std::string child_trace = scratch("forked.fork1.jsonl");
  ProcessResult r = run_shell(verbfault_run("--seed 2 --trace " + trace, FORK_AFTER_VERBS));
  EXPECT_EQ(r.status, 0) << r.output;
  std::istringstream records(read_file(trace));
  int lines = 0, allocs = 0;
  for (std::string line; std::getline(records, line); ++lines)
    if (line.find("\"call\":\"alloc_pd\"") != std::string::npos) ++allocs;
  EXPECT_EQ(allocs, 4) << read_file(trace);
  EXPECT_EQ(lines, 1 + 1 + 3 * 2 + 1 + 1) << "open, alloc, 3 x (alloc, dealloc), dealloc, close\n"
                                          << read_file(trace);
  std::istringstream child_records(read_file(child_trace));
  int child_lines = 0, child_allocs = 0;
  for (std::string line; std::getline(child_records, line); ++child_lines)
    if (line.find("\"call\":\"alloc_pd\"") != std::string::npos) ++child_allocs;
  EXPECT_EQ(child_allocs, 100) << read_file(child_trace);
  EXPECT_EQ(child_lines, 200) << "100 x (alloc, dealloc)";
  EXPECT_TRUE(contains(r.output, "(200 records), trace " + child_trace + "\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: forked child ")) << r.output;
  EXPECT_FALSE(contains(r.output, "leak_at_exit")) << r.output;
  // The same seed: the same child trace.
  const std::string first_child = read_file(child_trace);
  ProcessResult again = run_shell(verbfault_run("--seed 2 --trace " + trace, FORK_AFTER_VERBS));
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(read_file(child_trace), first_child);
  std::remove(trace.c_str());
  std::remove(child_trace.c_str());
}

TEST(VerbfaultRun, CheckDeterminismPassesOnTheSample) {
  ProcessResult r = run_shell(
      verbfault_run("--seed 4 --fault 'partial_poll p=0.5' --check-determinism", SAMPLE_RC));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: determinism check passed: identical traces"))
      << r.output;
}

TEST(VerbfaultRun, CheckDeterminismNeverPassesWithoutTraces) {
  // A trace path in a directory that does not exist: neither run leaves a
  // trace, and two missing traces are no evidence of identical ones.
  ProcessResult r = run_shell(verbfault_run(
      "--seed 4 --check-determinism --trace /nonexistent-verbfault-dir/t.jsonl", SAMPLE_RC));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: determinism check not made: no trace from run 1, "
                       "process 0 (/nonexistent-verbfault-dir/t.jsonl.1)"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "determinism check passed")) << r.output;
}

}  // namespace

TEST(VerbfaultRun, TheSchedulerMakesAThreadedProgramReplayBySeed) {
  std::set<std::string> hashes;
  for (int seed = 1; seed <= 8; ++seed) {
    const std::string run = "VERBFAULT_THREADS=pct " +
                            verbfault_run("--seed " + std::to_string(seed), THREADED_PINGPONG);
    ProcessResult first = run_shell(run);
    ProcessResult second = run_shell(run);
    ASSERT_EQ(first.status, 0) << first.output;
    ASSERT_EQ(second.status, 0) << second.output;
    const std::string hash = trace_hash_of(first.output);
    ASSERT_FALSE(hash.empty()) << first.output;
    EXPECT_EQ(trace_hash_of(second.output), hash) << "seed " << seed;
    hashes.insert(hash);
  }
  EXPECT_GE(hashes.size(), 2u) << "every seed gave the same interleaving";
}

TEST(VerbfaultRun, AThreadBeforeMainSignalsForkAndExitWithThreadsRunningReplay) {
  for (int seed = 1; seed <= 10; ++seed) {
    ProcessResult r = run_shell(verbfault_run(
        "--seed " + std::to_string(seed) + " --check-determinism", THREADS_LIFECYCLE));
    EXPECT_EQ(r.status, 0) << "seed " << seed << "\n" << r.output;
    EXPECT_TRUE(
        contains(r.output, "threads_lifecycle: early thread done 1, signals 1, child exit 0"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "determinism check passed")) << r.output;
  }
}

TEST(VerbfaultRun, AClockBoundedDrainLoopReplaysOnTheVirtualClock) {
  // Empty polls until 2 ms passed since the last completion, usleep(50)
  // between them: on the real clock their count changes from run to run.
  const std::string findings = scratch_findings_path();
  ProcessResult r = run_shell(
      verbfault_run("--findings " + findings + " --seed 1 --check-determinism", TIMED_DRAIN));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "timed_drain: 8 completions, then ")) << r.output;
  EXPECT_TRUE(contains(r.output, "determinism check passed")) << r.output;
  EXPECT_THAT(take_findings(findings), IsEmpty()) << r.output;
}

TEST(VerbfaultRun, ThreadsOptionChoosesTheSchedulerAndIsOnTheReplayLine) {
  ProcessResult free = run_shell(verbfault_run("--seed 4 --threads free", SAMPLE_RC));
  EXPECT_EQ(free.status, 0) << free.output;
  EXPECT_TRUE(contains(free.output, "verbfault: seed 4, threads free (not deterministic)\n"))
      << free.output;
  EXPECT_TRUE(contains(free.output, "reproduce: verbfault run --seed 4 --threads free -- "))
      << free.output;
  ProcessResult walk = run_shell(verbfault_run("--seed 4 --threads random", SAMPLE_RC));
  EXPECT_EQ(walk.status, 0) << walk.output;
  EXPECT_TRUE(contains(walk.output, "verbfault: seed 4, threads random:preempt=10\n"))
      << walk.output;
  ProcessResult bad = run_shell(verbfault_run("--seed 4 --threads fair", SAMPLE_RC));
  EXPECT_EQ(bad.status, 125) << bad.output;
  EXPECT_TRUE(contains(bad.output, "verbfault: --threads 'fair': expected 'free'")) << bad.output;
  EXPECT_FALSE(contains(bad.output, "sample_rc:")) << bad.output;
}

TEST(VerbfaultRun,
     AThreadBlockedOutsideTheHarnessIsReleasedAndTheRunSaysItIsNoLongerDeterministic) {
  // The reader thread waits in the read system call on a socket (made with
  // syscall(2), which no interposer sees) while the main thread sleeps on
  // the virtual clock: only the watchdog can let the run go on.
  const std::string trace = ::testing::TempDir() + "escape_read.jsonl";
  ProcessResult r = run_shell("VERBFAULT_THREADS=pct:escape=50 " +
                              verbfault_run("--seed 3 --trace " + trace, ESCAPE_READ));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "escape_read: the reader got 'x'")) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: not deterministic from trace record 0: thread 1 is "
                       "blocked in read outside the harness"))
      << r.output;
  std::ifstream in(trace);
  const std::string first((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(
      first, R"({"obj":"thread#1","seq":0,"event":"escaped","activity":"blocked in read"})"))
      << first;
}

// Runs `command` under the scheduler twice with the seed; expects the same
// exit status and trace hash both times and returns the first run.
// The first run, with its findings (--findings).
struct SeededRun : ProcessResult {
  std::vector<Finding> findings;
};

SeededRun run_twice_by_seed(int seed, const std::string& options, const std::string& command) {
  const std::string findings = scratch_findings_path();
  const std::string run =
      "VERBFAULT_THREADS=pct " +
      verbfault_run("--findings " + findings + " --seed " + std::to_string(seed) + options,
                    command);
  SeededRun first;
  static_cast<ProcessResult&>(first) = run_shell(run);
  first.findings = findings_in(findings);
  ProcessResult second = run_shell(run);
  std::remove(findings.c_str());
  EXPECT_EQ(second.status, first.status) << "seed " << seed << "\n" << second.output;
  EXPECT_FALSE(trace_hash_of(first.output).empty()) << first.output;
  EXPECT_EQ(trace_hash_of(second.output), trace_hash_of(first.output)) << "seed " << seed;
  return first;
}

// sample_rc --threads: the server and the client on threads of their own.
// 50 seeds x 2 runs: the same trace per seed; the interleavings differ
// across seeds (100 distinct of 100 seeds when measured).
TEST(VerbfaultRun, TheThreadedSampleReplaysBySeed) {
  std::set<std::string> hashes;
  for (int seed = 1; seed <= 50; ++seed) {
    SeededRun r = run_twice_by_seed(seed, "", std::string(SAMPLE_RC) + " --threads");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sample_rc: OK")) << r.output;
    EXPECT_THAT(r.findings, IsEmpty()) << r.output;
    hashes.insert(trace_hash_of(r.output));
  }
  EXPECT_GE(hashes.size(), 25u) << "too few distinct interleavings";
}

// The effect-level faults of FiftySeedsTwice... on the threaded sample: a
// correct program completes, the same way for a seed every time.
TEST(VerbfaultRun, TheThreadedSampleRidesOutEffectFaultsAndReplays) {
  for (int seed = 1000; seed < 1020; ++seed) {
    ProcessResult r = run_twice_by_seed(
        seed,
        " --fault 'partial_poll p=0.3' --fault 'delayed_completion(2) p=0.1' --fault "
        "'spurious_cq_event p=0.2' --fault 'coalesce_cq_event p=0.1'",
        std::string(SAMPLE_RC) + " --threads");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sample_rc: OK")) << r.output;
  }
}

// The error completion of EnvironmentVariablesConfigureAProgramStartedDirectly,
// met by the server's thread: the program fails with its own message, the
// same way for the seed every time.
TEST(VerbfaultRun, TheThreadedSampleUnderAFaultPlan) {
  ProcessResult r = run_twice_by_seed(9, " --fault 'completion_error(rem_access_err) qp#0 nth=1'",
                                      std::string(SAMPLE_RC) + " --threads");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(
      contains(r.output, "sample_rc: server: completion wr_id 0 failed: remote access error"))
      << r.output;
}

// Four producers, four consumers, a bounded queue between them
// (eight_threads.cpp): every seed completes, and replays.
TEST(VerbfaultRun, EightThreadsCompleteAndReplayBySeed) {
  std::set<std::string> hashes;
  for (int seed = 1; seed <= 10; ++seed) {
    SeededRun r = run_twice_by_seed(seed, "", EIGHT_THREADS);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "eight_threads: 72 completions, OK")) << r.output;
    EXPECT_THAT(r.findings, IsEmpty()) << r.output;
    hashes.insert(trace_hash_of(r.output));
  }
  EXPECT_GE(hashes.size(), 2u) << "every seed gave the same interleaving";
}

// The synchronization calls besides mutexes and conditions (sync_calls.cpp):
// `mode` under seeds 1..`seeds`, each run twice. Every run completes with the
// same trace as the other of its seed, and no thread leaves the schedule
// (a wait passed through to the kernel would be released by the
// watchdog, and the run would say it is no longer deterministic).
std::set<std::string> sync_calls_by_seed(const std::string& mode, int seeds = 4) {
  std::set<std::string> hashes;
  for (int seed = 1; seed <= seeds; ++seed) {
    SeededRun r = run_twice_by_seed(seed, "", std::string(SYNC_CALLS) + " " + mode);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sync_calls " + mode + ": OK")) << r.output;
    EXPECT_FALSE(contains(r.output, "not deterministic")) << r.output;
    EXPECT_THAT(r.findings, IsEmpty()) << r.output;
    hashes.insert(trace_hash_of(r.output));
  }
  return hashes;
}

// The writers' order changes with few seeds (measured: seeds 1-5 give one
// trace, 6 another): PCT runs the writer of the higher priority until a
// change point.
TEST(VerbfaultRun, ReadersAndWritersOfAnRwlockReplayBySeed) {
  EXPECT_GE(sync_calls_by_seed("rwlock", 8).size(), 2u) << "every seed gave the same interleaving";
}

TEST(VerbfaultRun, AProducerAndConsumersOnSemaphoresReplayBySeed) {
  EXPECT_GE(sync_calls_by_seed("semaphore").size(), 2u) << "every seed gave the same interleaving";
}

// An event loop waits for the channel's fd in poll(2), epoll_wait(2) or
// select(2) while a worker posts: the wait is the scheduler's (its real
// calls all have a zero timeout), so the worker runs meanwhile.
TEST(VerbfaultRun, AnEventLoopPollingTheChannelFdReplaysBySeed) {
  sync_calls_by_seed("poll");
}

// Built with _FORTIFY_SOURCE, the program calls __poll_chk: the same wait.
TEST(VerbfaultRun, AFortifiedEventLoopPollingTheChannelFdReplaysBySeed) {
  for (int seed : {1, 2}) {
    ProcessResult r = run_twice_by_seed(seed, "", std::string(SYNC_CALLS_FORTIFIED) + " poll");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sync_calls poll: OK")) << r.output;
    EXPECT_FALSE(contains(r.output, "not deterministic")) << r.output;
  }
}

TEST(VerbfaultRun, AnEventLoopInEpollWaitReplaysBySeed) {
  sync_calls_by_seed("epoll");
  sync_calls_by_seed("epoll_pwait2");
}

TEST(VerbfaultRun, AnEventLoopInSelectReplaysBySeed) {
  sync_calls_by_seed("select");
}

// pthread_spin_lock spins at scheduling points: the holder, descheduled in
// a poll, runs again (a spin in the C library would hold the baton until
// the watchdog released it: "not deterministic").
TEST(VerbfaultRun, ThreadsSpinningOnASpinLockReplayBySeed) {
  sync_calls_by_seed("spin");
}

// A thread blocked in ibv_get_cq_event in the scheduler is interrupted as
// a read(2) of the channel's fd would be: SIGALRM's handler without
// SA_RESTART fails the call with EINTR (qperf's timed loops end so), with
// SA_RESTART the call goes on waiting and returns the next event.
TEST(VerbfaultRun, ASignalWithoutRestartEndsABlockedGetCqEventWithEintr) {
  for (int seed : {1, 2}) {
    ProcessResult r = run_shell(
        verbfault_run("--seed " + std::to_string(seed), std::string(SYNC_CALLS) + " alarm"));
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(
        contains(r.output, "the first ibv_get_cq_event returned -1 (Interrupted system call)"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "sync_calls alarm: OK")) << r.output;
  }
}

TEST(VerbfaultRun, ASignalWithRestartLeavesABlockedGetCqEventWaiting) {
  ProcessResult r =
      run_shell(verbfault_run("--seed 1", std::string(SYNC_CALLS) + " alarm_restart"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "the first ibv_get_cq_event returned 0 (an event)")) << r.output;
  EXPECT_TRUE(contains(r.output, "sync_calls alarm_restart: OK")) << r.output;
}

// A wait on a pipe alone (no verbs fd) is the scheduler's too: the worker
// that writes it runs meanwhile, and nobody leaves the schedule.
TEST(VerbfaultRun, AnEventLoopWaitingOnAPipeReplaysBySeed) {
  sync_calls_by_seed("pipe");
}

// accept(2), recv(2), read(2) and recvmsg(2) blocking on a socket are
// waits for it to be readable, the scheduler's as poll's: the worker that
// connects and writes runs meanwhile (blocked in the kernel, the loop
// would hold the baton until the watchdog released it: "not
// deterministic").
TEST(VerbfaultRun, AnEventLoopBlockedInAcceptAndRecvOnASocketReplaysBySeed) {
  sync_calls_by_seed("socket");
}

// pthread_mutex_timedlock and sem_timedwait time out on the virtual clock:
// after exactly the time asked (plus the quanta of the clock reads), the
// same every run, in no time of the wall clock.
TEST(VerbfaultRun, TimedWaitsTimeOutOnTheVirtualClock) {
  std::set<std::string> waited;
  for (int seed : {1, 2, 3}) {
    ProcessResult r = run_twice_by_seed(seed, "", std::string(SYNC_CALLS) + " timed");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sync_calls timed: OK")) << r.output;
    const auto at = r.output.find("timedlock waited ");
    ASSERT_NE(at, std::string::npos) << r.output;
    waited.insert(r.output.substr(at, r.output.find('\n', at) - at));
  }
  EXPECT_EQ(waited.size(), 1u) << "the waits took other virtual times";
}

// Two threads take two rwlocks in opposite order: the scheduler reports
// the deadlock, naming both waits and who holds each lock.
TEST(VerbfaultRun, TwoRwlocksTakenInOppositeOrderAreADeadlock) {
  for (int seed : {1, 2}) {
    ProcessResult r = run_twice_by_seed(seed, "", std::string(SYNC_CALLS) + " deadlock");
    EXPECT_EQ(r.status, 122) << r.output;
    EXPECT_TRUE(contains(r.output, "deadlock: every thread waits")) << r.output;
    EXPECT_TRUE(contains(r.output, "thread 0: pthread_join of thread 1")) << r.output;
    for (const char* wait : {"thread 1: pthread_rwlock_wrlock of rwlock 0x",
                             "thread 2: pthread_rwlock_wrlock of rwlock 0x"})
      EXPECT_TRUE(contains(r.output, wait)) << r.output;
    EXPECT_TRUE(contains(r.output, ", write-locked by thread 2\n")) << r.output;
    EXPECT_TRUE(contains(r.output, ", write-locked by thread 1\n")) << r.output;
  }
}

// An event loop that polls its channel with no timeout while nothing can
// raise an event: the wait is the scheduler's, so it is a deadlock, named
// by the channel (not a hang until the watchdog gives up determinism).
TEST(VerbfaultRun, APollOnAChannelNothingCanFeedIsADeadlock) {
  ProcessResult r = run_twice_by_seed(5, "", std::string(SYNC_CALLS) + " forever");
  EXPECT_EQ(r.status, 122) << r.output;
  EXPECT_TRUE(contains(r.output, "thread 1: poll on channel#0, with nothing pending")) << r.output;
}

// The same for a blocking read(2) of a context's async fd.
TEST(VerbfaultRun, AReadOfAnAsyncFdNothingCanFeedIsADeadlock) {
  ProcessResult r = run_twice_by_seed(5, "", std::string(SYNC_CALLS) + " read");
  EXPECT_EQ(r.status, 122) << r.output;
  EXPECT_TRUE(contains(r.output, "thread 1: read on the async events of context#0")) << r.output;
}

// delayed_completion holds completions back until the application waits on
// their CQ's channel: a wait in poll(2) or epoll_wait(2) is such a wait
// (the completions become visible, with an event: no wait times out).
TEST(VerbfaultRun, HeldCompletionsEndAPollOrEpollWaitOnTheirChannel) {
  for (const std::string mode : {"poll", "epoll"}) {
    const std::string trace = scratch("held_" + mode + ".jsonl");
    ProcessResult r =
        run_twice_by_seed(1, " --fault 'delayed_completion(50) p=0.5' --trace " + trace,
                          std::string(SYNC_CALLS) + " " + mode);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "sync_calls: 0 waits timed out")) << r.output;
    EXPECT_TRUE(contains(read_file(trace), R"("visible":"waiter")")) << mode;
    std::remove(trace.c_str());
  }
}

}  // namespace verbfault::testing

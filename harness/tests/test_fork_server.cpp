// The fork server (cli/fork_server.h, interposer/fork_server.h) end to
// end: a seed's trace and log through it are byte for byte those of the
// same seed run from exec, for a program whose wr_ids are heap and stack
// addresses taken before and after its first verbs call, with faults drawn
// by swarm and two jobs, and for threaded field failures (the thread
// scheduler's interleaving, the hang report's stack addresses); a program
// it cannot serve (a thread, a socket, a child process, a lock or a clock
// read before its first verbs call, or no verbs call at all) runs from
// exec, and one line says why. And without the server: `verbfault run --seed S` and seed S of a
// sweep, whose settings differ (the trace's path, the pids in the fabric's
// and the findings' names), give the program the same addresses.
#include "shell.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Dirs {
  fs::path root = fs::temp_directory_path() / ("fork-server-test-" + std::to_string(getpid()));
  Dirs() { fs::create_directories(root); }
  ~Dirs() { fs::remove_all(root); }
};

// Sweeps `program` through the fork server and from exec (--out A, B) and
// compares every seed's trace and log.
void expect_same_seeds(const std::string& options, const std::string& program, int seeds) {
  Dirs dirs;
  const std::string served = (dirs.root / "served").string();
  const std::string exec = (dirs.root / "exec").string();
  const std::string range = " --seeds 1.." + std::to_string(seeds) + " ";
  ProcessResult a = run_shell(std::string(VERBFAULT_CLI) + " sweep" + range + options +
                              " --fork-server --out " + served + " -- " + program);
  ProcessResult b = run_shell(std::string(VERBFAULT_CLI) + " sweep" + range + options + " --out " +
                              exec + " -- " + program);
  EXPECT_FALSE(contains(a.output, "fork server not used")) << a.output;
  EXPECT_EQ(a.status, b.status) << a.output << b.output;
  ASSERT_TRUE(fs::exists(served + "/fork-server-1.log")) << a.output;
  for (int seed = 1; seed <= seeds; ++seed) {
    const std::string name = "seed-" + std::to_string(seed);
    const std::string trace = read(served + "/" + name + ".jsonl");
    EXPECT_FALSE(trace.empty()) << name;
    EXPECT_EQ(trace, read(exec + "/" + name + ".jsonl")) << name << " of " << program;
    EXPECT_EQ(read(served + "/" + name + ".log"), read(exec + "/" + name + ".log"))
        << name << " of " << program;
  }
}

TEST(ForkServer, ASeedsTraceAndLogAreThoseOfItsRunFromExec) {
#ifndef VERBFAULT_SANITIZER_RUNTIME
  // wr_ids that are heap addresses: a child's heap is the program's own.
  // Not in a sanitized build: there every allocation, the harness's on its
  // own thread included, comes from ASan's one allocator, so the program's
  // addresses depend on when the harness made its run (docs/using.md).
  expect_same_seeds("--swarm --jobs 2", std::string(FORK_SERVER_PROBE) + " plain", 30);
#endif
  // The sample, its device's threads racing its own.
  expect_same_seeds("--swarm --jobs 2", SAMPLE_RC, 20);
}

TEST(ForkServer, AThreadedProgramIsScheduledAsFromExec) {
  // Their second thread starts after the first verbs call, which is the
  // schedule's first step in the server's child as from exec; a hang's
  // report names the condition variable on the main thread's stack.
  for (const char* failure : {"F10", "F11", "F12"})
    expect_same_seeds(
        "--jobs 2",
        std::string(FIELD_FAILURE_PROGRAMS_DIR) + "/field_failure_" + failure + " buggy", 15);
}

TEST(SeedAddresses, ARunAndASweepGiveASeedTheSameHeapAndStack) {
#ifdef VERBFAULT_SANITIZER_RUNTIME
  GTEST_SKIP() << "ASan's allocator serves the harness's threads too (docs/using.md)";
#else
  Dirs dirs;
  const std::string program = std::string(FORK_SERVER_PROBE) + " plain";
  // Output to files in all, so that stdout's buffer is the same block.
  auto run = [&](const std::string& trace) {
    ProcessResult r = run_shell(std::string(VERBFAULT_CLI) + " run --seed 7 --trace " + trace +
                                " -- " + program + " > " + trace + ".log 2>&1");
    EXPECT_EQ(r.status, 0) << read(trace + ".log");
    return read(trace);
  };
  const std::string short_path = run((dirs.root / "a.jsonl").string());
  // A setting 200 bytes longer: the stack would start 200 bytes lower.
  const std::string long_path = run((dirs.root / (std::string(200, 'b') + ".jsonl")).string());
  const std::string swept = (dirs.root / "swept").string();
  ProcessResult sweep = run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds 7..7 --out " +
                                  swept + " -- " + program);
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  EXPECT_TRUE(contains(short_path, "\"wr_id\":140737")) << "a stack address (0x7fff...)\n"
                                                        << short_path;
  EXPECT_EQ(short_path, long_path);
  EXPECT_EQ(short_path, read(swept + "/seed-7.jsonl"));
  // The simulated device names things after the fabric on the program's
  // heap: its name is of one width whatever the pid.
  ProcessResult env = run_shell(std::string(VERBFAULT_CLI) + " run -- /usr/bin/env");
  EXPECT_TRUE(
      std::regex_search(env.output, std::regex("\nVERBFAULT_FABRIC=run-[0-9]{7}-[0-9]{6}\n")))
      << env.output;
#endif
}

TEST(ForkServer, WhatTheProgramPrintedBeforeItsFirstVerbsCallIsInEverySeedsLogOnce) {
  Dirs dirs;
  ProcessResult r =
      run_shell(std::string(VERBFAULT_CLI) + " sweep --fork-server --seeds 1..3 --jobs 1 --out " +
                dirs.root.string() + " -- " + FORK_SERVER_PROBE + " plain");
  EXPECT_EQ(r.status, 0) << r.output;
  for (int seed = 1; seed <= 3; ++seed) {
    const std::string log = read(dirs.root / ("seed-" + std::to_string(seed) + ".log"));
    EXPECT_EQ(count(log, "before the first verbs call (stdout)"), 1u) << log;
    EXPECT_EQ(count(log, "before the first verbs call (stderr)"), 1u) << log;
    EXPECT_EQ(count(log, "fork_server_probe: 8 completions"), 1u) << log;
  }
}

TEST(ForkServer, ARunPastItsTimeoutIsEndedThroughTheServer) {
  // Blocked in pause(2) after its verbs: the timeout ends the forked child
  // (SIGTERM: the harness still says the run's end), and the server goes
  // on to the next seed. 3 s: the server too has the timeout to reach its
  // first verbs call, and a first start after a build (libverbfault.so
  // read from disk) took more than 1 s once.
  ProcessResult r = run_shell(std::string(VERBFAULT_CLI) +
                              " sweep --fork-server --seeds 1..2 --jobs 1 --timeout 3 -- " +
                              FORK_SERVER_PROBE + " hang");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_FALSE(contains(r.output, "fork server not used")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault:   2 seeds: timeout, ")) << r.output;
}

TEST(ForkServer, AProgramItCannotServeRunsFromExecAndOneLineSaysWhy) {
  const struct {
    const char* mode;
    const char* why;
  } cases[] = {
      {"thread", "fork server not used: it runs 2 threads before its first verbs call"},
      {"socket", "fork server not used: it has a socket open (fd "},
      {"child", "fork server not used: it started another process (pid "},
      {"none", "fork server not used: the program ended (exit 0) before its first verbs call"},
#ifndef VERBFAULT_SANITIZER_RUNTIME
      // From exec, a seed's schedule counts these from load (its steps, its
      // virtual clock). Not in a sanitized build: there they come through
      // ASan's interceptors, whose calls the server cannot tell from the
      // runtime's own (docs/using.md).
      {"clock",
       "fork server not used: it made a call a seed's schedule counts (a lock, sleep, wait or "
       "clock read) before its first verbs call, from "},
      {"lock",
       "fork server not used: it made a call a seed's schedule counts (a lock, sleep, wait or "
       "clock read) before its first verbs call, from "},
#endif
  };
  for (const auto& c : cases) {
    ProcessResult r =
        run_shell(std::string(VERBFAULT_CLI) + " sweep --fork-server --seeds 1..4 --jobs 2 -- " +
                  FORK_SERVER_PROBE + " " + c.mode);
    EXPECT_EQ(r.status, 0) << c.mode << ": " << r.output;
    EXPECT_EQ(count(r.output, c.why), 1u) << c.mode << ": " << r.output;
    EXPECT_EQ(count(r.output, "fork server not used"), 1u) << c.mode << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "4 of 4 seeds run in")) << c.mode << ": " << r.output;
  }
  // Without --fork-server no server is tried, and nothing is said.
  ProcessResult plain = run_shell(std::string(VERBFAULT_CLI) + " sweep --seeds 1..2 -- " +
                                  FORK_SERVER_PROBE + " thread");
  EXPECT_EQ(plain.status, 0) << plain.output;
  EXPECT_FALSE(contains(plain.output, "fork server")) << plain.output;
  // Several commands: one server could not stand for them.
  ProcessResult group =
      run_shell(std::string(VERBFAULT_CLI) + " sweep --fork-server --seeds 1..1 --timeout 60 -- " +
                SAMPLE_RC + " ::: " + SAMPLE_RC);
  EXPECT_TRUE(contains(group.output, "fork server not used: a run of several commands"))
      << group.output;
}

}  // namespace
}  // namespace verbfault::testing

// `verbfault run -- A ::: B`: several commands as one run (cli/run_group.h,
// cli/process_group.h). What each process is given, its own trace, the
// run's exit status, the peer grace and the timeout, forwarded signals,
// proc= rules, the reproduce line and replay files, and bad separators.
// The verbs programs (member_probe) run with VERBFAULT_FABRIC=private:
// each device on its own, whatever the local fabric does.
#include "shell.h"
#include "fabric_files.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace verbfault::testing {
namespace {

namespace fs = std::filesystem;

const std::string kCli = VERBFAULT_CLI;
const std::string kProbe = MEMBER_PROBE;
const std::string kPingpong = IBV_RC_PINGPONG;

std::string run_group(const std::string& options, const std::string& commands) {
  return kCli + " run " + options + " -- " + commands;
}

// A fresh directory for one test's traces.
std::string scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("verbfault_group_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value after `key=` on the line of `output` that starts with `prefix`.
std::string field(const std::string& output, const std::string& prefix, const std::string& key) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::size_t at = line.find(" " + key + "=");
    if (at == std::string::npos) return "";
    const std::size_t from = at + key.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
  }
  return "";
}

// A TCP port free now (the kernel's pick for port 0): each run its own, so
// that tests running in parallel do not meet.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return 0;
  close(fd);
  return ntohs(address.sin_port);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The shell commands print what the run gave them: both get the run's seed,
// plan and fabric, each its own VERBFAULT_PROC.
TEST(VerbfaultRunGroup, EveryProcessGetsTheSameSeedPlanAndFabricAndItsOwnIndex) {
  const std::string dir = scratch_dir("environment");
  const std::string plan = dir + "/plan.yaml";
  std::ofstream(plan) << "rules:\n  - kind: flush\n    object: qp#3\n    nth: 2\n";
  const std::string show =
      "echo \"$0 proc=$VERBFAULT_PROC fabric=$VERBFAULT_FABRIC seed=$VERBFAULT_SEED "
      "plan=$VERBFAULT_PLAN faults=$VERBFAULT_FAULTS checks=$VERBFAULT_CHECKS\"";
  ProcessResult r =
      run_shell("env -u VERBFAULT_FABRIC -u VERBFAULT_PROC VERBFAULT_CHECKS=-resource.* " +
                run_group("--seed 7 --plan " + plan + " --fault 'partial_poll cq#0 p=0.5'",
                          "sh -c '" + show + "' server ::: sh -c '" + show + "' client"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(field(r.output, "server", "proc"), "0") << r.output;
  EXPECT_EQ(field(r.output, "client", "proc"), "1") << r.output;
  const std::string fabric = field(r.output, "server", "fabric");
  EXPECT_EQ(fabric.rfind("run-", 0), 0u) << r.output;
  EXPECT_EQ(field(r.output, "client", "fabric"), fabric) << r.output;
  for (const char* who : {"server", "client"}) {
    EXPECT_EQ(field(r.output, who, "seed"), "7") << r.output;
    EXPECT_EQ(field(r.output, who, "plan"), fs::absolute(plan).string()) << r.output;
    EXPECT_EQ(field(r.output, who, "faults"), "partial_poll") << r.output;  // up to its space
    EXPECT_EQ(field(r.output, who, "checks"), "-resource.*") << r.output;
  }
  // Another run, another fabric.
  ProcessResult again = run_shell("env -u VERBFAULT_FABRIC " +
                                  run_group("--seed 7", "sh -c '" + show + "' server ::: true"));
  EXPECT_NE(field(again.output, "server", "fabric"), fabric) << again.output;
  // A fabric the environment names is kept.
  ProcessResult mine = run_shell(
      "VERBFAULT_FABRIC=mine " +
      run_group("--seed 7", "sh -c '" + show + "' server ::: sh -c '" + show + "' client"));
  EXPECT_EQ(field(mine.output, "server", "fabric"), "mine") << mine.output;
  EXPECT_EQ(field(mine.output, "client", "fabric"), "mine") << mine.output;
}

// A single command is member 0 of a fabric of its own, unless the
// environment says otherwise (a process started by hand into a fabric).
TEST(VerbfaultRunGroup, ASingleCommandIsMemberZeroUnlessTheEnvironmentSaysOtherwise) {
  const std::string show = "sh -c 'echo \"probe proc=$VERBFAULT_PROC fabric=$VERBFAULT_FABRIC\"'";
  ProcessResult alone =
      run_shell("env -u VERBFAULT_FABRIC -u VERBFAULT_PROC " + run_group("--seed 1", show));
  ASSERT_EQ(alone.status, 0) << alone.output;
  EXPECT_EQ(field(alone.output, "probe", "proc"), "0") << alone.output;
  EXPECT_EQ(field(alone.output, "probe", "fabric").rfind("run-", 0), 0u) << alone.output;
  // VERBFAULT_PROC changes what proc= rules match: it is on the replay line.
  ProcessResult one =
      run_shell("env -u VERBFAULT_FABRIC VERBFAULT_PROC=1 " + run_group("--seed 1", show));
  EXPECT_EQ(field(one.output, "probe", "proc"), "1") << one.output;
  EXPECT_TRUE(contains(one.output, "reproduce: VERBFAULT_PROC=1 verbfault run --seed 1 --"))
      << one.output;
  ProcessResult joined =
      run_shell("env -u VERBFAULT_PROC VERBFAULT_FABRIC=shared " + run_group("--seed 1", show));
  EXPECT_EQ(field(joined.output, "probe", "proc"), "") << "the fabric picks\n" << joined.output;
  // With several commands verbfault numbers them: the environment's is not
  // theirs, nor on the line.
  ProcessResult several =
      run_shell("VERBFAULT_PROC=5 " + run_group("--seed 1", show + " ::: " + show));
  EXPECT_TRUE(contains(several.output, "probe proc=0 ")) << several.output;
  EXPECT_TRUE(contains(several.output, "probe proc=1 ")) << several.output;
  EXPECT_TRUE(contains(several.output, "reproduce: verbfault run --seed 1 --")) << several.output;
}

TEST(VerbfaultRunGroup, ABadProcVariableStopsTheProgramWithOneLine) {
  for (const char* bad : {"64", "server", "-1", ""}) {
    ProcessResult r = run_shell(std::string("env VERBFAULT_FABRIC=private VERBFAULT_PROC='") + bad +
                                "' " + run_group("--seed 1", kProbe));
    EXPECT_EQ(r.status, 125) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, std::string("verbfault: VERBFAULT_PROC='") + bad +
                                       "': expected a member index 0..63\n"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "fabric=")) << "the program must not run\n" << r.output;
  }
}

// --trace T: process i writes T with .i before the extension; each process's
// line names its trace and hash; the run's hash folds them and replays.
TEST(VerbfaultRunGroup, EachProcessWritesItsOwnTraceAndTheRunItsHash) {
  const std::string dir = scratch_dir("traces");
  const std::string command =
      "VERBFAULT_FABRIC=private " +
      run_group("--seed 5 --trace " + dir + "/trace.jsonl", kProbe + " ::: " + kProbe);
  ProcessResult r = run_shell(command);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/trace.jsonl")) << "no trace of the run as a whole";
  for (const char* index : {"0", "1"}) {
    const std::string trace = dir + "/trace." + index + ".jsonl";
    const std::string records = read_file(trace);
    EXPECT_TRUE(contains(records, "\"call\":\"open_device\"")) << trace << "\n" << records;
    EXPECT_TRUE(contains(records, "\"call\":\"alloc_pd\"")) << trace << "\n" << records;
    EXPECT_TRUE(contains(r.output, std::string("verbfault: process ") + index +
                                       " (member_probe): exit 0, trace hash "))
        << r.output;
    EXPECT_TRUE(contains(r.output, ", trace " + trace + "\n")) << r.output;
    EXPECT_FALSE(fs::exists(trace + ".journal"));
  }
  EXPECT_TRUE(contains(r.output, "verbfault: seed 5, trace hash ")) << r.output;
  EXPECT_TRUE(contains(r.output, " (2 processes, ")) << r.output;
  // The processes' own end-of-run lines go to verbfault run, not stderr:
  // the run's line is the only "seed 5, trace hash" line.
  EXPECT_EQ(r.output.find("verbfault: seed 5, trace hash "),
            r.output.rfind("verbfault: seed 5, trace hash "))
      << r.output;
  const std::string hash = trace_hash_of(r.output.substr(r.output.rfind("verbfault: seed 5")));
  ProcessResult again = run_shell(command);
  EXPECT_EQ(trace_hash_of(again.output.substr(again.output.rfind("verbfault: seed 5"))), hash)
      << again.output;
}

// A parallel launcher as the run's one command (a shell standing for
// mpirun): each rank (OMPI_COMM_WORLD_RANK) is process VERBFAULT_PROC + 1 +
// rank, with a trace of its own that the run names.
TEST(VerbfaultRunGroup, EachRankOfALauncherIsAProcessWithItsOwnTrace) {
  const std::string dir = scratch_dir("ranks");
  const std::string ranks = "'for r in 0 1; do OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 " +
                            kProbe + " & done; wait'";
  ProcessResult r =
      run_shell("VERBFAULT_FABRIC=private " +
                run_group("--seed 5 --trace " + dir + "/trace.jsonl", "sh -c " + ranks));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* index : {"1", "2"}) {
    const std::string trace = dir + "/trace." + index + ".jsonl";
    EXPECT_TRUE(contains(read_file(trace), "\"call\":\"alloc_pd\"")) << trace;
    EXPECT_TRUE(contains(r.output, std::string("verbfault: process ") + index +
                                       " (a rank sh started): trace " + trace + "\n"))
        << r.output;
  }
  EXPECT_FALSE(contains(read_file(dir + "/trace.jsonl"), "alloc_pd")) << "the launcher's own";
}

TEST(VerbfaultRunGroup, AMalformedRankVariableStopsTheRankWithOneLine) {
  ProcessResult r = run_shell("VERBFAULT_FABRIC=private OMPI_COMM_WORLD_RANK=first " +
                              run_group("--seed 1", kProbe));
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "OMPI_COMM_WORLD_RANK='first' is invalid: expected a rank number"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "fabric=")) << "the program must not run\n" << r.output;
}

// A SIGKILLed process leaves its journal: recovered into its own trace.
TEST(VerbfaultRunGroup, AKilledProcessesJournalIsRecoveredIntoItsTrace) {
  const std::string dir = scratch_dir("killed");
  ProcessResult r =
      run_shell("VERBFAULT_FABRIC=private " + run_group("--seed 6 --trace " + dir + "/t.jsonl",
                                                        kProbe + " ::: " + kProbe + " kill"));
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: process 1 (member_probe) ended before writing its "
                       "trace: "))
      << r.output;
  EXPECT_TRUE(contains(r.output, " recovered from its journal into " + dir + "/t.1.jsonl"))
      << r.output;
  EXPECT_TRUE(contains(read_file(dir + "/t.1.jsonl"), "\"call\":\"alloc_pd\""));
  EXPECT_FALSE(fs::exists(dir + "/t.1.jsonl.journal"));
  EXPECT_TRUE(contains(read_file(dir + "/t.0.jsonl"), "\"call\":\"close_device\""));
  EXPECT_TRUE(contains(r.output, "process 1 (member_probe): signal KILL, no trace hash"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: seed 6, trace hash unknown: process 1 left none"))
      << r.output;
}

// 0 when all exit 0, else the first nonzero status in process order.
TEST(VerbfaultRunGroup, TheStatusIsTheFirstNonzeroInProcessOrder) {
  auto status = [](const std::string& a, const std::string& b) {
    ProcessResult r = run_shell(run_group("--seed 1", "sh -c '" + a + "' ::: sh -c '" + b + "'"));
    return r.status;
  };
  EXPECT_EQ(status("exit 0", "exit 0"), 0);
  EXPECT_EQ(status("exit 0", "exit 4"), 4);
  EXPECT_EQ(status("exit 5", "exit 0"), 5);
  EXPECT_EQ(status("exit 5", "exit 4"), 5);
  EXPECT_EQ(status("exit 0", "kill -ABRT $$"), 128 + SIGABRT);  // a crash (ASan takes SEGV)
  ProcessResult missing =
      run_shell(run_group("--seed 1", "sh -c 'exit 0' ::: /nonexistent/client"));
  EXPECT_EQ(missing.status, 127) << missing.output;
  EXPECT_TRUE(contains(missing.output, "verbfault: cannot run '/nonexistent/client'"))
      << missing.output;
  ProcessResult said = run_shell(run_group("--seed 1", "sh -c 'exit 0' ::: sh -c 'exit 4'"));
  EXPECT_TRUE(contains(said.output, "verbfault: process 1 (sh): exit 4")) << said.output;
  EXPECT_TRUE(contains(said.output, "verbfault: the run's status is process 1's: exit 4"))
      << said.output;
}

// One exits 3 at once, the other would sleep 60 s: it gets the grace (the
// sleep is real: --threads free), then is ended; the run's status is 3.
// (--start-wait 0 in these: a sleep never listens, and the client is to
// run beside it at once.)
TEST(VerbfaultRunGroup, AFailureEndsTheOthersAfterThePeerGrace) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(run_group("--seed 1 --threads free --peer-grace 1 --start-wait 0",
                                        "sleep 60 ::: sh -c 'exit 3'"));
  const double took = seconds_since(start);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_GE(took, 1.0) << r.output;
  EXPECT_LT(took, 1.0 + 3) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: process 1 (sh) failed: exit 3; ending the 1 other still "
                       "running in 1 s (--peer-grace) unless it ends before\n"))
      << r.output;
  // SIGTERM: the harness in it still says its trace hash.
  EXPECT_TRUE(contains(
      r.output, "verbfault: process 0 (sleep): signal TERM (ended: --peer-grace), trace hash "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: the run's status is process 1's: exit 3")) << r.output;
}

// The default grace is 5 s; a crash (a signal) starts it too. The crash is
// an abort (a failed assert): a SIGSEGV would be taken by AddressSanitizer's
// handler in the sanitized suite (handle_segv) and turned into exit 1.
TEST(VerbfaultRunGroup, TheDefaultGraceIsFiveSecondsAndACrashStartsIt) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(run_group("--seed 1 --threads free --start-wait 0",
                                        "sh -c 'sleep 60' ::: sh -c 'kill -ABRT $$'"));
  const double took = seconds_since(start);
  EXPECT_EQ(r.status, 128 + SIGABRT) << r.output;
  EXPECT_GE(took, 5.0) << r.output;
  EXPECT_LT(took, 5.0 + 3) << r.output;
  EXPECT_TRUE(contains(r.output, "failed: signal ABRT; ending the 1 other still running in 5 s"))
      << r.output;
}

// A process that exits 0 starts no grace: a server may take a while to
// finish after its client is done.
TEST(VerbfaultRunGroup, ASuccessStartsNoGrace) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(run_group("--seed 1 --threads free --peer-grace 0.2",
                                        "sh -c 'sleep 1.5; echo server done' ::: true"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_GE(seconds_since(start), 1.5);
  EXPECT_TRUE(contains(r.output, "server done")) << r.output;
}

// --timeout ends the whole group; the processes it ended count (signal TERM).
TEST(VerbfaultRunGroup, TheTimeoutEndsTheWholeGroup) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(
      run_group("--seed 1 --threads free --timeout 1 --start-wait 0", "sleep 60 ::: sleep 60"));
  const double took = seconds_since(start);
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.output;
  EXPECT_GE(took, 1.0) << r.output;
  EXPECT_LT(took, 1.0 + 3) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: timeout: 1 s passed (--timeout): ending the 2 processes still "
                       "running\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 0 (sleep): signal TERM (ended: --timeout)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 1 (sleep): signal TERM (ended: --timeout)"))
      << r.output;
}

// SIGINT and SIGTERM sent to verbfault reach every process; verbfault
// waits for them and ends with their status.
TEST(VerbfaultRunGroup, SignalsAreForwardedToEveryProcess) {
  for (const int sent : {SIGINT, SIGTERM}) {
    const std::string log = scratch_dir("signals") + "/log";
    std::fflush(nullptr);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // A child of a test runner may have inherited SIGINT ignored.
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      std::freopen(log.c_str(), "w", stdout);
      dup2(STDOUT_FILENO, STDERR_FILENO);
      execl(VERBFAULT_CLI, VERBFAULT_CLI, "run", "--seed", "1", "--threads", "free", "--start-wait",
            "0", "--", "sleep", "60", ":::", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    // Until both have started (their lines are not there yet: wait a bit).
    usleep(500 * 1000);
    const auto start = std::chrono::steady_clock::now();
    kill(pid, sent);
    int raw = 0;
    ASSERT_EQ(waitpid(pid, &raw, 0), pid);
    const std::string output = read_file(log);
    EXPECT_LT(seconds_since(start), 2.0) << output;
    ASSERT_TRUE(WIFEXITED(raw)) << "verbfault itself must not die of it\n" << output;
    EXPECT_EQ(WEXITSTATUS(raw), 128 + sent) << output;
    const std::string name = sigabbrev_np(sent);
    EXPECT_TRUE(contains(output, "verbfault: process 0 (sleep): signal " + name + ", trace hash"))
        << output;
    EXPECT_TRUE(contains(output, "verbfault: process 1 (sleep): signal " + name + ", trace hash"))
        << output;
  }
}

// proc=1: the rule fires in process 1 only, under its index in the plan
// (rule 1 in process 1's trace); a rule for no process here is not
// reported as never fired by the processes it is not for.
TEST(VerbfaultRunGroup, ARuleForProcessOneFiresThereOnlyUnderItsIndex) {
  const std::string dir = scratch_dir("proc_rule");
  ProcessResult r = run_shell("VERBFAULT_FABRIC=private " +
                              run_group("--seed 3 --trace " + dir +
                                            "/t.jsonl --fault 'flush qp#9 nth=1' "
                                            "--fault 'verb_failure(alloc_pd,ENOMEM) proc=1'",
                                        kProbe + " ::: " + kProbe));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "member_probe 1: ibv_alloc_pd: Cannot allocate memory"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "member_probe 0: ibv_alloc_pd")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 0 (member_probe): exit 0")) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 1 (member_probe): exit 2")) << r.output;
  EXPECT_FALSE(contains(read_file(dir + "/t.0.jsonl"), "\"fault\""))
      << read_file(dir + "/t.0.jsonl");
  EXPECT_TRUE(contains(read_file(dir + "/t.1.jsonl"), "\"fault\":\"verb_failure\",\"rule\":1,"))
      << read_file(dir + "/t.1.jsonl");
  EXPECT_FALSE(contains(r.output, "rule #1 (verb_failure(alloc_pd,ENOMEM) proc=1) never fired"))
      << r.output;
  // Rule #0 is every process's: each says it never fired.
  const std::string never = "verbfault: coverage: rule #0 (flush qp#9 nth=1) never fired";
  EXPECT_NE(r.output.find(never), r.output.rfind(never)) << r.output;

  // By name, every process of that program (--start-wait 0: both start at
  // once; else process 1 would not start after process 0 failed).
  ProcessResult named =
      run_shell("VERBFAULT_FABRIC=private " +
                run_group("--seed 3 --start-wait 0 "
                          "--fault 'verb_failure(alloc_pd,ENOMEM) proc=member_probe'",
                          kProbe + " ::: " + kProbe));
  EXPECT_EQ(named.status, 2) << named.output;
  EXPECT_TRUE(contains(named.output, "member_probe 0: ibv_alloc_pd")) << named.output;
  EXPECT_TRUE(contains(named.output, "member_probe 1: ibv_alloc_pd")) << named.output;
}

// The reproduce line has both commands; a sweep's replay file of a
// two-process failure replays it, trace hash included.
TEST(VerbfaultRunGroup, TheReproduceLineAndReplayFilesHaveEveryCommand) {
  const std::string dir = scratch_dir("replay");
  const std::string commands = kProbe + " exit 0 ::: " + kProbe + " exit 0";
  ProcessResult r =
      run_shell("VERBFAULT_FABRIC=private " +
                run_group("--seed 9 --fault 'verb_failure(alloc_pd,ENOMEM) proc=1'", commands));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "reproduce: verbfault run --seed 9 --fault "
                       "'verb_failure(alloc_pd,ENOMEM) proc=1' -- " +
                           commands + "\n"))
      << r.output;

  ProcessResult sweep =
      run_shell("VERBFAULT_FABRIC=private " + kCli + " sweep --seeds 9..9 --out " + dir +
                " --fault 'verb_failure(alloc_pd,ENOMEM) proc=1' -- " + commands);
  EXPECT_EQ(sweep.status, 1) << sweep.output;
  EXPECT_TRUE(contains(sweep.output, "seed 9 failed: exit 2, first fault verb_failure"))
      << sweep.output;
  const std::string replay_file = dir + "/seed-9.replay";
  const std::string text = read_file(replay_file);
  EXPECT_TRUE(contains(text, "\":::\"") || contains(text, ", :::,")) << text;
  EXPECT_TRUE(contains(text, "trace_hash: ")) << text;
  ProcessResult replay = run_shell("VERBFAULT_FABRIC=private " + kCli + " replay " + replay_file);
  EXPECT_EQ(replay.status, 0) << replay.output;
  EXPECT_TRUE(contains(replay.output, "reproduced: the failure and the trace hash"))
      << replay.output;
}

// A firing becomes an explicit rule for the process it fired in.
TEST(VerbfaultRunGroup, MinimizeKeepsTheProcessAFaultFiredIn) {
  ProcessResult r =
      run_shell("VERBFAULT_FABRIC=private " + kCli +
                " minimize --seed 2 --fault 'verb_failure(alloc_pd,ENOMEM) proc=1' -- " + kProbe +
                " ::: " + kProbe);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "    object: context#0\n    proc: 1\n    nth: 1\n")) << r.output;
}

TEST(VerbfaultRunGroup, CheckDeterminismComparesEveryProcesssTraces) {
  ProcessResult r = run_shell("VERBFAULT_FABRIC=private " +
                              run_group("--seed 4 --check-determinism", kProbe + " ::: " + kProbe));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: determinism check passed: identical traces"))
      << r.output;
}

// A launcher's ranks are traced too: the check compares the launcher's
// trace and each rank's (three processes), and passes only when there is
// one of each in both runs.
TEST(VerbfaultRunGroup, CheckDeterminismComparesALaunchersRanks) {
  const std::string ranks = "'for r in 0 1; do OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 " +
                            kProbe + " & done; wait'";
  ProcessResult r = run_shell("VERBFAULT_FABRIC=private " +
                              run_group("--seed 4 --check-determinism", "sh -c " + ranks));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "determinism check not made")) << r.output;
  const std::size_t passed = r.output.find("verbfault: determinism check passed: identical traces");
  ASSERT_NE(passed, std::string::npos) << r.output;
  // One hash per process: the launcher's and two ranks'.
  const std::string line = r.output.substr(passed, r.output.find('\n', passed) - passed);
  EXPECT_EQ(occurrences(line, ", "), 2u) << line;
  // A launcher that starts another number of ranks the second time fails.
  const std::string flip = "'if [ -e $D/once ]; then n=\"0\"; else touch $D/once; n=\"0 1\"; fi; "
                           "for r in $n; do OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 " +
                           kProbe + " & done; wait'";
  const std::string dir = scratch_dir("flip");
  ProcessResult flipped = run_shell("D=" + dir + " VERBFAULT_FABRIC=private " +
                                    run_group("--seed 4 --check-determinism", "sh -c " + flip));
  EXPECT_EQ(flipped.status, 124) << flipped.output;
  EXPECT_TRUE(contains(flipped.output,
                       "verbfault: determinism check FAILED: run 1 traced 3 processes, run 2 2"))
      << flipped.output;
}

// ibv_rc_pingpong's client connects once and gives up when nobody listens
// yet: it starts only once its server listens on the TCP port. Both run
// in the run's fabric, exchange 10 messages and check the data (-c).
TEST(VerbfaultRunGroup, AClientStartsOnceItsServerListens) {
  const int port = free_port();
  ASSERT_NE(port, 0);
  const std::string args = " -d vfsim0 -n 10 -c -p " + std::to_string(port);
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(
      "env -u VERBFAULT_FABRIC -u VERBFAULT_PROC -u VERBFAULT_FABRIC_SIZE " +
      run_group("--seed 7", kPingpong + args + " ::: " + kPingpong + args + " localhost"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "Couldn't connect")) << r.output;
  EXPECT_FALSE(contains(r.output, "is not listening")) << r.output;
  EXPECT_EQ(occurrences(r.output, "\n10 iters in "), 2u) << "both sides' result lines\n"
                                                         << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 0 (ibv_rc_pingpong): exit 0, trace hash "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: process 1 (ibv_rc_pingpong): exit 0, trace hash "))
      << r.output;
  EXPECT_TRUE(contains(r.output, " (2 processes, ")) << r.output;
  // Listening was seen, not the wait's end (10 s by default).
  EXPECT_LT(seconds_since(start), 5.0) << r.output;
}

// A first command that never listens: after --start-wait the next starts
// anyway, with one line saying so, while the first still runs.
TEST(VerbfaultRunGroup, AFirstCommandThatNeverListensDelaysTheNextByTheStartWaitOnly) {
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = run_shell(run_group("--seed 1 --threads free --start-wait 0.5",
                                        "sh -c 'sleep 2; echo server d\"\"one' ::: "
                                        "sh -c 'echo client st\"\"arted'"));
  const double took = seconds_since(start);
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string line =
      "verbfault: process 0 (sh) is not listening after 0.5 s (--start-wait); starting process 1 "
      "anyway\n";
  EXPECT_EQ(occurrences(r.output, line), 1u) << r.output;
  const std::size_t client = r.output.find("client started");
  ASSERT_NE(client, std::string::npos) << r.output;
  EXPECT_LT(r.output.find(line), client) << r.output;
  EXPECT_LT(client, r.output.find("server done")) << "the client ran beside the server\n"
                                                  << r.output;
  EXPECT_GE(took, 2.0) << r.output;
  EXPECT_LT(took, 2.0 + 2) << r.output;

  // A first command that ends is ready: the next starts at once, no line.
  ProcessResult ended =
      run_shell(run_group("--seed 1 --start-wait 30", "true ::: sh -c 'echo client st\"\"arted'"));
  EXPECT_EQ(ended.status, 0) << ended.output;
  EXPECT_TRUE(contains(ended.output, "client started")) << ended.output;
  EXPECT_FALSE(contains(ended.output, "is not listening")) << ended.output;
}

// A first command that fails before the next one's turn: the run is
// ending, the next is not started (it would have nobody to meet).
TEST(VerbfaultRunGroup, NothingStartsAfterAFailure) {
  ProcessResult r = run_shell(
      run_group("--seed 1 --threads free", "sh -c 'exit 3' ::: sh -c 'echo client st\"\"arted'"));
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_FALSE(contains(r.output, "client started")) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: process 1 (sh): not started (the run was ending before its "
                       "turn)\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: the run's status is process 0's: exit 3")) << r.output;
}

TEST(VerbfaultRunGroup, ABadStartWaitIsOneLine) {
  for (const char* bad : {"x", "-1", "''", "inf", "nan", "1s", "1e999"}) {
    ProcessResult r = run_shell(run_group(std::string("--seed 1 --start-wait ") + bad,
                                          "true ::: sh -c 'echo client st\"\"arted'"));
    EXPECT_EQ(r.status, 125) << bad << "\n" << r.output;
    const std::string text = std::string(bad) == "''" ? "" : bad;
    EXPECT_EQ(r.output, "verbfault: --start-wait '" + text +
                            "': expected seconds, a number >= 0 (0: start every command at "
                            "once)\n")
        << bad;
  }
}

// Every process is told how many the run has; the fabric verbfault named
// for the run leaves no file behind once the run is over, one named by the
// environment (others may share it) stays.
TEST(VerbfaultRunGroup, TheRunsFabricIsRemovedAtItsEnd) {
  const std::string show =
      "sh -c 'test -e /dev/shm/verbfault-fabric-$VERBFAULT_FABRIC.v2 && "  // status_table_path
      "echo \"table fabric=$VERBFAULT_FABRIC size=$VERBFAULT_FABRIC_SIZE \"'";
  ProcessResult r = run_shell("env -u VERBFAULT_FABRIC -u VERBFAULT_FABRIC_SIZE " +
                              run_group("--seed 1", kProbe + " ::: " + show + " ::: " + kProbe));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string fabric = field(r.output, "table", "fabric");
  ASSERT_EQ(fabric.rfind("run-", 0), 0u) << "process 0 made its status table\n" << r.output;
  EXPECT_EQ(field(r.output, "table", "size"), "3") << r.output;
  EXPECT_FALSE(fs::exists(sim::wire::status_table_path(fabric))) << r.output;

  const std::string mine = "vf-keep-" + std::to_string(getpid());
  const std::string table = sim::wire::status_table_path(mine);
  ProcessResult kept = run_shell("VERBFAULT_FABRIC=" + mine + " VERBFAULT_FABRIC_SIZE=5 " +
                                 run_group("--seed 1", kProbe + " ::: " + show));
  EXPECT_EQ(kept.status, 0) << kept.output;
  EXPECT_EQ(field(kept.output, "table", "size"), "5") << "the environment's\n" << kept.output;
  EXPECT_TRUE(fs::exists(table)) << kept.output;
  fs::remove(table);
}

// A ':::' with nothing on one side is one line naming what was expected.
TEST(VerbfaultRunGroup, AnEmptyCommandAroundTheSeparatorIsOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"::: true",
       "verbfault: run: ':::' with no command before it: expected the first command "
       "(the server) there\n"},
      {"true :::",
       "verbfault: run: ':::' with no command after it: expected the next command "
       "(the client) there\n"},
      {"true ::: ::: true",
       "verbfault: run: two ':::' with no command between them: expected a command there\n"},
  };
  for (const auto& [commands, line] : cases) {
    ProcessResult r = run_shell(run_group("--seed 1", commands));
    EXPECT_EQ(r.status, 125) << commands << "\n" << r.output;
    EXPECT_EQ(r.output, line) << commands;
  }
  ProcessResult sweep = run_shell(kCli + " sweep --seeds 1..2 -- true :::");
  EXPECT_EQ(sweep.status, 125) << sweep.output;
  EXPECT_EQ(sweep.output,
            "verbfault: sweep: ':::' with no command after it: expected the next command (the "
            "client) there\n");
}

}  // namespace
}  // namespace verbfault::testing

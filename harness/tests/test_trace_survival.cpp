// The trace survives the end of the program however it comes, and a trace
// that cannot be written stops the run: SIGKILL at random moments leaves a
// prefix of the whole run's trace in whole records; a write error (a full
// device, a journal that cannot grow) is one line and exit status 125,
// under `verbfault run` and with LD_PRELOAD alone; a FIFO without a reader
// is one line, not a program blocked before main; a FIFO with a reader
// gets the trace.
#include "shell.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace verbfault::testing {
namespace {

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "verbfault_trace_" + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int count_lines_starting(const std::string& output, const std::string& start) {
  int count = 0;
  for (const std::string& line : lines_of(output))
    if (line.rfind(start, 0) == 0) ++count;
  return count;
}

// `verbfault trace` of a trace or a journal: one line a record.
std::string viewed(const std::string& file) {
  ProcessResult view = run_shell(std::string(VERBFAULT_CLI) + " trace " + file);
  EXPECT_EQ(view.status, 0) << view.output;
  return view.output;
}

// Starts `argv` with `environment` added, its output to /dev/null.
pid_t start(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  dup2(null, 2);
  for (const std::string& setting : environment) putenv(const_cast<char*>(setting.c_str()));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// The pid of `parent`'s only child once it has one (verbfault run's
// program), or 0 when `parent` ended first (then reaped into `status`).
pid_t child_of(pid_t parent, int& status) {
  for (;;) {
    std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                     "/children");
    pid_t child = 0;
    if (in >> child) return child;
    if (waitpid(parent, &status, WNOHANG) == parent) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Waits until `pid`, a child of another process, has ended (gone, or a
// zombie its parent has not reaped yet).
void wait_until_ended(pid_t pid) {
  for (;;) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return;
    const std::size_t after_name = line.rfind(')');
    if (after_name == std::string::npos || after_name + 2 >= line.size() ||
        line[after_name + 2] == 'Z')
      return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// `environment` for a run that is killed on purpose: under the sanitizers,
// without LeakSanitizer's check at exit. A SIGKILL that lands during that
// check cuts its report (or its tracer's message) short and leaves an
// empty report file, which says nothing and fails the sanitized suite.
// The same program's whole run, never killed, keeps the check.
std::vector<std::string> to_be_killed(std::vector<std::string> environment) {
  if (const char* options = std::getenv("ASAN_OPTIONS"))
    environment.push_back(std::string("ASAN_OPTIONS=") + options + ":detect_leaks=0");
  return environment;
}

// What a killed run left, for people: its journal when it has one (the
// program died before rendering it), else its trace.
std::vector<std::string> left_by_killed_run(const std::string& trace) {
  const std::string journal = trace + ".journal";
  if (std::ifstream(journal).good()) return lines_of(viewed(journal));
  if (!std::ifstream(trace).good() || read_file(trace).empty()) return {};
  return lines_of(viewed(trace));
}

void expect_prefix(const std::vector<std::string>& part, const std::vector<std::string>& whole,
                   const std::string& what) {
  ASSERT_LE(part.size(), whole.size()) << what;
  for (std::size_t i = 0; i < part.size(); ++i)
    ASSERT_EQ(part[i], whole[i]) << what << ": record " << i;
}

// SIGKILL at random moments of a run with plain LD_PRELOAD: what the
// journal holds is always the first records of the whole run's trace,
// each whole (a record cut in two would differ from the whole run's, or
// fail to render).
TEST(TraceSurvival, SigkillAtRandomMomentsLeavesAPrefixOfWholeRecords) {
  const std::string trace = scratch("killed.jsonl");
  const std::vector<std::string> program = {SAMPLE_RC, "--messages", "400"};
  const std::vector<std::string> environment = {"LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY),
                                                "VERBFAULT_SEED=11", "VERBFAULT_TRACE=" + trace};
  const auto began = std::chrono::steady_clock::now();
  const pid_t whole_run = start(program, environment);
  int status = 0;
  ASSERT_EQ(waitpid(whole_run, &status, 0), whole_run);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto took = std::chrono::steady_clock::now() - began;
  const std::vector<std::string> whole = lines_of(viewed(trace));
  ASSERT_GT(whole.size(), 1000u);

  std::mt19937_64 random(std::random_device{}());
  const auto span = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
  int cut_short = 0;
  for (int kill_number = 0; kill_number < 40; ++kill_number) {
    std::remove(trace.c_str());
    std::remove((trace + ".journal").c_str());
    const pid_t pid = start(program, to_be_killed(environment));
    const auto delay = std::uniform_int_distribution<long long>(0, span)(random);
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    kill(pid, SIGKILL);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    const std::vector<std::string> left = left_by_killed_run(trace);
    expect_prefix(left, whole, "killed after " + std::to_string(delay) + " us");
    if (left.size() < whole.size()) ++cut_short;
  }
  EXPECT_GT(cut_short, 0) << "no kill came before the end: the test tested nothing";
  std::remove(trace.c_str());
  std::remove((trace + ".journal").c_str());
}

// The same under `verbfault run`, whose recovery renders the journal of
// its killed program into the trace file (JSON Lines).
TEST(TraceSurvival, SigkillUnderVerbfaultRunIsRecoveredAsAPrefixOfWholeLines) {
  const std::string trace = scratch("run-killed.jsonl");
  const std::vector<std::string> command = {
      VERBFAULT_CLI, "run", "--seed", "12", "--trace", trace, "--", SAMPLE_RC, "--messages", "400"};
  // The kills are spread over the program's own life, not the command's:
  // under the sanitizers verbfault's start and its rendering of the trace
  // take most of the run, and delays drawn over the whole of it all landed
  // after the program had ended (CI, ASan).
  const pid_t whole_run = start(command, {});
  int status = 0;
  const pid_t whole_program = child_of(whole_run, status);
  ASSERT_NE(whole_program, 0) << "the program of the whole run was never seen";
  const auto began = std::chrono::steady_clock::now();
  wait_until_ended(whole_program);
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_EQ(waitpid(whole_run, &status, 0), whole_run);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::vector<std::string> whole = lines_of(read_file(trace));
  ASSERT_GT(whole.size(), 1000u);

  std::mt19937_64 random(std::random_device{}());
  const auto span = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
  constexpr int kKills = 15;
  int cut_short = 0;
  for (int kill_number = 0; kill_number < kKills; ++kill_number) {
    std::remove(trace.c_str());
    const pid_t verbfault = start(command, to_be_killed({}));
    const pid_t program = child_of(verbfault, status);
    if (program == 0) continue;  // the whole run was over before the program could be seen
    // One kill in each fifteenth of the program's life, at a random point.
    const auto delay = std::uniform_int_distribution<long long>(
        span * kill_number / kKills, span * (kill_number + 1) / kKills)(random);
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
    kill(program, SIGKILL);
    ASSERT_EQ(waitpid(verbfault, &status, 0), verbfault);
    const std::string text = read_file(trace);
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "a torn last line";
    expect_prefix(lines_of(text), whole, "killed after " + std::to_string(delay) + " us");
    if (lines_of(text).size() < whole.size()) ++cut_short;
    EXPECT_FALSE(std::ifstream(trace + ".journal").good());
  }
  EXPECT_GT(cut_short, 0) << "no kill came before the end: the test tested nothing";
  std::remove(trace.c_str());
}

// A trace to a device keeps its journal in $TMPDIR, named for its process:
// never a new file in /dev, and never one journal shared by every program
// tracing to /dev/full at once (the two tests below ran side by side and
// removed each other's /dev/full.journal). The journal is made when the
// library loads, so any program shows where it goes while it runs.
TEST(TraceSurvival, ATraceToADeviceKeepsItsJournalOutOfDev) {
  const std::string folder = scratch("tmpdir");
  ASSERT_EQ(mkdir(folder.c_str(), 0700), 0);
  std::remove("/dev/null.journal");  // an older build's
  // cat blocks opening a FIFO nobody writes (a sleep would not do: the
  // harness's scheduler takes sleeps as pauses and returns at once).
  const std::string fifo = folder + "/never-written";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const pid_t pid =
      start({"/bin/cat", fifo}, to_be_killed({"LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY),
                                              "VERBFAULT_TRACE=/dev/null", "TMPDIR=" + folder}));
  const std::string journal = folder + "/verbfault-" + std::to_string(pid) + ".journal";
  bool seen = false;
  for (int wait = 0; wait < 2000 && !seen; ++wait) {
    seen = access(journal.c_str(), F_OK) == 0;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool in_dev = access("/dev/null.journal", F_OK) == 0;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(seen) << "no journal " << journal;
  EXPECT_FALSE(in_dev) << "a journal in /dev";
  std::remove(journal.c_str());
  std::remove(fifo.c_str());
  std::remove("/dev/null.journal");
  rmdir(folder.c_str());
}

TEST(TraceSurvival, AWriteErrorIsOneLineAndStatus125UnderVerbfaultRun) {
  ProcessResult r =
      run_shell(std::string(VERBFAULT_CLI) + " run --seed 1 --trace /dev/full -- " + SAMPLE_RC);
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "verbfault: VERBFAULT_TRACE='/dev/full': cannot write: No space "
                       "left on device"))
      << r.output;
  EXPECT_EQ(count_lines_starting(r.output, "verbfault: VERBFAULT_TRACE="), 1) << r.output;
  EXPECT_FALSE(contains(r.output, "--trace '/dev/full'")) << "one line, not two\n" << r.output;
  EXPECT_FALSE(contains(r.output, "trace hash")) << r.output;
}

TEST(TraceSurvival, AWriteErrorIsOneLineAndStatus125WithLdPreloadAlone) {
  ProcessResult r = run_shell("env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) +
                              " VERBFAULT_SEED=1 VERBFAULT_TRACE=/dev/full " + SAMPLE_RC);
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_EQ(count_lines_starting(r.output, "verbfault: VERBFAULT_TRACE='/dev/full': cannot write"),
            1)
      << r.output;
  EXPECT_FALSE(contains(r.output, "trace hash")) << r.output;
}

// A file size limit (RLIMIT_FSIZE, its signal ignored) stops the journal
// at its second growth, in the middle of the run: the run stops there.
TEST(TraceSurvival, AJournalThatCannotGrowStopsTheRunWithStatus125) {
  const std::string trace = scratch("limited.jsonl");
  // bash: its ulimit -f counts KiB (dash's, 512-byte blocks).
  ProcessResult r =
      run_shell("bash -c \"trap '' XFSZ; ulimit -f 1500; exec env LD_PRELOAD=" +
                preload_of(VERBFAULT_LIBRARY) + " VERBFAULT_SEED=1 VERBFAULT_TRACE=" + trace + " " +
                SAMPLE_RC + " --messages 20000\"");
  EXPECT_EQ(r.status, 125) << r.output;
  EXPECT_TRUE(contains(r.output, "verbfault: VERBFAULT_TRACE='" + trace + "': its journal '" +
                                     trace + ".journal' cannot grow (File too large)"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "sample_rc: OK")) << "the run stops there\n" << r.output;
  std::remove(trace.c_str());
  std::remove((trace + ".journal").c_str());
}

TEST(TraceSurvival, AFifoWithoutAReaderIsOneLineNotAHang) {
  const std::string fifo = scratch("noreader.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& command :
       {"timeout 20 env LD_PRELOAD=" + preload_of(VERBFAULT_LIBRARY) +
            " VERBFAULT_SEED=1 VERBFAULT_TRACE=" + fifo + " " + SAMPLE_RC,
        "timeout 20 " + std::string(VERBFAULT_CLI) + " run --seed 1 --trace " + fifo + " -- " +
            SAMPLE_RC}) {
    ProcessResult r = run_shell(command);
    EXPECT_EQ(r.status, 125) << command << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "verbfault: VERBFAULT_TRACE='" + fifo +
                                       "': a FIFO with no reader: expected a file, or a FIFO "
                                       "that a reader has open\n"))
        << r.output;
    EXPECT_FALSE(contains(r.output, "sample_rc:")) << "the program must not run\n" << r.output;
  }
  std::remove(fifo.c_str());
}

TEST(TraceSurvival, AFifoWithAReaderGetsTheTrace) {
  const std::string fifo = scratch("reader.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Open before the program starts (O_NONBLOCK: no writer yet), read all
  // along: the trace may be larger than the pipe's buffer.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  std::atomic<bool> ended{false};
  std::string received;
  std::thread drain([&] {
    char buffer[65536];
    for (;;) {
      const ssize_t n = read(reader, buffer, sizeof buffer);
      if (n > 0) {
        received.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 && ended) return;  // no writer left, and none to come
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  ProcessResult r =
      run_shell("timeout 60 " + std::string(VERBFAULT_CLI) + " run --seed 1 --trace " + fifo +
                " -- " + SAMPLE_RC + " --messages 300");
  ended = true;
  drain.join();
  close(reader);
  std::remove(fifo.c_str());
  std::remove((fifo + ".journal").c_str());
  EXPECT_EQ(r.status, 0) << r.output;
  const auto at = r.output.find("trace hash ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string records = r.output.substr(r.output.find('(', at) + 1);
  EXPECT_EQ(std::to_string(lines_of(received).size()) + " records)",
            records.substr(0, records.find('\n')))
      << r.output;
  EXPECT_TRUE(received.back() == '\n');
}

}  // namespace
}  // namespace verbfault::testing

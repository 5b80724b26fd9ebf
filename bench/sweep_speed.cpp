// What a seed of a sweep costs against the program it runs (issue 37),
// for the bundled sample and for the sample with 50 ms of start-up before
// its first verbs call (sample_rc_slow_start): the program run bare (alone,
// libverbfault.so preloaded for its simulated device, no seed: no
// harness), under `verbfault run --seed S`, and per seed of `verbfault
// sweep --seeds A..B --jobs 1` (one job: the runner's own cost, not the
// machine's cores), from exec for every seed (the default) and through
// the fork server (--fork-server). Every time is the real time of one
// run; a sweep's is its wall time divided by its seeds. Ratios against the
// bare run of the same program, in the same process:
//   ratio BM_RunPerSeed/BM_BareRun: X
//   ratio BM_SweepPerSeedExec/BM_BareRun: X
//   ratio BM_SweepPerSeed/BM_BareRun: X
//   ratio BM_SweepPerSeedExec/BM_BareRun slow start: X
//   ratio BM_SweepPerSeed/BM_BareRun slow start: X
// and the sweeps' seeds per second.
//
//   sweep_speed VERBFAULT LIBVERBFAULT SAMPLE_RC SAMPLE_RC_SLOW_START [benchmark options]
#include "bench_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

extern char** environ;

namespace {

std::string verbfault_cli, library;
// The programs, by the benchmarks' argument: 0 the sample, 1 its slow start.
std::string programs[2];
constexpr int kSeedsPerSweep = 50;

// Runs argv to its end, output to /dev/null, with `preload` in LD_PRELOAD
// when given; its exit status, -1 when it could not be started.
int run(std::vector<std::string> args, const std::string& preload = "") {
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("LD_PRELOAD=", 0) != 0) env_text.emplace_back(*e);
  if (!preload.empty()) env_text.push_back("LD_PRELOAD=" + preload);
  std::vector<char*> envp;
  for (std::string& entry : env_text) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void BM_BareRun(benchmark::State& state) {
  for (auto _ : state)
    if (run({programs[state.range(0)]}, library) != 0)
      return state.SkipWithError("the program failed");
}
BENCHMARK(BM_BareRun)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_RunPerSeed(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state)
    if (run({verbfault_cli, "run", "--seed", std::to_string(seed++), "--",
             programs[state.range(0)]}) != 0)
      return state.SkipWithError("verbfault run failed");
}
BENCHMARK(BM_RunPerSeed)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

// One iteration is one seed: a sweep of kSeedsPerSweep seeds, its wall time
// shared out over them (manual time).
void sweep_per_seed(benchmark::State& state, bool fork_server) {
  std::uint64_t first = 1;
  for (auto _ : state) {
    const auto began = std::chrono::steady_clock::now();
    const std::string seeds =
        std::to_string(first) + ".." + std::to_string(first + kSeedsPerSweep - 1);
    first += kSeedsPerSweep;
    std::vector<std::string> args = {verbfault_cli, "sweep", "--seeds", seeds, "--jobs", "1"};
    if (fork_server) args.push_back("--fork-server");
    args.insert(args.end(), {"--", programs[state.range(0)]});
    if (run(args) != 0) return state.SkipWithError("verbfault sweep failed");
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() /
        kSeedsPerSweep);
  }
}
void BM_SweepPerSeed(benchmark::State& state) { sweep_per_seed(state, true); }
void BM_SweepPerSeedExec(benchmark::State& state) { sweep_per_seed(state, false); }
BENCHMARK(BM_SweepPerSeedExec)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SweepPerSeed)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

class RatioReporter : public verbfault::bench::RunCollector {
 public:
  void PrintRatios() const {
    for (int program = 0; program < 2; ++program) {
      const std::string arg = "/" + std::to_string(program);
      const std::string label = program == 0 ? "" : " slow start";
      const double bare = real_time("BM_BareRun" + arg);
      const double one = real_time("BM_RunPerSeed" + arg);
      if (bare > 0 && one > 0)
        std::printf("ratio BM_RunPerSeed/BM_BareRun%s: %.2f\n", label.c_str(), one / bare);
      for (const char* sweep : {"BM_SweepPerSeedExec", "BM_SweepPerSeed"}) {
        const double per_seed = manual_time(sweep + arg);
        if (bare > 0 && per_seed > 0)
          std::printf("ratio %s/BM_BareRun%s: %.2f\n", sweep, label.c_str(), per_seed / bare);
        // The times are in the benchmarks' unit, milliseconds.
        if (per_seed > 0)
          std::printf("seeds/s %s%s: %.0f\n", sweep, label.c_str(), 1000.0 / per_seed);
      }
    }
  }

 private:
  double manual_time(const std::string& name) const {
    auto it = times_.find(name + "/manual_time");
    return it == times_.end() ? 0.0 : it->second;
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: sweep_speed VERBFAULT LIBVERBFAULT SAMPLE_RC SAMPLE_RC_SLOW_START "
                 "[benchmark options]\n");
    return 2;
  }
  verbfault_cli = argv[1];
  library = argv[2];
  programs[0] = argv[3];
  programs[1] = argv[4];
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}

// What a seed of a sweep costs against the program it runs (issue 37):
// the bundled sample run bare (the program alone with libverbfault.so
// preloaded for its simulated device, no seed: no harness), once
// under `verbfault run --seed S`, and per seed of `verbfault sweep --seeds
// A..B --jobs 1` (one job: the runner's own cost, not the machine's
// cores). Every time is the real time of one run of the sample; a sweep's
// is its wall time divided by its seeds. Ratios against the bare run of
// the same process:
//   ratio BM_RunPerSeed/BM_BareRun: X
//   ratio BM_SweepPerSeed/BM_BareRun: X
// and the sweep's seeds per second:
//   seeds/s BM_SweepPerSeed: X
//
//   sweep_speed VERBFAULT LIBVERBFAULT SAMPLE_RC [benchmark options]
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

std::string verbfault_cli, library, sample;
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
    if (run({sample}, library) != 0) return state.SkipWithError("sample_rc failed");
}
BENCHMARK(BM_BareRun)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_RunPerSeed(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state)
    if (run({verbfault_cli, "run", "--seed", std::to_string(seed++), "--", sample}) != 0)
      return state.SkipWithError("verbfault run failed");
}
BENCHMARK(BM_RunPerSeed)->UseRealTime()->Unit(benchmark::kMillisecond);

// One iteration is one seed: a sweep of kSeedsPerSweep seeds, its wall time
// shared out over them (manual time).
void BM_SweepPerSeed(benchmark::State& state) {
  std::uint64_t first = 1;
  for (auto _ : state) {
    const auto began = std::chrono::steady_clock::now();
    const std::string seeds =
        std::to_string(first) + ".." + std::to_string(first + kSeedsPerSweep - 1);
    first += kSeedsPerSweep;
    if (run({verbfault_cli, "sweep", "--seeds", seeds, "--jobs", "1", "--", sample}) != 0)
      return state.SkipWithError("verbfault sweep failed");
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() /
        kSeedsPerSweep);
  }
}
BENCHMARK(BM_SweepPerSeed)->UseManualTime()->Unit(benchmark::kMillisecond);

class RatioReporter : public verbfault::bench::RunCollector {
 public:
  void PrintRatios() const {
    const double bare = real_time("BM_BareRun");
    const double one = real_time("BM_RunPerSeed");
    const double sweep = manual_time("BM_SweepPerSeed");
    if (bare > 0 && one > 0) std::printf("ratio BM_RunPerSeed/BM_BareRun: %.2f\n", one / bare);
    if (bare > 0 && sweep > 0)
      std::printf("ratio BM_SweepPerSeed/BM_BareRun: %.2f\n", sweep / bare);
    // The times are in the benchmarks' unit, milliseconds.
    if (sweep > 0) std::printf("seeds/s BM_SweepPerSeed: %.0f\n", 1000.0 / sweep);
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
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: sweep_speed VERBFAULT LIBVERBFAULT SAMPLE_RC [benchmark options]\n");
    return 2;
  }
  verbfault_cli = argv[1];
  library = argv[2];
  sample = argv[3];
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}

#include "sweep.h"

#include "plan_names.h"
#include "process.h"
#include "verbfault/plan.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

namespace verbfault::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// What one seed's run came to.
struct Outcome {
  std::uint64_t seed = 0;
  int status = 0;
  bool timed_out = false;
  std::string signature;
  std::string reproduce;
};

// The failure's signature: exit status (or the signal, or the timeout),
// the checks that reported, in order of id, and the first fault that fired.
Outcome judge(std::uint64_t seed, int status, bool timed_out, const fs::path& log,
              const fs::path& trace) {
  Outcome outcome{seed, status, timed_out, "", ""};
  std::set<std::string> checks;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("verbfault: check ", 0) == 0) {
      const std::size_t end = line.find(' ', 17);
      checks.insert(line.substr(17, end == std::string::npos ? std::string::npos : end - 17));
    } else if (line.rfind("verbfault: reproduce: ", 0) == 0) {
      outcome.reproduce = line.substr(22);
    }
  }
  std::string first_fault;
  std::ifstream records(trace);
  for (std::string line; first_fault.empty() && std::getline(records, line);) {
    const std::size_t at = line.find("\"fault\":\"");
    if (at == std::string::npos) continue;
    const std::size_t end = line.find('"', at + 9);
    first_fault = line.substr(at + 9, end - at - 9);
  }
  std::string& s = outcome.signature;
  if (timed_out)
    s = "timeout";
  else if (status > 128 && status < 128 + 65)
    s = std::string("signal ") + strsignal(status - 128);
  else
    s = "exit " + std::to_string(status);
  if (!checks.empty()) {
    s += ", checks ";
    for (const std::string& check : checks) s += (s.back() == ' ' ? "" : ",") + check;
  }
  s += first_fault.empty() ? ", no fault fired" : ", first fault " + first_fault;
  return outcome;
}

std::string self_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "verbfault" : self.string();
}

// Starts `verbfault run` for one seed, its output into `log`, in a process
// group of its own (a timeout ends the whole group).
pid_t start(const SweepOptions& options, std::uint64_t seed, const fs::path& log,
            const fs::path& trace) {
  std::vector<std::string> args = {self_executable(), "run", "--seed", std::to_string(seed)};
  if (options.plan_file) args.insert(args.end(), {"--plan", *options.plan_file});
  for (const std::string& fault : options.faults) args.insert(args.end(), {"--fault", fault});
  if (options.threads) args.insert(args.end(), {"--threads", *options.threads});
  args.insert(args.end(), {"--library", options.library, "--trace", trace.string(), "--"});
  args.insert(args.end(), options.command.begin(), options.command.end());
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(kExitCannotExecute);
}

}  // namespace

void parse_seed_range(const std::string& text, SweepOptions& options) {
  const std::size_t dots = text.find("..");
  const std::string first = text.substr(0, dots);
  const std::string last = dots == std::string::npos ? first : text.substr(dots + 2);
  try {
    options.first_seed = parse_seed(first, "--seeds " + text + ": A");
    options.last_seed = parse_seed(last, "--seeds " + text + ": B");
  } catch (const PlanError& error) {
    throw std::invalid_argument(error.what());
  }
  if (options.last_seed < options.first_seed)
    throw std::invalid_argument("--seeds '" + text + "': expected A..B with A <= B");
}

void parse_shard(const std::string& text, SweepOptions& options) {
  const std::size_t slash = text.find('/');
  const std::optional<std::uint64_t> index =
      slash == std::string::npos ? std::nullopt : engine::parse_number(text.substr(0, slash));
  const std::optional<std::uint64_t> count =
      slash == std::string::npos ? std::nullopt : engine::parse_number(text.substr(slash + 1));
  if (!index || !count || *index < 1 || *index > *count || *count > 1'000'000)
    throw std::invalid_argument("--shard '" + text + "': expected I/N with 1 <= I <= N");
  options.shard_index = static_cast<unsigned>(*index);
  options.shard_count = static_cast<unsigned>(*count);
}

int sweep(const SweepOptions& options) {
  std::deque<std::uint64_t> pending;
  // Every N-th seed from the I-th: the shards of a range partition it.
  for (std::uint64_t seed = options.first_seed + (options.shard_index - 1);
       seed >= options.first_seed && seed <= options.last_seed; seed += options.shard_count)
    pending.push_back(seed);
  const std::size_t total = pending.size();
  const unsigned jobs =
      options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());

  fs::path dir;
  bool temporary = false;
  std::error_code error;
  if (options.out) {
    dir = *options.out;
    fs::create_directories(dir, error);
  } else {
    char templ[] = "/tmp/verbfault-sweep-XXXXXX";
    if (mkdtemp(templ) == nullptr) error = std::error_code(errno, std::generic_category());
    dir = templ;
    temporary = true;
  }
  if (error) {
    std::fprintf(stderr, "verbfault: sweep: cannot make the directory '%s': %s\n", dir.c_str(),
                 error.message().c_str());
    return kExitUsage;
  }
  std::fprintf(stderr, "verbfault: sweep: %zu seed%s (%llu..%llu, shard %u/%u), %u job%s\n", total,
               total == 1 ? "" : "s", static_cast<unsigned long long>(options.first_seed),
               static_cast<unsigned long long>(options.last_seed), options.shard_index,
               options.shard_count, jobs, jobs == 1 ? "" : "s");

  struct Running {
    std::uint64_t seed;
    Clock::time_point started;
    bool killed = false;
  };
  std::map<pid_t, Running> running;
  std::vector<Outcome> failures;
  std::size_t done = 0;
  const Clock::time_point began = Clock::now();
  const bool terminal = isatty(STDERR_FILENO) != 0;
  auto paths = [&](std::uint64_t seed) {
    const std::string stem = "seed-" + std::to_string(seed);
    return std::pair{dir / (stem + ".log"), dir / (stem + ".jsonl")};
  };
  auto stop_launching = [&] {
    return options.max_failures != 0 && failures.size() >= options.max_failures;
  };

  while (!running.empty() || (!pending.empty() && !stop_launching())) {
    while (running.size() < jobs && !pending.empty() && !stop_launching()) {
      const std::uint64_t seed = pending.front();
      pending.pop_front();
      const auto [log, trace] = paths(seed);
      const pid_t pid = start(options, seed, log, trace);
      if (pid < 0) {
        std::fprintf(stderr, "verbfault: sweep: fork: %s\n", std::strerror(errno));
        return kExitUsage;
      }
      running[pid] = {seed, Clock::now()};
    }
    int raw = 0;
    const pid_t pid = waitpid(-1, &raw, WNOHANG);
    if (pid <= 0) {
      // Nothing ended: a timeout is the last resort.
      for (auto& [child, run] : running) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - run.started).count();
        if (!run.killed && elapsed > options.timeout_seconds) {
          kill(-child, SIGKILL);
          run.killed = true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    const auto found = running.find(pid);
    if (found == running.end()) continue;
    const Running run = found->second;
    running.erase(found);
    ++done;
    const int status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    if (status != 0 || run.killed) {
      const auto [log, trace] = paths(run.seed);
      Outcome outcome = judge(run.seed, status, run.killed, log, trace);
      if (terminal) std::fputs("\r\033[K", stderr);
      std::fprintf(stderr, "verbfault: seed %llu failed: %s\nverbfault:   reproduce: %s\n",
                   static_cast<unsigned long long>(run.seed), outcome.signature.c_str(),
                   outcome.reproduce.c_str());
      failures.push_back(std::move(outcome));
    }
    if (terminal) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
      const double rate = elapsed > 0 ? done / elapsed : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu failed, %.1f seeds/s, ETA %.0f s", done, total,
                   failures.size(), rate, rate > 0 ? (total - done) / rate : 0.0);
    }
  }
  if (terminal) std::fputs("\r\033[K", stderr);

  const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
  std::fprintf(stderr,
               "verbfault: sweep: %zu of %zu seeds run in %.1f s (%.1f seeds/s), %zu failed%s\n",
               done, total, elapsed, elapsed > 0 ? done / elapsed : 0.0, failures.size(),
               stop_launching() && done < total ? " (stopped: --max-failures)" : "");
  // One line per signature: the seeds that failed that way, in order.
  std::map<std::string, std::vector<std::uint64_t>> groups;
  for (const Outcome& failure : failures) groups[failure.signature].push_back(failure.seed);
  for (auto& [signature, seeds] : groups) {
    std::sort(seeds.begin(), seeds.end());
    std::string list;
    for (std::size_t i = 0; i < seeds.size() && i < 10; ++i)
      list += (i == 0 ? "" : " ") + std::to_string(seeds[i]);
    if (seeds.size() > 10) list += " ...";
    std::fprintf(stderr, "verbfault:   %zu seed%s: %s (seeds %s)\n", seeds.size(),
                 seeds.size() == 1 ? "" : "s", signature.c_str(), list.c_str());
  }
  if (temporary) fs::remove_all(dir, error);
  return failures.empty() ? 0 : 1;
}

}  // namespace verbfault::cli

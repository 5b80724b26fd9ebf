#include "seed_run.h"

#include "command_line.h"
#include "fork_server.h"
#include "process.h"
#include "run.h"
#include "run_group.h"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <variant>

namespace verbfault::cli {

namespace fs = std::filesystem;

fs::path log_path(const fs::path& dir, std::uint64_t seed) {
  return dir / ("seed-" + std::to_string(seed) + ".log");
}

fs::path trace_path(const fs::path& dir, std::uint64_t seed) {
  return dir / ("seed-" + std::to_string(seed) + ".jsonl");
}

std::string self_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "verbfault" : self.string();
}

fs::path make_temporary_directory(const char* what) {
  std::string templ = (fs::temp_directory_path() / (std::string("verbfault-") + what + "-XXXXXX"));
  if (mkdtemp(templ.data()) == nullptr)
    throw fs::filesystem_error("cannot make a temporary directory", templ,
                               std::error_code(errno, std::generic_category()));
  return templ;
}

pid_t start_seed_run(const SeedRun& run, const fs::path& log, const fs::path& trace,
                     ForkServer* server) {
  std::vector<std::string> args = {self_executable(), "run", "--seed", std::to_string(run.seed)};
  if (run.plan_file) args.insert(args.end(), {"--plan", *run.plan_file});
  for (const std::string& fault : run.faults) args.insert(args.end(), {"--fault", fault});
  if (run.threads) args.insert(args.end(), {"--threads", *run.threads});
  args.insert(args.end(), {"--library", run.library, "--trace", trace.string(), "--"});
  args.insert(args.end(), run.command.begin(), run.command.end());
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  g_seed_server = server;
  for (const auto& [name, value] : run.settings) setenv(name.c_str(), value.c_str(), 1);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // `verbfault run` with these arguments, in this forked child rather than
  // a new exec of verbfault: the same parser and the same run, without
  // loading and starting the CLI again for every seed. The parent is one
  // thread (the runner's loop), so the child may go on as it is.
  std::variant<CommandLine, int> parsed =
      parse_command_line(static_cast<int>(argv.size() - 1), argv.data());
  int status = exit_status::kUsage;
  if (const int* refused = std::get_if<int>(&parsed))
    status = *refused;
  else
    status = cli::run(std::get<CommandLine>(parsed).run);
  std::fflush(nullptr);
  _exit(status);
}

Outcome judge_seed_run(std::uint64_t seed, int status, bool timed_out, const fs::path& log,
                       const fs::path& trace, const std::vector<int>& pass_statuses) {
  Outcome outcome;
  outcome.seed = seed;
  outcome.status = status;
  outcome.timed_out = timed_out;
  // Findings that fail a run (`verbfault run` counts them; a leak at exit
  // is reported but left to judgement, and not counted).
  bool& findings = outcome.findings;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("verbfault: ", 0) == 0 &&
        line.find(" runtime check finding") != std::string::npos &&
        line.find("(listed above)") != std::string::npos) {
      findings = true;
    } else if (line.rfind("verbfault: check ", 0) == 0) {
      const std::size_t end = line.find(' ', 17);
      outcome.checks.insert(
          line.substr(17, end == std::string::npos ? std::string::npos : end - 17));
    } else if (line.rfind("verbfault: reproduce: ", 0) == 0) {
      outcome.reproduce = line.substr(22);
    } else if (const std::size_t at = line.find(", trace hash ");
               line.rfind("verbfault: seed ", 0) == 0 && at != std::string::npos) {
      // The last such line is the run's: a run of several processes ends
      // with its combined hash, or "unknown" when one left none.
      const std::string hash = line.substr(at + 13, 16);
      outcome.trace_hash.reset();
      if (hash.size() == 16 && hash.find_first_not_of("0123456789abcdef") == std::string::npos)
        outcome.trace_hash = hash;
    }
  }
  // The faults that fired: {"obj":..,"fault":"flush","rule":0,..,"nth":3[,"per":"context#0"]}.
  // The processes' own traces beside it: a group's (0..N-1), or a
  // launcher's ranks' (1..N: the launcher is process 0 and traces to T).
  std::vector<fs::path> traces = {trace};
  for (const auto& [index, path] : existing_process_traces(trace)) {
    traces.resize(index + 2);  // traces[p + 1] is process p's; the gaps stay empty
    traces[index + 1] = path;
  }
  for (std::size_t process = 0; process < traces.size(); ++process) {
    if (traces[process].empty()) continue;
    std::ifstream records(traces[process]);
    std::size_t index = 0;
    for (std::string line; std::getline(records, line); ++index) {
      // {"obj":"cq#0","seq":9,"window":"completion_between_poll_and_arm"}
      if (const std::size_t at = line.find("\"window\":\""); at != std::string::npos) {
        const std::size_t begin = at + 10, end = line.find('"', begin);
        if (end != std::string::npos) outcome.windows.insert(line.substr(begin, end - begin));
        continue;
      }
      if (line.find("\"fault\":\"") == std::string::npos) continue;
      const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!record.is_object() || !record.contains("fault")) continue;
      FiredFault fired;
      fired.kind = record.value("fault", std::string());
      fired.rule = record.value("rule", std::size_t{0});
      fired.object = record.value("per", record.value("obj", std::string()));
      fired.nth = record.value("nth", std::uint64_t{0});
      fired.level = record.value("level", std::string());
      fired.record = index;
      // traces[0] is a single command's; process p's is traces[p + 1].
      if (process > 0) fired.process = process - 1;
      outcome.fired.push_back(std::move(fired));
    }
  }
  const bool pass_status =
      std::find(pass_statuses.begin(), pass_statuses.end(), status) != pass_statuses.end();
  outcome.failed = timed_out || findings || !pass_status;

  std::string& s = outcome.signature;
  s = timed_out ? "timeout" : describe_status(status);
  if (!outcome.checks.empty()) {
    s += ", checks ";
    bool first = true;
    for (const std::string& check : outcome.checks) {
      s += (first ? "" : ",") + check;
      first = false;
    }
  }
  s += outcome.fired.empty() ? ", no fault fired" : ", first fault " + outcome.fired.front().kind;
  return outcome;
}

}  // namespace verbfault::cli

#include "provider_report.h"

#include "markdown_table.h"
#include "preload_line.h"
#include "process.h"
#include "provider_report_json.h"
#include "report_compare.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace verbfault::cli {

namespace {

namespace fs = std::filesystem;
namespace pr = verbfault::provider_report;

// The harness variables that would switch the harness on, or change what
// the simulated device does, for the probe's run: with none of them set
// the interposer installs no trampoline and no check, scheduler or
// liveness detection runs (docs/architecture.md, "No configuration, no
// change"), and the device behaves as documented by default.
constexpr const char* kHarnessVariables[] = {
    "VERBFAULT_SEED",     "VERBFAULT_PLAN",     "VERBFAULT_FAULTS",
    "VERBFAULT_TRACE",    "VERBFAULT_THREADS",  "VERBFAULT_CHECKS",
    "VERBFAULT_FREEDOMS", "VERBFAULT_FINDINGS", "VERBFAULT_DESTROY_CQ_UNACKED",
    "VERBFAULT_PROC",     "VERBFAULT_SUMMARY"};

struct Captured {
  int status = -1;  // exit status, 128 + N for signal N, -1 when it did not start
  std::string out;
  std::string err;
};

// Runs argv with the environment changed (unset, then set), capturing
// stdout and stderr.
Captured capture(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& set, bool unset_harness) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool drop = set.count(key) != 0;
    if (unset_harness)
      for (const char* name : kHarnessVariables) drop |= key == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [key, value] : set) env.push_back(key + "=" + value);
  std::vector<char*> envp, args;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  Captured out;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return out;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return out;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    out.err = argv[0] + ": " + std::strerror(spawned);
    return out;
  }
  // Both pipes drained together: a probe that fills one is never stuck.
  char chunk[8192];
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    fd_set readable;
    FD_ZERO(&readable);
    if (out_open) FD_SET(out_pipe[0], &readable);
    if (err_open) FD_SET(err_pipe[0], &readable);
    if (select(std::max(out_pipe[0], err_pipe[0]) + 1, &readable, nullptr, nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto [fd, open, text] : {std::tuple{out_pipe[0], &out_open, &out.out},
                                  std::tuple{err_pipe[0], &err_open, &out.err}}) {
      if (!*open || !FD_ISSET(fd, &readable)) continue;
      const ssize_t n = read(fd, chunk, sizeof chunk);
      if (n > 0)
        text->append(chunk, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR)
        *open = false;
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string find_probe(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* probe = std::getenv("VERBFAULT_PROVIDER_PROBE")) return probe;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error && fs::exists(self.parent_path() / "verbfault-provider-probe"))
    return (self.parent_path() / "verbfault-provider-probe").string();
  return VERBFAULT_PROVIDER_PROBE_BUILD_PATH;
}

bool simulated(const std::string& device) {
  return device.rfind("vfsim", 0) == 0;
}

// The probe's environment for `device`.
std::map<std::string, std::string> probe_environment(const std::string& device,
                                                     const std::string& library) {
  std::map<std::string, std::string> set;
  if (!simulated(device)) return set;
  set["LD_PRELOAD"] = preload_line(library, std::getenv("LD_PRELOAD"));
  // vfsimN exists when VERBFAULT_SIM_DEVICES is at least N + 1.
  const int index = std::atoi(device.c_str() + 5);
  const char* count = std::getenv("VERBFAULT_SIM_DEVICES");
  if (count == nullptr || std::atoi(count) <= index)
    set["VERBFAULT_SIM_DEVICES"] = std::to_string(index + 1);
  return set;
}

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

std::string preface(const pr::ProviderReport& report) {
  return "Written by `verbfault provider-report --device " + report.provider.device + "` (" +
         report.generator + ").";
}

int compare_reports(const std::vector<std::string>& files) {
  std::vector<pr::ProviderReport> reports;
  try {
    for (const std::string& file : files) reports.push_back(pr::read_report_file(file));
  } catch (const pr::ReportFormatError& error) {
    std::fprintf(stderr, "verbfault: provider-report: %s\n", error.what());
    return exit_status::kUsage;
  }
  std::string devices, args;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    devices += (i ? ", " : "") + reports[i].provider.device;
    args += " " + files[i];
  }
  const std::string text =
      "Each provider's report as `verbfault provider-report` wrote it (" + devices +
      "), side by side. Regenerate this page with `verbfault provider-report --compare" + args +
      "`.";
  std::fputs(pr::side_by_side_markdown(reports, text).c_str(), stdout);
  return 0;
}

}  // namespace

int provider_report(const ProviderReportOptions& options) {
  if (!options.compare.empty()) return compare_reports(options.compare);

  const std::string probe = find_probe(options.probe);
  if (access(probe.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "verbfault: provider-report: no probe program at %s\n", probe.c_str());
    return exit_status::kUsage;
  }
  std::optional<pr::ProviderReport> baseline;
  if (options.baseline) {
    try {
      baseline = pr::read_report_file(*options.baseline);
    } catch (const pr::ReportFormatError& error) {
      std::fprintf(stderr, "verbfault: provider-report: %s\n", error.what());
      return exit_status::kUsage;
    }
  }

  // The devices as the probe sees them, simulated ones included.
  const Captured listed =
      capture({probe, "--list"}, probe_environment("vfsim0", options.library), true);
  std::istringstream lines(listed.out);
  std::string name, found;
  bool known = false;
  while (std::getline(lines, name)) {
    known |= name == options.device;
    found += (found.empty() ? "" : ", ") + name;
  }
  if (!known) {
    std::fprintf(stderr, "verbfault: provider-report: no device %s; devices found: %s\n",
                 options.device.c_str(), found.empty() ? "none" : found.c_str());
    return exit_status::kUsage;
  }

  const Captured run = capture({probe, "--device", options.device},
                               probe_environment(options.device, options.library), true);
  pr::ProviderReport report;
  try {
    if (run.status != 0) throw pr::ReportFormatError("exit status " + std::to_string(run.status));
    report = pr::from_json(nlohmann::json::parse(run.out));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "verbfault: provider-report: the probe failed on %s (%s): %s\n",
                 options.device.c_str(), error.what(), run.err.c_str());
    return 1;
  }

  std::error_code error;
  fs::create_directories(options.report_dir, error);
  const fs::path json_file =
      fs::path(options.report_dir) / ("provider-" + options.device + ".json");
  const fs::path md_file = fs::path(options.report_dir) / ("provider-" + options.device + ".md");
  if (!write_file(json_file, pr::to_json_text(report)) ||
      !write_file(md_file, pr::side_by_side_markdown({report}, preface(report)))) {
    std::fprintf(stderr, "verbfault: provider-report: cannot write into %s\n",
                 options.report_dir.c_str());
    return exit_status::kUsage;
  }
  std::printf(
      "verbfault: provider-report: %s: %zu checks, %zu deviations, %zu unsupported, %zu "
      "inconclusive (%s, %s)\n",
      options.device.c_str(), report.checks.size(), report.count(pr::Verdict::deviates),
      report.count(pr::Verdict::unsupported), report.count(pr::Verdict::inconclusive),
      json_file.c_str(), md_file.c_str());

  if (!baseline) return 0;
  const std::vector<pr::Difference> differences = pr::compare(*baseline, report);
  for (const pr::Difference& d : differences)
    std::printf("verbfault: provider-report: %s changed against %s: %s\n", d.id.c_str(),
                options.baseline->c_str(), d.what.c_str());
  if (differences.empty()) {
    std::printf("verbfault: provider-report: every check as in %s\n", options.baseline->c_str());
    return 0;
  }
  std::printf(
      "verbfault: provider-report: %zu checks differ from %s; if the device changed on "
      "purpose, regenerate it: verbfault provider-report --device %s --report DIR && cp "
      "DIR/provider-%s.json %s (reports/provider/regenerate.sh does the committed ones)\n",
      differences.size(), options.baseline->c_str(), options.device.c_str(), options.device.c_str(),
      options.baseline->c_str());
  return 1;
}

}  // namespace verbfault::cli

#include "report_entry.h"

#include "process.h"
#include "replay_file.h"
#include "run_group.h"
#include "trace_digest.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>

namespace verbfault::cli {

namespace fs = std::filesystem;

reports::Outcome classify(const Outcome& outcome) {
  if (outcome.timed_out) return reports::Outcome::timeout;
  if (outcome.status == exit_status::kUsage || outcome.status == exit_status::kCannotExecute ||
      outcome.status == exit_status::kNotFound)
    return reports::Outcome::error;
  if (outcome.status > 128 && outcome.status < 128 + 65) return reports::Outcome::crash;
  if (outcome.status == exit_status::kHang) return reports::Outcome::hang;
  if (outcome.findings || outcome.status == exit_status::kFindings)
    return reports::Outcome::finding;
  return outcome.status == 0 ? reports::Outcome::success : reports::Outcome::clean_failure;
}

namespace {

std::string joined(const std::set<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// One line saying why the run came to its outcome.
std::string describe(const Outcome& outcome, reports::Outcome kind, double timeout) {
  std::set<std::string> checks = outcome.checks;
  checks.erase("resource.leak_at_exit");  // reported, not held against a run
  const std::string after = outcome.fired.empty() ? ""
                                                  : " after " + outcome.fired.front().kind +
                                                        " on " + outcome.fired.front().object;
  switch (kind) {
    case reports::Outcome::success:
      return "exit 0" + after;
    case reports::Outcome::clean_failure:
      return "exit " + std::to_string(outcome.status) + after + ", no finding";
    case reports::Outcome::finding:
      return "checks " + joined(checks) + " reported" + after;
    case reports::Outcome::hang:
      return "the harness ended a hang (exit 122)" +
             (checks.empty() ? std::string() : ": checks " + joined(checks)) + after;
    case reports::Outcome::crash:
      return std::string("killed by SIG") + sigabbrev_np(outcome.status - 128) + after;
    case reports::Outcome::timeout:
      return "killed after the " + std::to_string(static_cast<int>(timeout)) + " s timeout" + after;
    case reports::Outcome::error:
      return "exit " + std::to_string(outcome.status) +
             ": the harness could not run it (see its log)";
  }
  return "";
}

}  // namespace

bool exercised(const Outcome& outcome) {
  return std::any_of(outcome.fired.begin(), outcome.fired.end(),
                     [](const FiredFault& fired) { return fired.level != "unsupported"; });
}

namespace {

// The program's last line of output: what it said as it ended.
std::string last_said(const fs::path& log) {
  std::ifstream in(log);
  std::string said;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.rfind("verbfault:", 0) != 0) said = line;
  if (said.size() > 300) said = said.substr(0, 300) + "...";
  return said;
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void fill_entry(reports::Entry& entry, const BatchRun& run, const Outcome& outcome,
                const std::vector<std::string>& race_windows, double timeout_seconds,
                bool keep_timeline, std::string& provider) {
  const reports::Outcome kind = classify(outcome);
  entry.outcome = kind;
  entry.reason = entry.verdict == reports::Verdict::not_exercised
                     ? "the fault never fired: the run tested nothing"
                     : describe(outcome, kind, timeout_seconds);
  entry.exit_status = outcome.status;
  entry.duration_seconds = outcome.seconds;
  entry.checks.assign(outcome.checks.begin(), outcome.checks.end());
  for (const std::string& window : race_windows)
    if (outcome.windows.count(window) != 0) entry.windows.push_back(window);
  for (const FiredFault& fired : outcome.fired)
    entry.faults.push_back(
        {fired.kind, fired.rule, fired.object, fired.nth, fired.level, fired.record});
  entry.said = last_said(run.log);
  entry.replay = outcome.reproduce;
  entry.trace_hash = outcome.trace_hash;
  reports::TraceDigest digest = reports::digest_trace(run.trace);
  // A launcher's own trace (mpirun: no verbs call) says nothing: its
  // first rank's does (process_trace_path).
  for (const auto& [process, path] : existing_process_traces(run.trace)) {
    if (digest.records != 0) break;
    digest = reports::digest_trace(path);
  }
  entry.trace_records = digest.records;
  if (keep_timeline) {
    entry.excerpt = std::move(digest.excerpt);
    entry.timeline = std::move(digest.timeline);
  }
  if (provider.empty())
    for (const std::string& device : digest.devices)
      provider += (provider.empty() ? "" : ", ") + device;
}

std::string build_identity(const std::string& library) {
  const std::string hash = file_hash(library);
  return std::string(verbfault_version()) + "+" + (hash.empty() ? "unknown" : hash);
}

}  // namespace verbfault::cli

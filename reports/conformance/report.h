// The conformance report: what `verbfault conform` found when it ran an
// application under a battery of fault plans, one entry per (fault class,
// seed). Filled by conform, written by the writers beside this file
// (report_json.h, junit_writer.h, markdown_writer.h, html_writer.h); its
// JSON form is specified by reports/schema/conformance-report.schema.json
// (kReportFormat, version kReportVersion). Plain values: no behaviour here
// but the names of the enumerations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::reports {

inline constexpr std::string_view kReportFormat = "verbfault-conformance-report";
// Raised when a field changes meaning or goes away; new optional fields
// keep the version.
inline constexpr int kReportVersion = 1;

// How a run ended, from the outside (exit status, signal, checks), before
// it is held against the entry's expectation.
enum class Outcome {
  success,        // exit 0, no finding
  clean_failure,  // a non-zero exit status the program chose, no finding
  finding,        // a runtime check reported (exit 121, or findings listed)
  hang,           // the harness ended a run that could never progress (122)
  crash,          // killed by a signal
  timeout,        // the wall-clock limit killed it
  error,          // the harness could not run it (125 bad plan, 126/127 command)
};
// In the order the matrix's columns show them.
inline constexpr Outcome kOutcomes[] = {Outcome::success, Outcome::clean_failure, Outcome::finding,
                                        Outcome::hang,    Outcome::crash,         Outcome::timeout,
                                        Outcome::error};

// What the battery entry expects of a correct application.
enum class Expectation {
  success,        // no fault: it completes (exit 0), no finding
  recovery,       // the fault fires and it still completes (exit 0), no finding
  clean_failure,  // the fault fires and it reports the error and exits non-zero,
                  // or recovers (exit 0); no finding, hang or crash either way
};

// The entry's verdict: its outcome held against its expectation.
enum class Verdict {
  conforms,
  does_not_conform,
  not_exercised,  // the entry's fault never fired: the run tested nothing
};

// A fault that fired, as the trace records it.
struct FiredFault {
  std::string kind;        // "flush"
  std::size_t rule = 0;    // its rule's index in the entry's plan
  std::string object;      // where it fired: "qp#1"
  std::uint64_t nth = 0;   // the opportunity number the rule counted
  std::string level;       // "cause" (the device produces the failure) or
                           // "effect" (the harness rewrites what the application sees)
  std::size_t record = 0;  // its trace record's index (0-based line number)
};

// One record of the run's trace, as written (a JSON object on one line).
struct TraceLine {
  std::size_t index = 0;
  std::string json;
};

// What the timeline draws per object over trace time.
enum class MarkKind { call, completion, error_completion, event, fault, finding };

struct TimelineMark {
  std::size_t record = 0;  // x: the trace record's index
  std::string object;      // the row: "qp#1"
  MarkKind kind = MarkKind::call;
  std::string label;  // "post_send", "wr_flush_err", "flush (cause)" ...
};

struct Entry {
  std::string fault_class;        // the battery entry's name: "flush", "baseline"
  std::vector<std::string> plan;  // its rules, one-line form; empty: no fault
  Expectation expect = Expectation::success;
  std::uint64_t seed = 0;
  Outcome outcome = Outcome::success;
  Verdict verdict = Verdict::conforms;
  std::string reason;   // one line: why the verdict
  int exit_status = 0;  // verbfault run's (128 + N: signal N)
  double duration_seconds = 0;
  std::vector<std::string> checks;  // the check ids that reported, sorted
  // The race windows the run reached (harness/record/window.h:
  // "completion_between_poll_and_arm" ...), in Report::race_windows order.
  std::vector<std::string> windows;
  std::vector<FiredFault> faults;  // in trace order
  std::string said;                // the program's last line of output, if any
  std::string replay;              // the line that reproduces the run
  std::string replay_file;         // relative to the report's directory, or empty
  std::optional<std::string> trace_hash;
  std::size_t trace_records = 0;
  // The records around the first fault and the first finding (a few either
  // side of each, in order, overlaps merged).
  std::vector<TraceLine> excerpt;
  // What the run's timeline draws; at most kTimelineMarks marks (the
  // window around the first fault when the trace has more).
  std::vector<TimelineMark> timeline;
};
inline constexpr std::size_t kTimelineMarks = 2000;
inline constexpr std::size_t kExcerptContext = 4;  // records either side

struct Report {
  std::string application;           // the program's name: "sample_rc"
  std::vector<std::string> command;  // as given after --
  std::string provider;              // "vfsim0 (simulated)", from the baseline's trace
  std::string battery;               // "default" or the battery file's path
  std::vector<std::uint64_t> seeds;  // the seeds every entry ran with
  std::string verbfault_version;
  std::string started_at;  // UTC, ISO 8601
  double duration_seconds = 0;
  std::vector<Entry> entries;  // in battery order, then seed order
  // Every race window a run can reach, in order: a report shows which runs
  // reached each, and those no run reached (a clean report of a program
  // that never met the race says so). Empty: not known (an older report).
  std::vector<std::string> race_windows;

  // Added within version 1 (absent in older reports: the defaults).
  // What made the entries: a battery's fault classes ("conform"), or one
  // plan's seeds ("sweep": one class, named after the plan).
  std::string mode = "conform";
  // The fault classes in the battery's order: the order `report merge`
  // puts the entries of several reports back in. Empty: not known.
  std::vector<std::string> classes;
  // The build that ran the runs: the version and the hash of the preloaded
  // library (shards of one run must agree on it). Empty: not known.
  std::string build;
  // Which part of the runs this report holds, when they were split over
  // machines (--shard I/N: every N-th run from the I-th). nullopt: all.
  struct Shard {
    unsigned index = 1, count = 1;
    bool operator==(const Shard&) const = default;
  };
  std::optional<Shard> shard;
};

// The entries (indices into report.entries) that reached `window`.
std::vector<std::size_t> entries_reaching(const Report& report, const std::string& window);

// Counts of verdicts over a report's entries.
struct Summary {
  std::size_t entries = 0, conforming = 0, not_conforming = 0, not_exercised = 0;
};
Summary summarize(const Report& report);

std::string_view to_string(Outcome outcome);
std::string_view to_string(Expectation expectation);
std::string_view to_string(Verdict verdict);
std::string_view to_string(MarkKind kind);
// Inverses: nullopt for a name that is not one.
std::optional<Outcome> outcome_named(std::string_view name);
std::optional<Expectation> expectation_named(std::string_view name);
std::optional<Verdict> verdict_named(std::string_view name);
std::optional<MarkKind> mark_kind_named(std::string_view name);

}  // namespace verbfault::reports

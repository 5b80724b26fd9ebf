// `verbfault trace FILE [--object NAME] [--kind call|fault|check|event]`:
// a trace for people, one line per record.
#pragma once

#include <optional>
#include <string>

namespace verbfault::cli {

struct TraceViewOptions {
  std::string file;
  std::optional<std::string> object;  // "qp#1": only that object's records
  std::optional<std::string> kind;    // call, fault, check or event

  bool operator==(const TraceViewOptions&) const = default;
};

// Prints the records; returns the exit status (exit_status::kUsage for an unreadable
// file or a malformed record, named with its line number).
int print_trace(const TraceViewOptions& options);

}  // namespace verbfault::cli

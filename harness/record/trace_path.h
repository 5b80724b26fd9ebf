// Where the trace of one process of a run goes: the name both the CLI
// (`verbfault run` with several commands) and a rank of a parallel
// launcher's job (interposer/config.cpp) give it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

namespace verbfault::record {

// `trace` with `tag` inserted before its extension ("out/trace.jsonl",
// ".1" -> "out/trace.1.jsonl"); a trace that is not a file to create (a
// device such as /dev/null) as it is.
inline std::string tagged_trace_path(const std::string& trace, const std::string& tag) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::exists(trace, error) && !fs::is_regular_file(trace, error)) return trace;
  const fs::path path(trace);
  return (path.parent_path() / (path.stem().string() + tag + path.extension().string())).string();
}

// The trace of process `index` of a run traced to `trace`: `.<index>`
// inserted before the extension ("out/trace.jsonl" -> "out/trace.1.jsonl",
// "out/trace" -> "out/trace.1"). A trace that is not a file to create is
// every process's as it is.
inline std::string process_trace_path(const std::string& trace, std::size_t index) {
  return tagged_trace_path(trace, "." + std::to_string(index));
}

// The trace of the `fork`-th child that the process tracing to `trace`
// forked (1 for the first): `.fork<fork>` inserted before the extension
// ("out/trace.1.jsonl" -> "out/trace.1.fork1.jsonl"); a grandchild's
// inserts one more. A trace that is not a file to create is the child's
// as it is.
inline std::string forked_trace_path(const std::string& trace, std::size_t fork) {
  return tagged_trace_path(trace, ".fork" + std::to_string(fork));
}

}  // namespace verbfault::record

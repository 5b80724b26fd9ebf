// Where the trace of one process of a run goes: the name both the CLI
// (`verbfault run` with several commands) and a rank of a parallel
// launcher's job (interposer/config.cpp) give it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>

namespace verbfault::record {

// The trace of process `index` of a run traced to `trace`: `.<index>`
// inserted before the extension ("out/trace.jsonl" -> "out/trace.1.jsonl",
// "out/trace" -> "out/trace.1"). A trace that is not a file to create (a
// device such as /dev/null) is every process's as it is.
inline std::string process_trace_path(const std::string& trace, std::size_t index) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::exists(trace, error) && !fs::is_regular_file(trace, error)) return trace;
  const fs::path path(trace);
  return (path.parent_path() /
          (path.stem().string() + "." + std::to_string(index) + path.extension().string()))
      .string();
}

// The trace of the `fork`-th child that the process tracing to `trace`
// forked (1 for the first): `.fork<fork>` inserted before the extension
// ("out/trace.1.jsonl" -> "out/trace.1.fork1.jsonl"); a grandchild's
// inserts one more. A trace that is not a file to create is the child's
// as it is.
inline std::string forked_trace_path(const std::string& trace, std::size_t fork) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::exists(trace, error) && !fs::is_regular_file(trace, error)) return trace;
  const fs::path path(trace);
  return (path.parent_path() /
          (path.stem().string() + ".fork" + std::to_string(fork) + path.extension().string()))
      .string();
}

}  // namespace verbfault::record

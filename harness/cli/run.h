// `verbfault run`: an unmodified program under the harness.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

struct RunOptions {
  std::optional<std::uint64_t> seed;
  std::optional<std::string> plan_file;
  std::vector<std::string> faults;  // one-line rules
  std::optional<std::string> trace;
  bool check_determinism = false;
  std::string library;  // libverbfault.so to preload
  std::vector<std::string> command;
};

// Returns the exit status of `verbfault run` (see process.h).
int run(const RunOptions& options);

// The FNV-1a 64 hash of a trace file, as the library prints it.
std::uint64_t trace_hash(const std::string& path);

}  // namespace verbfault::cli

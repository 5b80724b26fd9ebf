// `verbfault replay FILE [--out DIR] [--timeout S]`: runs a replay file
// (replay_file.h) again and says whether its outcome and its trace
// reproduce. A different build of the program or of the library, or
// another verbfault version, is named as the reason when they do not,
// rather than reported as a flake; the same build giving another trace is
// nondeterminism (exit 124).
#pragma once

#include <optional>
#include <string>

namespace verbfault::cli {

struct ReplayOptions {
  std::string file;
  std::optional<std::string> out;  // keep the run's log and trace here
  double timeout_seconds = 300;
  std::string library;  // libverbfault.so to preload now

  bool operator==(const ReplayOptions&) const = default;
};

// 0: the expected outcome (and, with the same binaries, the trace hash)
// reproduced; 1: it did not; 124: same binaries, another trace or
// outcome; 125: the file cannot be read.
int replay(const ReplayOptions& options);

}  // namespace verbfault::cli

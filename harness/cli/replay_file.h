// A replay file: one run, with everything that decides it, so that
// `verbfault replay FILE` runs it again on any machine and says whether
// the outcome and the trace reproduce. YAML:
//
//   # verbfault replay file: `verbfault replay THIS_FILE` runs it again
//   format: 1
//   verbfault: 0.1.0                    # the version that wrote it
//   library: {file: /.../libverbfault.so, hash: 5f1c...}   # FNV-1a 64 of the file
//   program: {file: /.../sample_rc, hash: 90ab...}
//   command: [sample_rc, --messages, "4"]
//   seed: 42
//   threads: random                     # only when not the default
//   settings: {VERBFAULT_FREEDOMS: canonical}
//   plan_file: crash.plan               # relative to this file; its rules first
//   faults: ["flush qp#1 nth=3"]        # one-line rules, after the file's
//   pass_statuses: [0, 1]               # only when not [0]
//   expect:
//     outcome: fails                    # or passes
//     status: 1
//     signature: exit 1, first fault flush
//     trace_hash: fee5c668af1013e4
//
// The binaries' hashes tell a different build from a flake: the same
// binaries must give the same trace (the harness is deterministic), a
// different build need not.
#pragma once

#include "replay.h"
#include "seed_run.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace verbfault::cli {

// A replay file that cannot be read: what() is one line naming the file.
class ReplayFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file the run depends on, and the FNV-1a 64 of its bytes (16 hex digits).
struct Binary {
  std::string file;
  std::string hash;
  bool operator==(const Binary&) const = default;
};

struct Expectation {
  bool fails = true;
  int status = 0;
  std::string signature;  // seed_run.h's Outcome::signature
  std::optional<std::string> trace_hash;
};

struct ReplayFile {
  std::string verbfault_version;
  Binary library;
  Binary program;
  std::vector<std::string> command;
  std::uint64_t seed = 0;
  std::optional<std::string> threads;
  std::vector<engine::Setting> settings;
  // Written as given; read_replay_file makes a relative path absolute
  // against the replay file's directory.
  std::optional<std::string> plan_file;
  std::vector<std::string> faults;  // one-line rules
  // Exit statuses that pass when no check reported (sweep --pass-status).
  std::vector<int> pass_statuses = {0};
  Expectation expect;
};

// This build's version (the project's, from CMake).
const char* verbfault_version();

// The FNV-1a 64 of a file's bytes as 16 hex digits, or "" if unreadable:
// the fingerprint of a binary in a replay file, and of a trace file as
// written (not the library's trace hash, which is computed over the
// records as they are made: docs/trace-format.md).
std::string file_hash(const std::filesystem::path& path);

// Where execvp would find the program `name` (a name with a slash is a
// path, relative to the working directory); empty when nowhere. With
// `or_basename`, a path that is not there is looked up by its last
// component in PATH (a replay file recorded in another directory).
std::string resolve_program(const std::string& name, bool or_basename = false);

// The library and program of a run as they are now.
Binary binary_of(const std::string& file);

// The replay file of a run that ended as `outcome`: its spec with every
// knob (the engine's settings as this process has them), the builds it ran
// with, and what it came to.
ReplayFile replay_of(const SeedRun& run, const Outcome& outcome,
                     const std::vector<int>& pass_statuses);

void write_replay_file(const std::filesystem::path& path, const ReplayFile& replay);
// Throws ReplayFileError ("FILE: what was found: expected what").
ReplayFile read_replay_file(const std::filesystem::path& path);

}  // namespace verbfault::cli

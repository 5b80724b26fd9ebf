// The commands of one `verbfault run` as one run: each process gets the
// run's seed, plan, checks and settings (the common environment) and
//   VERBFAULT_FABRIC  the run's own fabric, "run-<verbfault's pid>-<n>",
//                     unless the environment sets one (kept as set)
//   VERBFAULT_PROC    its index in the command line (0 = the first,
//                     the server); a single command keeps the variable
//                     as the environment sets it, else gets 0 unless the
//                     fabric was given (the fabric then picks)
//   VERBFAULT_TRACE   with --trace T: T itself for a single command; for
//                     several, process_trace_path(T, i)
//   VERBFAULT_FABRIC_SIZE  the number of commands, unless the
//                     environment sets it: the members the simulated
//                     device waits for before an empty poll returns 0
// and, with several commands, VERBFAULT_SUMMARY: where each says its trace
// hash at its end. They are started in order, each once the one before
// listens (process_group.h: --start-wait), and waited for together
// (signals, the peer grace, the timeout). A fabric verbfault named is
// removed (its status table in /dev/shm) once every process has ended:
// nobody else can be in it. With several commands verbfault then prints
// one line per process, in order (its index, program, how it ended, its
// trace hash), and the run's trace hash: the hashes of the processes that
// ran folded in order (combined_trace_hash); one that never started (the
// run was ending before its turn) has none and is left out.
//
// The run's exit status: 0 when every process exited 0; else the first
// nonzero status in process order, leaving out the processes verbfault
// ended because another failed (--peer-grace) and those never started:
// the failure, not its aftermath, is the run's. A process ended by --timeout counts (128 + its
// signal).
#pragma once

#include "command_list.h"
#include "process_group.h"
#include "trace_path.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace verbfault::cli {

using record::process_trace_path;
// The processes a run may have on one fabric (wire::kMaxMembers): the
// traces process_trace_path(T, 0 .. kMaxProcessTraces - 1) are looked for.
inline constexpr std::size_t kMaxProcessTraces = 64;

// The process traces of a run traced to `trace` that exist, as (process
// index, path), in index order: a group's (0..N-1) or a launcher's ranks'
// (1..N), never `trace` itself.
std::vector<std::pair<std::size_t, std::string>> existing_process_traces(const std::string& trace);

// The traces of the children a process tracing to `trace` forked, and of
// theirs (record::forked_trace_path: "T.fork1.jsonl", "T.fork1.fork2.jsonl"),
// that exist as a file or as a journal only (a child killed before its
// end), by name; never `trace` itself.
std::vector<std::string> existing_forked_traces(const std::string& trace);

// The run's trace hash: hash_0, hash_1 ... folded in process order, h = n
// (the number of processes), then per hash h = splitmix64(h ^ hash_i)
// (the finalizer of splitmix64 after adding its increment 0x9e3779b97f4a7c15).
std::uint64_t combined_trace_hash(const std::vector<std::uint64_t>& hashes);

struct CommandsRun {
  std::map<std::string, std::string> environment;  // every process's
  std::optional<std::string> trace;                // --trace T
  std::uint64_t seed = 0;
  std::optional<double> timeout_seconds;
  double peer_grace_seconds = kDefaultPeerGraceSeconds;
  double start_wait_seconds = kDefaultStartWaitSeconds;
};

struct CommandsEnd {
  int status = 0;                   // the run's (above), before findings
  std::vector<std::string> traces;  // each process's trace file, when traced
};

CommandsEnd run_commands(const std::vector<Command>& commands, const CommandsRun& run);

}  // namespace verbfault::cli

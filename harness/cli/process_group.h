// The processes of one `verbfault run`, started in order and waited for
// together: one command, or a server and its clients. They stay in
// verbfault's process group (a terminal's ^C and a group kill from a
// sweep's timeout reach them as they reach one program); verbfault ends a
// process with its descendants (found in /proc), so that a shell wrapper's
// program goes with it.
//
// While they run, SIGINT and SIGTERM sent to verbfault are forwarded to
// every running process (and its descendants). Two wall-clock rules end
// processes:
//   * the peer grace: when a process fails (a nonzero exit status, or a
//     signal) while others still run, those get `peer_grace_seconds` to
//     end on their own: an RDMA peer usually waits forever for the one
//     that crashed. A process that exits 0 starts no grace: a server may
//     take a while to finish after its client is done.
//   * the timeout, over the whole group from the first start.
// Ending a process is SIGTERM (the harness writes its trace and end-of-run
// line there), then SIGKILL kKillDelaySeconds later if it is still alive.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace verbfault::cli {

inline constexpr double kDefaultPeerGraceSeconds = 5;
inline constexpr double kKillDelaySeconds = 2;

struct GroupMember {
  std::string name;  // for messages: "server"
  std::vector<std::string> argv;
  std::map<std::string, std::string> environment;  // added to (and overriding) ours
};

struct GroupOptions {
  std::optional<double> timeout_seconds;
  double peer_grace_seconds = kDefaultPeerGraceSeconds;
};

struct MemberEnd {
  enum class By { itself, peer_grace, timeout };
  pid_t pid = -1;
  // The exit status, 128 + N for a death by signal N, or kExitNotFound /
  // kExitCannotExecute when exec failed (as run_program: process.h).
  int status = 0;
  By by = By::itself;  // who ended it
};

// Runs the members, in order, to their ends; returns them in the same order.
std::vector<MemberEnd> run_group(const std::vector<GroupMember>& members,
                                 const GroupOptions& options);

}  // namespace verbfault::cli

// The processes of one `verbfault run`, started in order and waited for
// together: one command, or a server and its clients.
//
// Process i+1 starts once process i is ready for it: it (or a process it
// started) listens for connections, on a TCP or TCP6 socket or a UNIX
// stream socket (other than the local fabric's own, which every simulated
// device opens), or it has ended, or `start_wait_seconds` have passed
// (then one line says so, and it starts anyway). A client such as
// ibv_rc_pingpong connects once and gives up when nobody listens yet; a
// first command that never listens (two independent programs) costs the
// wait. Once a process has failed, the timeout has passed, or SIGINT or
// SIGTERM came, no further process starts: it would only meet a run that
// is ending. They stay in
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
//     that crashed. A process that exits 0 starts no grace (a server may
//     take a while to finish after its client is done), except the last
//     command (the final client): the servers started before it that
//     still run get the grace then, since some serve until killed (qperf);
//     ended so, they do not make the run's status.
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
inline constexpr double kDefaultStartWaitSeconds = 10;

struct GroupMember {
  std::string name;  // for messages: "server"
  std::vector<std::string> argv;
  std::map<std::string, std::string> environment;  // added to (and overriding) ours
};

struct GroupOptions {
  std::optional<double> timeout_seconds;
  double peer_grace_seconds = kDefaultPeerGraceSeconds;
  // At most this long for process i to listen before i+1 starts; 0: all at once.
  double start_wait_seconds = kDefaultStartWaitSeconds;
};

// --start-wait's value: seconds, a finite number >= 0. Throws
// std::invalid_argument with one line naming the option otherwise.
double parse_start_wait(const std::string& text);

struct MemberEnd {
  // not_started: the run was ending before its turn (status 0).
  enum class By { itself, peer_grace, timeout, not_started };
  pid_t pid = -1;
  // The exit status, 128 + N for a death by signal N, or exit_status::kNotFound /
  // exit_status::kCannotExecute when exec failed (as run_program: process.h).
  int status = 0;
  By by = By::itself;  // who ended it
};

// Runs the members, in order, to their ends; returns them in the same order.
std::vector<MemberEnd> run_group(const std::vector<GroupMember>& members,
                                 const GroupOptions& options);

}  // namespace verbfault::cli

// The fork server, the harness's side (the program's: interposer/
// fork_server.h). A sweep or conform run of one command starts the program
// once per job slot, with libverbfault.so preloaded and no seed; the
// program runs to its first verbs call and stops there. Each seed's
// `verbfault run` (the runner's forked child) then asks that process for a
// child instead of exec'ing the program: the child takes the seed's
// environment and its stdin, stdout and stderr, joins the seed's process
// group (a timeout's group kill reaches it) and goes on from that call;
// its end comes back as a wait status. What the program printed before its
// first verbs call is copied to the front of each seed's log, as a run
// from exec would have it.
//
// A program the server cannot be sound for refuses (threads, another
// process, a socket open before its first verbs call), and so does one
// that ends before any verbs call: then every seed runs from exec and one
// line says why.
#pragma once

#include "process_group.h"
#include "replay.h"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace verbfault::cli {

class ForkServer {
 public:
  // Starts `command` with `library` preloaded and `settings` set (the
  // runs' common ones), its output before the first verbs call into
  // `prefix_log`, and waits up to `timeout_seconds` for it to be ready.
  // nullptr with `why` set (one phrase) when it refused or ended first.
  static std::unique_ptr<ForkServer> start(const std::vector<std::string>& command,
                                           const std::string& library,
                                           const std::vector<engine::Setting>& settings,
                                           const std::filesystem::path& prefix_log,
                                           double timeout_seconds, std::string& why);
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;
  // Closes the socket (the server exits) and reaps the server.
  ~ForkServer();

  // In a seed's process (the runner's forked child): runs `member` as a
  // child of the server with this process's environment and `member`'s on
  // top, its stdin/stdout/stderr, in this process's group; waits for its
  // end, ending it at the timeout (SIGTERM, then SIGKILL
  // kKillDelaySeconds later).
  MemberEnd run(const GroupMember& member, const GroupOptions& options);

 private:
  ForkServer() = default;
  int socket_ = -1;
  pid_t pid_ = -1;
  std::uint64_t requests_ = 0;
  std::filesystem::path prefix_log_;
};

// The server a seed's `verbfault run` goes through: set by the runner in
// the forked child that runs the seed (seed_run.cpp), nullptr elsewhere.
// Owner: that child's one thread.
extern ForkServer* g_seed_server;

}  // namespace verbfault::cli

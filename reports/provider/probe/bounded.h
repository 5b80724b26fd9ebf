// Running a piece of the probe in a child process with a wall-clock bound,
// so that nothing a provider does can hang the probe: an area that blocks
// (a destroy that waits for acks that never come, a wait on a provider
// that never answers) is killed at its deadline and reported as such.
//
// The child is forked before it opens anything of its own; what it writes
// to the descriptor it is given comes back as `output`.
#pragma once

#include <functional>
#include <string>

namespace verbfault::probe {

struct Bounded {
  std::string output;      // everything the child wrote
  bool timed_out = false;  // killed at the deadline
  int exit_status = -1;    // when it exited
  int signal = 0;          // when a signal ended it (SIGKILL at the deadline)
};

// body(fd) runs in the child, which then _exits with 0.
Bounded run_bounded(const std::function<void(int fd)>& body, int timeout_ms);

}  // namespace verbfault::probe

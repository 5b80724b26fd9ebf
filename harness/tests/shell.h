// Runs a shell command line for the end-to-end tests and collects its
// output (stdout and stderr) and exit status.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace verbfault::testing {

struct ProcessResult {
  int status = -1;     // the exit status, or 128 + N for a death by signal N
  std::string output;  // stdout and stderr
};

inline ProcessResult run_shell(const std::string& command) {
  ProcessResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// LD_PRELOAD's value for `library`: in a sanitized build ASan's runtime
// first, or ASan refuses to start in a program built without it
// (cmake/Sanitizers.cmake).
inline std::string preload_of(const std::string& library) {
#ifdef VERBFAULT_SANITIZER_RUNTIME
  return std::string(VERBFAULT_SANITIZER_RUNTIME) + ":" + library;
#else
  return library;
#endif
}

// `command` with libverbfault.so preloaded, on a fabric of its own (a
// process running beside it under ctest -j may hold member index 0 of the
// default one, and the addresses tests check are member 0's), with the
// environment assignments `env` ("A=1 B=2", may be empty).
inline ProcessResult run_preloaded(const std::string& library, const std::string& env,
                                   const std::string& command) {
  return run_shell("env LD_PRELOAD=" + preload_of(library) + " VERBFAULT_FABRIC=private " + env +
                   " " + command);
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The trace hash `verbfault run` printed, or "" when none.
inline std::string trace_hash_of(const std::string& output) {
  const std::size_t at = output.find("trace hash ");
  return at == std::string::npos ? "" : output.substr(at + 11, 16);
}

}  // namespace verbfault::testing

#include "process.h"

#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace verbfault::cli {

int run_program(const std::vector<std::string>& argv,
                const std::map<std::string, std::string>& environment) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "verbfault: fork: %s\n", std::strerror(errno));
    return kExitCannotExecute;
  }
  if (pid == 0) {
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    // Same addresses every run: applications use pointers as wr_id.
    personality(ADDR_NO_RANDOMIZE);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    const int error = errno;
    std::fprintf(stderr, "verbfault: cannot run '%s': %s\n", argv[0].c_str(), std::strerror(error));
    _exit(error == ENOENT ? kExitNotFound : kExitCannotExecute);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return kExitCannotExecute;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace verbfault::cli

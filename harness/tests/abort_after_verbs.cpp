// A program that makes a few verbs calls and then dies of SIGABRT (or of
// SIGKILL, with the argument "kill", which no handler can take): the trace
// written so far must survive (test_verbfault_run.cpp).
#include <infiniband/verbs.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_context* context = ibv_open_device(list[n - 1]);
  if (context == nullptr) return 2;
  if (ibv_alloc_pd(context) == nullptr) return 2;
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "kill") == 0) std::raise(SIGKILL);
  std::abort();
}

// One process of a multi-process `verbfault run` in the tests
// (test_verbfault_run_group.cpp): it says what the run gave it, makes a
// few verbs calls on vfsim0 (traced, and a proc= rule can fail them), then
// ends as told:
//   member_probe exit N   exit with status N (after the verbs calls)
//   member_probe hang     wait for a signal (pause(2): not a wait the
//                         scheduler models, so it lasts in real time)
//   member_probe kill     die of SIGKILL (no end of run: the journal stays)
// The tests run it with VERBFAULT_FABRIC=private, so that its device is
// its own whatever the local fabric does.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "(unset)";
}

// Open, allocate and free a PD, close: 2 when a call fails.
int verbs_calls() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_device* vfsim0 = nullptr;
  for (int i = 0; i < n; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), "vfsim0") == 0) vfsim0 = list[i];
  ibv_context* context = vfsim0 != nullptr ? ibv_open_device(vfsim0) : nullptr;
  ibv_free_device_list(list);
  if (context == nullptr) return 2;
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) {
    std::printf("member_probe %s: ibv_alloc_pd: %s\n", variable("VERBFAULT_PROC"),
                std::strerror(errno));
    ibv_close_device(context);
    return 2;
  }
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "exit";
  std::printf("member_probe %s: fabric=%s seed=%s faults=%s\n", variable("VERBFAULT_PROC"),
              variable("VERBFAULT_FABRIC"), variable("VERBFAULT_SEED"),
              variable("VERBFAULT_FAULTS"));
  std::fflush(stdout);
  if (const int failed = verbs_calls()) return failed;
  if (mode == "hang") {
    for (;;) pause();
  }
  if (mode == "kill") std::raise(SIGKILL);
  return argc > 2 ? std::atoi(argv[2]) : 0;
}

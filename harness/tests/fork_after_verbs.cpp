// A program that forks after making verbs calls: the child makes 100 more
// (its own) and exits normally (its exit handlers run), then the parent
// makes three more. The parent's trace must hold the parent's records
// only, whole, and the child's its own (test_verbfault_run.cpp).
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  ibv_context* context = ibv_open_device(list[n - 1]);
  if (context == nullptr) return 2;
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) return 2;
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    for (int i = 0; i < 100; ++i) ibv_dealloc_pd(ibv_alloc_pd(context));
    std::exit(0);  // as a worker returning from its loop: exit handlers run
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 3;
  for (int i = 0; i < 3; ++i) ibv_dealloc_pd(ibv_alloc_pd(context));
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(list);
  return 0;
}

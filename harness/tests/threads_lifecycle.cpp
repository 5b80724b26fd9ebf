// The edges of a threaded program's life under the scheduler, in one run:
//   * a thread started by a constructor, before main;
//   * signals delivered to a thread while it makes verbs calls and while it
//     waits for its turn, whose handler reads the clock (async-signal-safe,
//     interposed: it must pass through, not take the scheduler's lock);
//   * fork from a process with several threads: the child has one thread
//     and a schedule of its own, makes verbs calls and exits;
//   * exit while other threads still exist: one blocked forever on a
//     condition variable, one detached and waiting for its turn.
// Exit status 0 when everything happened; the trace replays by seed.
#include <infiniband/verbs.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
pthread_cond_t never = PTHREAD_COND_INITIALIZER;
bool go = false;
int early_done = 0;
std::atomic<int> signals{0};
ibv_context* context = nullptr;
pthread_t early;

void on_signal(int) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  signals.fetch_add(1);
}

void some_verbs(int n) {
  for (int i = 0; i < n; ++i) ibv_dealloc_pd(ibv_alloc_pd(context));
}

// Started before main: waits until main opened the device.
void* early_thread(void*) {
  pthread_mutex_lock(&mutex);
  while (!go) pthread_cond_wait(&go_cond, &mutex);
  pthread_mutex_unlock(&mutex);
  some_verbs(20);
  pthread_mutex_lock(&mutex);
  early_done = 1;
  pthread_mutex_unlock(&mutex);
  return nullptr;
}

__attribute__((constructor)) void start_early() {
  if (pthread_create(&early, nullptr, early_thread, nullptr) != 0) std::abort();
}

// Outlives main: blocked forever.
void* stuck_thread(void*) {
  pthread_mutex_lock(&mutex);
  for (;;) pthread_cond_wait(&never, &mutex);
  return nullptr;
}

// Outlives main too: it keeps making verbs calls until the process ends.
void* busy_thread(void*) {
  for (;;) some_verbs(1);
  return nullptr;
}

}  // namespace

int main() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR1, &action, nullptr);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 2;
  context = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (context == nullptr) return 2;
  pthread_mutex_lock(&mutex);
  go = true;
  pthread_cond_signal(&go_cond);
  pthread_mutex_unlock(&mutex);
  // Signals to the early thread while it runs or waits for its turn.
  for (int i = 0; i < 10; ++i) {
    pthread_kill(early, SIGUSR1);
    some_verbs(1);
  }
  pthread_join(early, nullptr);
  // The signals may have arrived after it ended (then pthread_kill fails);
  // the handler ran in this thread then.
  kill(getpid(), SIGUSR1);
  // Fork with no other thread running: the child's schedule is its own.
  const pid_t child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    some_verbs(50);
    std::exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 3;
  pthread_t stuck, busy;
  if (pthread_create(&stuck, nullptr, stuck_thread, nullptr) != 0 ||
      pthread_create(&busy, nullptr, busy_thread, nullptr) != 0)
    return 2;
  pthread_detach(busy);
  some_verbs(5);
  std::printf("threads_lifecycle: early thread done %d, signals %d, child exit %d\n", early_done,
              signals.load() > 0 ? 1 : 0, WEXITSTATUS(status));
  std::fflush(stdout);
  // Exit with the stuck thread blocked and the busy one still going.
  return early_done == 1 && signals.load() > 0 ? 0 : 1;
}

// A thread that blocks where the harness cannot see: a reader thread waits
// in the read system call on a socket, made with syscall(2) (a read(3) of
// a socket through the C library is a modelled wait: it waits as poll(2)
// does); the main thread sleeps a little (virtual time), makes verbs
// calls, then writes the byte the reader waits for and joins it. The
// reader holds the scheduler's baton inside the system call, which no
// scheduling point models: the watchdog must release it (the run goes on,
// and says it is no longer deterministic from there), or the run would
// hang. Exit status 0 when the reader got the byte.
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

namespace {

int sockets[2];
pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
bool started = false;
char received = 0;

void* reader(void*) {
  pthread_mutex_lock(&mutex);
  started = true;
  pthread_cond_signal(&started_cond);
  pthread_mutex_unlock(&mutex);
  if (syscall(SYS_read, sockets[1], &received, 1) != 1) std::perror("escape_read: read");
  return nullptr;
}

}  // namespace

int main() {
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
    std::perror("escape_read: socketpair");
    return 1;
  }
  pthread_t thread;
  if (pthread_create(&thread, nullptr, reader, nullptr) != 0) return 1;
  pthread_mutex_lock(&mutex);
  while (!started) pthread_cond_wait(&started_cond, &mutex);
  pthread_mutex_unlock(&mutex);
  // Asleep on the virtual clock: the reader is the only thread that can
  // run, and it runs into read().
  usleep(1000);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) return 1;
  ibv_context* context = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  if (context == nullptr) return 1;
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) return 1;
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  if (write(sockets[0], "x", 1) != 1) return 1;
  pthread_join(thread, nullptr);
  std::printf("escape_read: the reader got '%c'\n", received);
  return received == 'x' ? 0 : 1;
}

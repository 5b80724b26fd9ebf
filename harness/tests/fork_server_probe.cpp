// What a program does before its first verbs call, for the fork server's
// tests (test_fork_server.cpp): `fork_server_probe MODE`, then a loopback
// RC pair sends four messages whose wr_ids are heap addresses (blocks
// allocated before the first verbs call, and receive buffers allocated
// after it) and stack addresses, so that a seed's trace shows where the
// program's heap and stack put them. MODE says what comes first:
//   plain    output on stdout and stderr, and heap blocks
//   thread   a thread that lives until the end
//   socket   a TCP socket left open
//   child    a child process that lives until the end
//   clock    a read of CLOCK_MONOTONIC
//   lock     a mutex locked and unlocked
//   none     no verbs call at all (exit 0)
//   hang     plain's exchange, then pause(2): only a timeout ends it
#include "loopback_pair.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr, "usage: fork_server_probe plain|thread|socket|child|clock|lock|none|hang\n");
  return 2;
}

void exchange() {
  // Before the first verbs call: blocks whose addresses become wr_ids.
  std::vector<std::unique_ptr<char[]>> before;
  for (std::size_t size : {24, 200, 48, 1000, 72}) before.emplace_back(new char[size]);
  field_failures::Pair pair;
  // After it: the receive side's bookkeeping, one block per receive.
  std::vector<std::unique_ptr<char[]>> after;
  for (std::size_t size : {32, 96, 40, 512}) after.emplace_back(new char[size]);
  for (std::size_t i = 0; i < after.size(); ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(pair.buffer + 2048 + i * 64), 64, pair.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<uintptr_t>(after[i].get());
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_recv(pair.b, &wr, &bad)) field_failures::fail("ibv_post_recv", err);
  }
  // Half the sends are named by a stack address: where the stack starts
  // depends on the size of the environment the program was started with.
  char on_stack[4][16];
  for (std::size_t i = 0; i < after.size(); ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(pair.buffer + i * 64), 64, pair.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = i % 2 == 0 ? reinterpret_cast<uintptr_t>(before[i].get())
                          : reinterpret_cast<uintptr_t>(&on_stack[i][0]);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(pair.a, &wr, &bad)) field_failures::fail("ibv_post_send", err);
  }
  // Every completion, whatever its status (a seed's faults may fail some).
  std::size_t seen = 0;
  for (int spins = 0; seen < 2 * after.size() && spins < 10'000'000; ++spins) {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(pair.cq, 8, wc);
    if (n < 0) field_failures::fail("ibv_poll_cq", EIO);
    seen += static_cast<std::size_t>(n);
  }
  std::printf("fork_server_probe: %zu completions\n", seen);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return usage();
  const std::string mode = argv[1];
  if (mode == "none") return 0;
  if (mode == "plain") {
    std::printf("fork_server_probe: before the first verbs call (stdout)\n");
    std::fprintf(stderr, "fork_server_probe: before the first verbs call (stderr)\n");
    exchange();
    return 0;
  }
  if (mode == "hang") {
    exchange();
    std::fflush(stdout);
    pause();
    return 0;
  }
  if (mode == "thread") {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    std::thread waiter([&] {
      std::unique_lock lock(mutex);
      done.wait(lock, [&] { return finished; });
    });
    exchange();
    {
      std::lock_guard lock(mutex);
      finished = true;
    }
    done.notify_one();
    waiter.join();
    return 0;
  }
  if (mode == "socket") {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) field_failures::fail("socket", errno);
    exchange();
    close(fd);
    return 0;
  }
  if (mode == "clock") {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    exchange();
    return 0;
  }
  if (mode == "lock") {
    static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mutex);
    pthread_mutex_unlock(&mutex);
    exchange();
    return 0;
  }
  if (mode == "child") {
    int ends[2];
    if (pipe(ends) != 0) field_failures::fail("pipe", errno);
    const pid_t child = fork();
    if (child == 0) {
      close(ends[1]);
      char byte;
      (void)read(ends[0], &byte, 1);  // until the parent's end closes it
      _exit(0);
    }
    close(ends[0]);
    exchange();
    close(ends[1]);
    waitpid(child, nullptr, 0);
    return 0;
  }
  return usage();
}

// shared_memory.h: this process's segments (registered pages moved onto
// memfds) and the mappings of other members' segments.
#include "shared_memory.h"

#include "process_maps.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace verbfault::sim::shared_memory {

namespace {

uintptr_t page_size() {
  static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// The memfd's name, which /proc/<pid>/fd/<fd> shows as "/memfd:<name>
// (deleted)" (memfd_create(2)): how a peer checks that the descriptor it
// opened is still the segment the frame meant.
std::string segment_name(pid_t pid, uint64_t id) {
  return "verbfault-seg-" + std::to_string(pid) + "-" + std::to_string(id);
}
std::string segment_link(pid_t pid, uint64_t id) {
  return "/memfd:" + segment_name(pid, id) + " (deleted)";
}

using process_maps::covered_by;
using MapsLine = process_maps::Mapping;

// Memory the pages of a segment may come from: private, anonymous,
// readable and writable (the heap, malloc's arenas and mmaps).
bool private_anonymous(const MapsLine& line) {
  const bool anonymous = line.inode == 0 && (line.path.empty() || line.path == "[heap]" ||
                                             line.path.starts_with("[anon:"));
  return anonymous && line.perms == "rw-p";
}

// Moves the pages at [at, at + size) onto a new mapping `fresh` of the same
// size that holds a copy of them: one mremap(2) replaces the old pages,
// with no instant where the addresses are unmapped.
//
// The system call itself, not the C library's mremap: a program's memory
// hooks patch that one, and this move leaves the program's addresses
// holding what they held (as the kernel pinning the pages would), so they
// have nothing to learn; and UCX 1.13's hook (ucm_mremap) drops the
// fifth argument, so that MREMAP_FIXED moved `fresh` to whatever address
// a register held, unmapping what was there, while `at` kept its private
// pages and the segment a stale copy (ucx_perftest put_bw bcopy: the
// peer read zeros). The result must be `at` itself. The bytes are in
// `fresh` already (copy_through_kernel).
bool move_onto(void* fresh, void* at, std::size_t size) {
  const auto moved = reinterpret_cast<void*>(
      syscall(SYS_mremap, fresh, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, at));
  if (moved == at) return true;
  if (moved == MAP_FAILED) syscall(SYS_munmap, fresh, size);
  return false;
}

// The program's bytes at [at, at + size) into file `fd` from its start
// (`to_file`), or the file's into `at`, copied by the kernel: the system
// calls themselves, so that no sanitizer reads the program's memory on
// the device's behalf. A registration may cover bytes outside any of the
// program's objects (Open MPI's grdma rounds regions out to whole pages,
// across heap redzones) or memory the program freed before it
// deregistered it (UCX's memory pools); the device, as a NIC's DMA, may
// touch both. True when every byte moved.
bool copy_through_kernel(int fd, void* at, std::size_t size, bool to_file) {
  for (std::size_t done = 0; done < size;) {
    char* here = static_cast<char*>(at) + done;
    const long n = to_file ? syscall(SYS_pwrite64, fd, here, size - done, done)
                           : syscall(SYS_pread64, fd, here, size - done, done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

struct Segment {
  uintptr_t end = 0;
  int fd = -1;
  uint64_t id = 0;
  pid_t creator = 0;        // in its name (a child made by fork(2) has another pid)
  std::size_t regions = 0;  // registered regions using it
};

// The pages of `begin`'s segment back in private anonymous memory, if the
// program has not unmapped or replaced them meanwhile, and its descriptor
// closed.
void unshare(uintptr_t begin, const Segment& s) {
  const std::string link = segment_link(s.creator, s.id);
  const bool still_there = covered_by(begin, s.end, [&](const MapsLine& line) {
    return line.path == link && line.perms.size() == 4 && line.perms[3] == 's';
  });
  const std::size_t size = s.end - begin;
  if (still_there) {
    // The bytes come from the segment's file (copy_through_kernel).
    void* fresh = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fresh != MAP_FAILED) {
      if (copy_through_kernel(s.fd, fresh, size, /*to_file=*/false))
        move_onto(fresh, reinterpret_cast<void*>(begin), size);
      else
        syscall(SYS_munmap, fresh, size);
    }
  }
  ::close(s.fd);
}

// This process's segments by first address. Guarded by Fabric::mutex for
// everything but fork(2), which holds `mutex` (see shared_memory.h).
struct Segments {
  std::mutex mutex;
  std::map<uintptr_t, Segment> by_address;
  uint64_t next_id = 1;
};

Segments& segments() {
  static Segments* s = new Segments;  // leaked: the service thread may outlive statics
  return *s;
}

void before_fork() {
  segments().mutex.lock();
}
void after_fork_in_parent() {
  segments().mutex.unlock();
}
// The child gets its own copy of every page, as the kernel gives a child
// copies of pinned pages (fork(2), ibv_fork_init(3)); its regions send
// their bytes in frames.
void after_fork_in_child() {
  Segments& s = segments();
  for (const auto& [begin, segment] : s.by_address) unshare(begin, segment);
  s.by_address.clear();
  s.mutex.unlock();
}

}  // namespace

void install_fork_handlers() {
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers,
                 [] { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
}

uint64_t share(void* addr, std::size_t length) {
  const uintptr_t page = page_size();
  const uintptr_t first = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t begin = (first + page - 1) / page * page;
  const uintptr_t end = (first + length) / page * page;
  if (end <= begin || end - begin < kMinSharedBytes) return 0;
  Segments& s = segments();
  std::lock_guard guard(s.mutex);
  auto after = s.by_address.upper_bound(begin);
  if (after != s.by_address.begin()) {
    auto holder = std::prev(after);
    if (holder->second.end >= end) {
      ++holder->second.regions;  // the same memory registered again
      return holder->second.id;
    }
    if (holder->second.end > begin) return 0;
  }
  if (after != s.by_address.end() && after->first < end) return 0;
  if (s.by_address.size() >= kMaxSegments) return 0;
  if (!covered_by(begin, end, private_anonymous)) return 0;

  const uint64_t id = s.next_id++;
  const std::size_t size = end - begin;
  const int fd = memfd_create(segment_name(getpid(), id).c_str(), MFD_CLOEXEC);
  if (fd < 0) return 0;
  void* fresh = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) == 0)
    fresh = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fresh != MAP_FAILED &&
      !copy_through_kernel(fd, reinterpret_cast<void*>(begin), size, /*to_file=*/true)) {
    syscall(SYS_munmap, fresh, size);
    fresh = MAP_FAILED;
  }
  if (fresh == MAP_FAILED || !move_onto(fresh, reinterpret_cast<void*>(begin), size)) {
    ::close(fd);
    return 0;
  }
  s.by_address[begin] = Segment{end, fd, id, getpid(), 1};
  return id;
}

void release(uint64_t id) {
  if (id == 0) return;
  Segments& s = segments();
  std::lock_guard guard(s.mutex);
  for (auto it = s.by_address.begin(); it != s.by_address.end(); ++it) {
    if (it->second.id != id) continue;
    if (--it->second.regions == 0) {
      unshare(it->first, it->second);
      s.by_address.erase(it);
    }
    return;
  }
}

std::optional<Location> locate(const uint8_t* data, uint64_t length, uint64_t& gap) {
  const auto& table = segments().by_address;
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  auto after = table.upper_bound(at);
  if (after != table.begin()) {
    auto holder = std::prev(after);
    if (holder->second.end > at) {
      const Segment& s = holder->second;
      return Location{s.fd, s.id, at - holder->first, std::min<uint64_t>(length, s.end - at)};
    }
  }
  gap = length;
  if (after != table.end() && after->first - at < length) gap = after->first - at;
  return std::nullopt;
}

std::size_t segment_count() {
  return segments().by_address.size();
}

// ---- the peer's side ----

namespace {

// At most this many segments of other members are mapped at a time.
constexpr std::size_t kMaxMappings = 64;

struct Mapping {
  uint32_t member = 0;
  pid_t pid = 0;
  uint64_t segment = 0;
  const uint8_t* base = nullptr;
  std::size_t size = 0;
  uint64_t last_request = 0;
};

// Guarded by Fabric::mutex (the service thread's handlers).
std::vector<Mapping>& mappings() {
  static auto* m = new std::vector<Mapping>;  // leaked, as segments()
  return *m;
}

void unmap(const Mapping& m) {
  munmap(const_cast<uint8_t*>(m.base), m.size);
}

// Opens and maps segment `segment` of process `pid` (descriptor `fd`
// there): nullopt when it is not that segment any more, or not there.
std::optional<Mapping> map_segment(pid_t pid, int fd, uint64_t segment) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int ours = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ours < 0) return std::nullopt;
  // The descriptor number may have been reused since the frame was sent:
  // the name says which file it is now.
  char link[256];
  const std::string self = "/proc/self/fd/" + std::to_string(ours);
  const ssize_t n = readlink(self.c_str(), link, sizeof link);
  struct stat st {};
  const bool same =
      n > 0 && std::string_view(link, static_cast<std::size_t>(n)) == segment_link(pid, segment);
  void* base = MAP_FAILED;
  if (same && fstat(ours, &st) == 0 && st.st_size > 0)
    base = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, ours, 0);
  ::close(ours);  // the mapping keeps the file
  if (base == MAP_FAILED) return std::nullopt;
  Mapping m;
  m.pid = pid;
  m.segment = segment;
  m.base = static_cast<const uint8_t*>(base);
  m.size = static_cast<std::size_t>(st.st_size);
  return m;
}

}  // namespace

std::span<const uint8_t> resolve(uint32_t member, pid_t pid, int fd, uint64_t segment,
                                 uint64_t offset, uint64_t length, uint64_t request) {
  std::vector<Mapping>& all = mappings();
  Mapping* found = nullptr;
  for (Mapping& m : all) {
    if (m.member != member) continue;
    if (m.pid != pid) {
      // Another process holds the index now: the old one's are useless.
      forget(member);
      break;
    }
    if (m.segment == segment) {
      found = &m;
      break;
    }
  }
  if (found == nullptr) {
    std::optional<Mapping> fresh = map_segment(pid, fd, segment);
    if (!fresh) return {};
    fresh->member = member;
    if (all.size() >= kMaxMappings) {
      // The least recently used one not used by this request.
      auto oldest = all.end();
      for (auto it = all.begin(); it != all.end(); ++it)
        if (it->last_request < request &&
            (oldest == all.end() || it->last_request < oldest->last_request))
          oldest = it;
      if (oldest != all.end()) {
        unmap(*oldest);
        all.erase(oldest);
      }
    }
    all.push_back(*fresh);
    found = &all.back();
  }
  found->last_request = request;
  if (offset > found->size || length > found->size - offset) return {};
  return {found->base + offset, length};
}

void forget(uint32_t member) {
  std::vector<Mapping>& all = mappings();
  std::erase_if(all, [&](const Mapping& m) {
    if (m.member != member) return false;
    unmap(m);
    return true;
  });
}

std::size_t mapped_count() {
  return mappings().size();
}

}  // namespace verbfault::sim::shared_memory

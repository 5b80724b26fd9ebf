#include "callers.h"

#include "run_lock.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>

namespace verbfault::interposer {

namespace {

struct Range {
  std::uintptr_t begin;
  std::uintptr_t end;
  bool rdma_stack;
};

// Guarded by `ranges_lock` (a spin lock: this runs inside pthread_mutex_lock).
record::RunLock ranges_lock;
// Whether this thread holds ranges_lock. A call it makes meanwhile is the
// lookup's own, not the program's (dl_iterate_phdr takes the loader's
// lock); waiting for ranges_lock would spin on itself for ever.
__attribute__((tls_model("initial-exec"))) thread_local bool t_looking_up = false;
// The code ranges, sorted by begin, in a fixed table: learning them must
// not allocate. ASan's allocator reads the clock with its own lock held,
// clock_gettime is libverbfault's export, and the first lookup of a caller
// learns: an allocation there waits for that lock for ever. 4096 ranges is
// an executable segment for each of 4096 loaded objects; past that, code
// of objects not in the table counts as the program's.
constexpr std::size_t kMaxRanges = 4096;
struct Ranges {
  Range table[kMaxRanges];
  std::size_t count = 0;
  bool full = false;
  bool learnt = false;
};
Ranges ranges;
// The executable range of this library, empty until learnt: begin is
// stored before end (release), end read before begin (acquire), so a reader
// that sees the new end sees the new begin.
std::atomic<std::uintptr_t> own_begin{1};
std::atomic<std::uintptr_t> own_end{0};

bool is_rdma_stack(std::string_view path) {
  const std::string_view base = path.substr(path.rfind('/') + 1);
  // Not librdmacm: on the simulated connection manager it is a client of
  // the device (sim/cm), and its waits are the program's: rdma_destroy_id
  // waiting for the events the program has not acknowledged, rsockets'
  // locks and threads.
  for (std::string_view name : {"libverbfault", "libibverbs", "libmlx", "libnl-"})
    if (base.substr(0, name.size()) == name) return true;
  return base.find("-rdmav") != std::string_view::npos ||
         path.find("/libibverbs/") != std::string_view::npos;
}

int add_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* found = static_cast<Ranges*>(data);
  const bool rdma = info->dlpi_name != nullptr && is_rdma_stack(info->dlpi_name);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
    if (found->count == kMaxRanges) {
      found->full = true;
      return 1;
    }
    const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    found->table[found->count++] = {begin, begin + header.p_memsz, rdma};
  }
  return 0;
}

// The executable code of every loaded object (lock held). Allocates
// nothing: std::sort sorts in place.
void learn() {
  ranges.count = 0;
  ranges.full = false;
  dl_iterate_phdr(add_object, &ranges);
  std::sort(ranges.table, ranges.table + ranges.count,
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  ranges.learnt = true;
}

const Range* lookup(std::uintptr_t address) {
  const Range* const first = ranges.table;
  const Range* const last = ranges.table + ranges.count;
  const Range* after = std::upper_bound(
      first, last, address, [](std::uintptr_t a, const Range& r) { return a < r.begin; });
  if (after == first) return nullptr;
  const Range& range = *(after - 1);
  return address < range.end ? &range : nullptr;
}

// The executable range of a sanitizer runtime, found from one of its
// functions: written once by the first caller (the loader lock of
// dl_iterate_phdr serializes concurrent first callers, and each writes the
// same values). Finding it allocates nothing.
struct RuntimeCode {
  void (*probe)();
  std::atomic<std::uintptr_t> begin{1};
  std::atomic<std::uintptr_t> end{0};

  bool contains(const void* return_address) {
    if (end.load(std::memory_order_acquire) == 0) dl_iterate_phdr(find, this);
    const auto address = reinterpret_cast<std::uintptr_t>(return_address);
    return address < end.load(std::memory_order_acquire) &&
           address >= begin.load(std::memory_order_relaxed);
  }

  static int find(dl_phdr_info* info, std::size_t, void* data) {
    auto* self = static_cast<RuntimeCode*>(data);
    const auto probe = reinterpret_cast<std::uintptr_t>(self->probe);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& header = info->dlpi_phdr[i];
      if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
      const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
      if (probe >= begin && probe < begin + header.p_memsz) {
        self->begin.store(begin, std::memory_order_relaxed);
        self->end.store(begin + header.p_memsz, std::memory_order_release);
        return 1;
      }
    }
    return 0;
  }
};

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_init();
RuntimeCode tsan_code{&__tsan_init};
#endif

// `__asan_init` is a weak reference: null when no ASan runtime is loaded.
extern "C" void __asan_init() __attribute__((weak));
RuntimeCode asan_code{&__asan_init};

}  // namespace

namespace {

// The object `return_address` lies in (dladdr), or none.
std::optional<Dl_info> object_of(const void* return_address) {
  Dl_info info{};
  if (return_address == nullptr || dladdr(return_address, &info) == 0 || info.dli_fname == nullptr)
    return std::nullopt;
  return info;
}

std::string_view base_name(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

bool called_from_connection_manager(const void* return_address) {
  const std::optional<Dl_info> object = object_of(return_address);
  return object && base_name(object->dli_fname).substr(0, 9) == "librdmacm";
}

bool called_from_verbs_library(const void* return_address) {
  const std::optional<Dl_info> object = object_of(return_address);
  if (!object) return false;
  static const void* const own_base = [] {
    return object_of(reinterpret_cast<const void*>(&called_from_verbs_library))->dli_fbase;
  }();
  if (object->dli_fbase == own_base) return true;
  const std::string_view file = object->dli_fname;
  return base_name(file).substr(0, 13) == "libibverbs.so" ||
         file.find("/libibverbs/") != std::string_view::npos;
}

bool called_from_address_sanitizer(const void* return_address) {
  return __asan_init != nullptr && asan_code.contains(return_address);
}

bool called_from_sanitizer([[maybe_unused]] const void* return_address) {
#if defined(__SANITIZE_THREAD__)
  return tsan_code.contains(return_address);
#else
  return false;
#endif
}

bool called_from_rdma_stack(const void* return_address) {
  const auto address = reinterpret_cast<std::uintptr_t>(return_address);
  // The usual caller is libverbfault itself (the simulated device's locks):
  // its own code range, learnt once, answers without the lock.
  const std::uintptr_t end = own_end.load(std::memory_order_acquire);
  if (address < end && address >= own_begin.load(std::memory_order_relaxed)) return true;
  if (t_looking_up) return true;
  std::unique_lock lock(ranges_lock);
  t_looking_up = true;
  struct Done {
    ~Done() { t_looking_up = false; }
  } done;
  if (!ranges.learnt) {
    learn();
    const Range* own = lookup(reinterpret_cast<std::uintptr_t>(&called_from_rdma_stack));
    if (own != nullptr) {
      own_begin.store(own->begin, std::memory_order_relaxed);
      own_end.store(own->end, std::memory_order_release);  // after begin: see above
    }
  }
  const Range* range = lookup(address);
  if (range == nullptr && !ranges.full) {
    learn();  // loaded since (dlopen)
    range = lookup(address);
  }
  return range != nullptr && range->rdma_stack;
}

}  // namespace verbfault::interposer

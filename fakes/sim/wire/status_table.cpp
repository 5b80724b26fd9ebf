#include "status_table.h"

#include "endpoint.h"
#include "fabric_name.h"
#include "fabric_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace verbfault::sim::wire {

namespace {

using Word = std::atomic_ref<uint64_t>;
static_assert(Word::is_always_lock_free, "the table is shared between processes: lock-free only");
static_assert(Word::required_alignment <= alignof(uint64_t));

// "VFTABLE<layout>" read as bytes.
constexpr uint64_t kMagic = 0x3045'4c42'4154'4656 + (uint64_t{kStatusTableLayout} << 56);
static_assert(kStatusTableLayout < 10);

uint64_t load(const uint64_t& word) {
  return Word(const_cast<uint64_t&>(word)).load(std::memory_order_acquire);
}
void store(uint64_t& word, uint64_t value) {
  Word(word).store(value, std::memory_order_release);
}

uint32_t tag_of(uint64_t incarnation) {
  return static_cast<uint32_t>(incarnation);
}
// A counter's count when it counts frames of `incarnation`, else 0.
uint32_t count_for(uint64_t counter, uint64_t incarnation) {
  return (counter >> 32) == tag_of(incarnation) ? static_cast<uint32_t>(counter) : 0;
}
void add_one(uint64_t& word, uint64_t incarnation) {
  Word counter(word);
  uint64_t old = counter.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    const uint32_t count = count_for(old, incarnation) + 1;
    next = (uint64_t{tag_of(incarnation)} << 32) | count;
  } while (!counter.compare_exchange_weak(old, next, std::memory_order_release,
                                          std::memory_order_relaxed));
}

std::string failed(std::string_view fabric, const std::string& what, int error) {
  return "verbfault: fabric '" + std::string(fabric) + "': " + what + ": " + std::strerror(error);
}

flock byte_lock(short type, uint32_t first, uint32_t count) {
  flock lock{};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = first;
  lock.l_len = count;
  lock.l_pid = 0;  // F_OFD_*: must be 0 (fcntl(2))
  return lock;
}

}  // namespace

struct StatusTable::Layout {
  uint64_t magic;  // 0 in a new file; kMagic once anyone has opened it
  uint64_t joins;  // incarnations handed out so far
  uint64_t reserved[6];
  // A cache line of its own per slot header: written by different processes.
  struct alignas(64) Slot {
    uint64_t pid;
    uint64_t incarnation;
    uint64_t waits;      // odd while waiting; bumped at each change, so a reader
                         // that sees the same value twice knows it never changed
    uint64_t listening;  // == incarnation once the member listens (0 before)
    uint64_t settling;   // odd while the member has work to do at quiescence
    uint64_t calls;      // verbs calls the member's application made so far
    uint64_t outside;    // odd while its waiting mark stands for threads that
                         // all wait outside the device (set_outside)
    uint64_t reserved[1];
    uint64_t listeners[StatusTable::kListenersPerMember];  // 0: a free entry
    uint64_t sent_to[kMaxMembers];                         // (tag, count): see status_table.h
    uint64_t handled_from[kMaxMembers];                    // (tag, count)
  } slots[kMaxMembers];
};

std::size_t StatusTable::file_bytes() {
  return sizeof(Layout);
}

std::unique_ptr<StatusTable> StatusTable::open(std::string_view fabric, OwnedFds* fds,
                                               std::string& error) {
  const std::string path = status_table_path(fabric);
  // Mode 0600: the fabric is one user's. O_NOFOLLOW: /dev/shm is shared.
  OwnedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600), fds);
  if (!fd) {
    error = failed(fabric, "cannot open its status table " + path, errno);
    return nullptr;
  }
  struct stat status {};
  if (fstat(fd.get(), &status) != 0) {
    error = failed(fabric, "cannot stat " + path, errno);
    return nullptr;
  }
  // A new file is empty: its creator, or a second one racing it, sizes it.
  // Both ftruncate to one size, which changes nothing the second time (the
  // bytes stay as the first left them), so there is no race to settle.
  if (status.st_size == 0 && ftruncate(fd.get(), sizeof(Layout)) != 0) {
    error = failed(fabric, "cannot size " + path, errno);
    return nullptr;
  }
  if (status.st_size != 0 && static_cast<std::size_t>(status.st_size) != sizeof(Layout)) {
    error = "verbfault: fabric '" + std::string(fabric) + "': " + path + " has " +
            std::to_string(status.st_size) + " bytes, not the " + std::to_string(sizeof(Layout)) +
            " of a status table (another verbfault version's? remove it while no member runs)";
    return nullptr;
  }
  void* mapped = mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (mapped == MAP_FAILED) {
    error = failed(fabric, "cannot map " + path, errno);
    return nullptr;
  }
  auto* table = static_cast<Layout*>(mapped);
  // All zeros is a valid empty table, so initializing is only marking the
  // file as one: whoever swaps the magic in first. Anything else in it
  // means the file is not ours.
  uint64_t magic = 0;
  Word(table->magic).compare_exchange_strong(magic, kMagic, std::memory_order_acq_rel);
  if (magic != 0 && magic != kMagic) {
    munmap(mapped, sizeof(Layout));
    error = "verbfault: fabric '" + std::string(fabric) + "': " + path +
            " is not a status table of this verbfault version (remove it while no member runs)";
    return nullptr;
  }
  return std::unique_ptr<StatusTable>(new StatusTable(std::move(fd), table));
}

StatusTable::~StatusTable() {
  if (table_ != nullptr) munmap(table_, sizeof(Layout));
}

void StatusTable::abandon_after_fork() {
  munmap(table_, sizeof(Layout));
  table_ = nullptr;
}

bool StatusTable::claim(uint32_t index, std::string& error) {
  flock lock = byte_lock(F_WRLCK, index, 1);
  for (int attempt = 0;; ++attempt) {
    if (fcntl(fd_.get(), F_OFD_SETLK, &lock) == 0) break;
    if ((errno != EAGAIN && errno != EACCES) || attempt == 1000) {
      error = "verbfault: member index " + std::to_string(index) +
              ": cannot lock its byte of the status table: " + std::strerror(errno);
      return false;
    }
    const timespec millisecond{0, 1000 * 1000};
    nanosleep(&millisecond, nullptr);
  }
  index_ = index;
  Layout::Slot& slot = table_->slots[index];
  // Not listening and not waiting first: a reader that sees the slot
  // mid-reset must take it for neither live nor quiescent.
  store(slot.listening, 0);
  store(slot.waits, 0);
  store(slot.settling, 0);
  store(slot.calls, 0);
  store(slot.outside, 0);
  for (uint64_t& listener : slot.listeners) store(listener, 0);
  for (uint32_t other = 0; other < kMaxMembers; ++other) {
    store(slot.sent_to[other], 0);
    store(slot.handled_from[other], 0);
    // Frames to and from the index's previous holder; their tags would
    // keep them out of the sums anyway.
    store(table_->slots[other].sent_to[index], 0);
    store(table_->slots[other].handled_from[index], 0);
  }
  incarnation_ = Word(table_->joins).fetch_add(1, std::memory_order_acq_rel) + 1;
  store(slot.incarnation, incarnation_);
  store(slot.pid, static_cast<uint64_t>(getpid()));
  return true;
}

bool StatusTable::add_listener(uint64_t entry) {
  for (uint64_t& listener : table_->slots[index_].listeners)
    if (load(listener) == 0) {
      store(listener, entry);
      return true;
    }
  return false;
}

void StatusTable::remove_listener(uint64_t entry) {
  for (uint64_t& listener : table_->slots[index_].listeners)
    if (load(listener) == entry) {
      store(listener, 0);
      return;
    }
}

std::vector<std::pair<uint32_t, uint64_t>> StatusTable::others_listeners() const {
  std::vector<std::pair<uint32_t, uint64_t>> found;
  for (uint32_t member : live_members()) {
    if (member == index_) continue;
    for (const uint64_t& listener : table_->slots[member].listeners)
      if (const uint64_t entry = load(listener); entry != 0) found.emplace_back(member, entry);
  }
  return found;
}

void StatusTable::mark_listening() {
  store(table_->slots[index_].listening, incarnation_);
}

bool StatusTable::ready(uint32_t index) const {
  const Layout::Slot& slot = table_->slots[index];
  const uint64_t listening = load(slot.listening);
  return listening != 0 && listening == load(slot.incarnation);
}

StatusTable::Holder StatusTable::holder(uint32_t index) const {
  const Layout::Slot& slot = table_->slots[index];
  return {static_cast<pid_t>(load(slot.pid)), load(slot.incarnation)};
}

bool StatusTable::live(uint32_t index) const {
  if (index >= kMaxMembers) return false;
  if (index == index_) return true;
  flock lock = byte_lock(F_WRLCK, index, 1);
  // Locks of our own open file description do not conflict: ours is not
  // reported, which is why our own index is answered above.
  return fcntl(fd_.get(), F_OFD_GETLK, &lock) == 0 && lock.l_type != F_UNLCK && ready(index);
}

std::vector<uint32_t> StatusTable::live_members() const {
  std::vector<uint32_t> members{index_};
  for_each_other_live([&](uint32_t member) {
    members.push_back(member);
    return true;
  });
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

bool StatusTable::another_live() const {
  bool found = false;
  for_each_other_live([&](uint32_t) {
    found = true;
    return false;
  });
  return found;
}

template <class Visit>
void StatusTable::for_each_other_live(Visit visit) const {
  // F_OFD_GETLK reports one conflicting lock in a range, not necessarily the
  // lowest: split the range around each one found.
  struct Range {
    uint32_t begin, end;
  };
  Range pending[kMaxMembers + 1];
  int count = 0;
  pending[count++] = {0, kMaxMembers};
  while (count > 0) {
    const Range range = pending[--count];
    if (range.begin >= range.end) continue;
    flock lock = byte_lock(F_WRLCK, range.begin, range.end - range.begin);
    if (fcntl(fd_.get(), F_OFD_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) continue;
    // Members lock one byte each; a lock of any other shape is not a
    // member's, but it still says which byte to split at.
    const auto found = static_cast<uint32_t>(
        std::clamp<off_t>(lock.l_start, range.begin, static_cast<off_t>(range.end) - 1));
    if (found != index_ && ready(found) && !visit(found)) return;
    pending[count++] = {range.begin, found};
    pending[count++] = {found + 1, range.end};
  }
}

void StatusTable::count_sent(uint32_t member, uint64_t incarnation) {
  add_one(table_->slots[index_].sent_to[member], incarnation);
}

void StatusTable::count_handled(uint32_t member, uint64_t incarnation) {
  add_one(table_->slots[index_].handled_from[member], incarnation);
}

void StatusTable::set_waiting(bool waiting) {
  Word waits(table_->slots[index_].waits);
  uint64_t old = waits.load(std::memory_order_relaxed);
  while ((old % 2 == 1) != waiting &&
         !waits.compare_exchange_weak(old, old + 1, std::memory_order_acq_rel)) {
  }
}

void StatusTable::set_settling(bool settling) {
  Word word(table_->slots[index_].settling);
  uint64_t old = word.load(std::memory_order_relaxed);
  while ((old % 2 == 1) != settling &&
         !word.compare_exchange_weak(old, old + 1, std::memory_order_acq_rel)) {
  }
}

void StatusTable::set_outside(bool outside) {
  Word word(table_->slots[index_].outside);
  uint64_t old = word.load(std::memory_order_relaxed);
  while ((old % 2 == 1) != outside &&
         !word.compare_exchange_weak(old, old + 1, std::memory_order_acq_rel)) {
  }
}

bool StatusTable::outside(uint32_t index) const {
  return load(table_->slots[index].outside) % 2 == 1;
}

bool StatusTable::settling(uint32_t index) const {
  const Layout::Slot& slot = table_->slots[index];
  return load(slot.settling) % 2 == 1;
}

void StatusTable::count_call() {
  Word(table_->slots[index_].calls).fetch_add(1, std::memory_order_relaxed);
}

uint64_t StatusTable::others_calls() const {
  uint64_t sum = 0;
  for_each_other_live([&](uint32_t member) {
    sum += load(table_->slots[member].calls);
    return true;
  });
  return sum;
}

uint64_t StatusTable::joins() const {
  return load(table_->joins);
}

std::vector<uint64_t> StatusTable::snapshot(const std::vector<uint32_t>& members) const {
  std::vector<uint64_t> words;
  words.reserve(members.size() * (2 + 2 * members.size()));
  for (const uint32_t i : members) {
    const Layout::Slot& slot = table_->slots[i];
    words.push_back(load(slot.incarnation));
    words.push_back(load(slot.waits));
    for (const uint32_t j : members) {
      words.push_back(load(slot.sent_to[j]));
      words.push_back(load(slot.handled_from[j]));
    }
  }
  return words;
}

bool StatusTable::quiescent() const {
  if (load(table_->slots[index_].waits) % 2 == 0) return false;
  const std::vector<uint32_t> members = live_members();
  const std::vector<uint64_t> first = snapshot(members);
  const std::size_t n = members.size();
  const std::size_t stride = 2 + 2 * n;
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t* slot_i = &first[i * stride];
    if (slot_i[1] % 2 == 0) return false;  // i is not waiting
    for (std::size_t j = 0; j < n; ++j) {
      const uint64_t* slot_j = &first[j * stride];
      const uint64_t sent = slot_i[2 + 2 * j];         // i's sent_to[j]
      const uint64_t handled = slot_j[2 + 2 * i + 1];  // j's handled_from[i]
      if (count_for(sent, slot_j[0]) != count_for(handled, slot_i[0])) return false;
    }
  }
  // Every word is monotonic (counters and `waits` only grow; a join changes
  // the incarnation), so a word read twice with one value held it all along
  // in between: there was an instant, between the two reads, at which the
  // whole table was as checked.
  return snapshot(members) == first && live_members() == members;
}

}  // namespace verbfault::sim::wire

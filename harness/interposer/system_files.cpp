#include "system_files.h"

#include "callers.h"
#include "connection_manager.h"
#include "libc_files.h"
#include "run_lock.h"
#include "run.h"
#include "system_view.h"

#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::interposer::system_files {

namespace {

using provider::SystemNode;
using provider::SystemNodeKind;

const libc::FileFunctions& real() {
  return libc::files();
}

// ---- the working directory, when it is a served one ----------------------
// Guarded by `cwd_lock` (a spin lock: these calls may come from anywhere,
// and a pthread mutex is a scheduling point of the program's). The flag
// lets every call with a relative path skip the lock while it is unset.
record::RunLock cwd_lock;
std::string served_cwd;
std::atomic<bool> has_served_cwd{false};

std::string current_served_cwd() {
  std::lock_guard guard(cwd_lock);
  return served_cwd;
}

void set_served_cwd(std::optional<std::string> dir) {
  std::lock_guard guard(cwd_lock);
  served_cwd = dir ? *dir : std::string();
  has_served_cwd.store(dir.has_value(), std::memory_order_release);
}

// ---- paths ---------------------------------------------------------------

// `path` (absolute) without "//", "." and "..", lexically: the served
// tree's only symlinks lead from the class directories into the device
// directories, and a ".." through one of them is resolved as the kernel
// would by following it first (resolve() below).
std::string normalize(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (std::string_view part : parts) out.append("/").append(part);
  return out.empty() ? "/" : out;
}

bool may_be_served(std::string_view path) {
  return path.substr(0, 5) == "/sys/" || path.substr(0, 15) == "/dev/infiniband";
}

// Whether directory descriptor `dirfd` is the root directory (hwloc reads
// sysfs relative to a descriptor of "/").
bool is_root(int dirfd) {
  struct stat dir {};
  struct stat root {};
  return real().fstatat(dirfd, "", &dir, AT_EMPTY_PATH) == 0 &&
         real().fstatat(AT_FDCWD, "/", &root, 0) == 0 && dir.st_dev == root.st_dev &&
         dir.st_ino == root.st_ino;
}

// The served path `path` names (relative to `dirfd`), normalized, or none:
// then the C library answers.
std::optional<std::string> served_path(int dirfd, const char* path, const void* caller) {
  if (path == nullptr || path[0] == '\0') return std::nullopt;
  std::string absolute;
  if (path[0] == '/') {
    if (!may_be_served(path)) return std::nullopt;
    absolute = path;
  } else if (dirfd == AT_FDCWD) {
    if (!has_served_cwd.load(std::memory_order_acquire)) return std::nullopt;
    absolute = current_served_cwd();
    if (absolute.empty()) return std::nullopt;
    absolute.append("/").append(path);
  } else {
    const std::string_view relative = path;
    if (relative.substr(0, 4) != "sys/" && relative.substr(0, 14) != "dev/infiniband")
      return std::nullopt;
    if (!is_root(dirfd)) return std::nullopt;
    absolute = "/" + std::string(relative);
  }
  std::string normal = normalize(absolute);
  // A path that only passes through a served directory ("/dev/infiniband/..",
  // which ls -a stats) leaves it: the C library gets it without the served
  // part, which the kernel could not walk.
  const std::string through = normalize(absolute.substr(0, absolute.find("/..")));
  if (!provider::system_path_prefix(normal) && !provider::system_path_prefix(through))
    return std::nullopt;
  if (called_from_verbs_library(caller)) return std::nullopt;
  return normal;
}

// Whether `path` ends in "/" or "/.": the kernel then follows a last
// symlink even for lstat(2) or O_NOFOLLOW (path_resolution(7)).
bool names_a_directory(const char* path) {
  const std::string_view p = path;
  return p.ends_with('/') || p.ends_with("/.") || p == ".";
}

// What `path` is, its last symlink followed (or not), with the path it
// resolved to; a path that leads out of the served tree: kind kAbsent.
struct Resolved {
  std::string path;
  SystemNode node;
  int error = 0;  // ELOOP, ENOTDIR...
};

Resolved resolve(std::string path, bool follow_last) {
  for (int hops = 0; hops < 40; ++hops) {
    // Walk the components: a symlink before the last is always followed.
    std::string walked;
    size_t at = 0;
    bool restarted = false;
    while (at < path.size()) {
      const size_t end = std::min(path.find('/', at + 1), path.size());
      walked.append(path, at, end - at);
      const bool last = end == path.size();
      if (!provider::system_path_prefix(walked)) {  // the real directories above (/sys/class)
        at = end;
        if (last) return {path, {}, 0};
        continue;
      }
      SystemNode node = provider::system_node(walked);
      if (node.kind == SystemNodeKind::kAbsent) return {path, {}, 0};
      if (node.kind == SystemNodeKind::kSymlink && (!last || follow_last)) {
        const std::string parent = walked.substr(0, walked.rfind('/'));
        std::string target = node.text[0] == '/' ? node.text : parent + "/" + node.text;
        path = normalize(target + path.substr(end));
        restarted = true;
        break;
      }
      if (last) return {path, std::move(node), 0};
      if (node.kind != SystemNodeKind::kDirectory) return {path, {}, ENOTDIR};
      at = end;
    }
    if (!restarted) return {path, provider::system_node(path), 0};
  }
  return {path, {}, ELOOP};
}

// Whether the C library has a directory at `path` too (a class directory
// on a machine with real RDMA devices).
bool real_directory(const std::string& path) {
  struct stat st {};
  return real().fstatat(AT_FDCWD, path.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
}

// The entries of a served directory, with the real directory's merged in.
std::vector<std::string> entries_of(const Resolved& dir) {
  std::vector<std::string> names = dir.node.entries;
  if (DIR* found = real().opendir(dir.path.c_str())) {
    while (dirent64* entry = real().readdir64(found)) {
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
    }
    real().closedir(found);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A number the path keeps for the life of the process (FNV-1a), as an
// inode number: nothing looks these up, programs only compare them.
ino_t inode_of(std::string_view path) {
  uint64_t hash = 14695981039346656037ull;
  for (char c : path) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<ino_t>(hash | 1);
}

// sysfs's and devtmpfs's device numbers are the kernel's; a fixed one
// tells a program that these files are on one file system.
constexpr unsigned kFileSystemMajor = 0;
constexpr unsigned kFileSystemMinor = 0x1f;

struct Attributes {
  mode_t mode;
  off_t size;
  nlink_t links;
};

Attributes attributes_of(const Resolved& found) {
  switch (found.node.kind) {
    case SystemNodeKind::kDirectory:
      return {S_IFDIR | 0755, 0, 2};
    case SystemNodeKind::kFile:
      return {S_IFREG | 0444, 4096, 1};  // sysfs reports a page for every attribute
    case SystemNodeKind::kSymlink:
      return {S_IFLNK | 0777, static_cast<off_t>(found.node.text.size()), 1};
    case SystemNodeKind::kCharDevice:
      return {S_IFCHR | 0666, 0, 1};  // rdma-core's udev rules: uverbs is 0666
    case SystemNodeKind::kAbsent:
      break;
  }
  return {0, 0, 0};
}

void fill_stat(const Resolved& found, struct stat* out) {
  const Attributes a = attributes_of(found);
  *out = {};
  out->st_dev = makedev(kFileSystemMajor, kFileSystemMinor);
  out->st_ino = inode_of(found.path);
  out->st_mode = a.mode;
  out->st_nlink = a.links;
  out->st_size = a.size;
  out->st_blksize = 4096;
  out->st_blocks = a.mode & S_IFREG ? 8 : 0;
  if (found.node.kind == SystemNodeKind::kCharDevice)
    out->st_rdev = makedev(found.node.major, found.node.minor);
}

// Sets errno, returns -1: for the int-returning calls.
int fail(int error) {
  errno = error;
  return -1;
}

// A descriptor reading `text` from the start, read-only: a memfd of the
// text reopened through /proc (the memfd itself is writable).
int descriptor_of(const std::string& text, int flags) {
  const int memory = memfd_create("verbfault-sysfs", MFD_CLOEXEC);
  if (memory < 0) return -1;
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = ::write(memory, text.data() + written, text.size() - written);
    if (n < 0) {
      const int error = errno;
      ::close(memory);
      return fail(error);
    }
    written += static_cast<size_t>(n);
  }
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", memory);
  const int fd = real().openat(AT_FDCWD, proc, O_RDONLY | (flags & (O_CLOEXEC | O_NONBLOCK)));
  const int error = errno;
  ::close(memory);
  errno = error;
  return fd;
}

int open_node(const Resolved& found, int flags) {
  if (found.error != 0) return fail(found.error);
  if ((flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST);
  switch (found.node.kind) {
    case SystemNodeKind::kFile:
      if ((flags & O_DIRECTORY)) return fail(ENOTDIR);
      if ((flags & O_ACCMODE) != O_RDONLY) return fail(EACCES);  // sysfs attributes: 0444
      if (found.node.read_error != 0) return fail(found.node.read_error);
      return descriptor_of(found.node.text, flags);
    case SystemNodeKind::kDirectory:
      // A descriptor of a served directory would need every call taking a
      // directory descriptor (openat, fdopendir, fstat...) to know it: not
      // served yet (opendir, scandir and paths are).
      return fail(EACCES);
    case SystemNodeKind::kCharDevice:
      // The connection manager's node opens a CM file of the simulated
      // fabric (provider/connection_manager.h).
      if (found.node.connection_manager)
        return provider::cm_open(flags, process_run().config.cm_effect_level);
      // No driver behind a uverbs node: what the kernel answers for a
      // device number nothing serves. Only libibverbs would talk to uverbs,
      // and it never opens a simulated device's.
      return fail(ENXIO);
    case SystemNodeKind::kSymlink:
      return fail(ELOOP);  // O_NOFOLLOW
    case SystemNodeKind::kAbsent:
      break;
  }
  return fail(ENOENT);
}

// ---- served directories as DIR ---------------------------------------------

struct Entry {
  std::string name;
  unsigned char type;
  ino_t inode;
};

// What opendir hands out for a served directory. Owned by the program
// from opendir to closedir, like a DIR; only this file reads it.
struct ServedDir {
  std::vector<Entry> entries;
  size_t next = 0;
  dirent entry{};      // what readdir returns, overwritten by the next call
  dirent64 entry64{};  // readdir64's
};

// The served DIRs open now. Guarded by `dirs_lock` (spin: see cwd_lock);
// `open_dirs` lets readdir of any other DIR skip it while none is open.
record::RunLock dirs_lock;
std::vector<ServedDir*>* served_dirs = nullptr;
std::atomic<int> open_dirs{0};

ServedDir* served(DIR* dir) {
  if (dir == nullptr || open_dirs.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard guard(dirs_lock);
  if (served_dirs == nullptr) return nullptr;
  auto* candidate = reinterpret_cast<ServedDir*>(dir);
  return std::find(served_dirs->begin(), served_dirs->end(), candidate) != served_dirs->end()
             ? candidate
             : nullptr;
}

unsigned char type_of(SystemNodeKind kind) {
  switch (kind) {
    case SystemNodeKind::kDirectory:
      return DT_DIR;
    case SystemNodeKind::kFile:
      return DT_REG;
    case SystemNodeKind::kSymlink:
      return DT_LNK;
    case SystemNodeKind::kCharDevice:
      return DT_CHR;
    case SystemNodeKind::kAbsent:
      break;
  }
  return DT_UNKNOWN;
}

std::vector<Entry> listing(const Resolved& dir) {
  std::vector<Entry> out;
  out.push_back({".", DT_DIR, inode_of(dir.path)});
  out.push_back({"..", DT_DIR, inode_of(dir.path.substr(0, dir.path.rfind('/')))});
  for (const std::string& name : entries_of(dir)) {
    const std::string path = dir.path + "/" + name;
    const SystemNode node = provider::system_node(path);
    if (node.kind != SystemNodeKind::kAbsent) {
      out.push_back({name, type_of(node.kind), inode_of(path)});
      continue;
    }
    struct stat st {};  // an entry of the real directory
    real().fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW);
    out.push_back({name, static_cast<unsigned char>(IFTODT(st.st_mode)), st.st_ino});
  }
  return out;
}

template <class Dirent>
void fill_dirent(const Entry& from, size_t position, Dirent* out) {
  std::memset(out, 0, sizeof *out);
  out->d_ino = from.inode;
  out->d_off = static_cast<off_t>(position + 1);
  out->d_reclen = sizeof *out;
  out->d_type = from.type;
  std::snprintf(out->d_name, sizeof out->d_name, "%s", from.name.c_str());
}

template <class Dirent>
int scan(const Resolved& dir, Dirent*** list, int (*filter)(const Dirent*),
         int (*compare)(const Dirent**, const Dirent**)) {
  std::vector<Dirent*> kept;
  const std::vector<Entry> entries = listing(dir);
  for (size_t i = 0; i < entries.size(); ++i) {
    auto* entry = static_cast<Dirent*>(std::malloc(sizeof(Dirent)));
    if (entry == nullptr) {
      for (Dirent* done : kept) std::free(done);
      return fail(ENOMEM);
    }
    fill_dirent(entries[i], i, entry);
    if (filter != nullptr && filter(entry) == 0) {
      std::free(entry);
      continue;
    }
    kept.push_back(entry);
  }
  auto** out =
      static_cast<Dirent**>(std::malloc(std::max<size_t>(kept.size(), 1) * sizeof(Dirent*)));
  if (out == nullptr) {
    for (Dirent* done : kept) std::free(done);
    return fail(ENOMEM);
  }
  std::copy(kept.begin(), kept.end(), out);
  if (compare != nullptr)
    std::qsort(out, kept.size(), sizeof(Dirent*),
               reinterpret_cast<int (*)(const void*, const void*)>(compare));
  *list = out;
  return static_cast<int>(kept.size());
}

// The served directory at `path` (its symlinks followed), or why not.
std::optional<Resolved> served_directory(int dirfd, const char* path, const void* caller,
                                         int* error) {
  const std::optional<std::string> target = served_path(dirfd, path, caller);
  if (!target) return std::nullopt;
  Resolved found = resolve(*target, true);
  if (found.error != 0) {
    *error = found.error;
    return found;
  }
  if (found.node.kind != SystemNodeKind::kAbsent && found.node.kind != SystemNodeKind::kDirectory)
    *error = ENOTDIR;
  return found;  // kAbsent: the C library's, at found.path
}

// The one shape of the path calls: the C library's call (`real_call` of a
// directory descriptor and a path) for a path nobody serves, or for one
// that leaves the served tree once resolved; `served` for a served node.
template <class Result, class Real, class Served>
Result on_path(int dirfd, const char* path, bool follow, const void* caller, Real real_call,
               Served served) {
  const std::optional<std::string> target = served_path(dirfd, path, caller);
  if (!target) return real_call(dirfd, path);
  const Resolved found = resolve(*target, follow || names_a_directory(path));
  if (found.error != 0) return fail(found.error);
  if (found.node.kind == SystemNodeKind::kAbsent) return real_call(AT_FDCWD, found.path.c_str());
  return served(found);
}

}  // namespace

// ---- paths -----------------------------------------------------------------

int openat(int dirfd, const char* path, int flags, mode_t mode, const void* caller) {
  // A real provider's connection manager, under the harness: its files are
  // relayed (provider/cm_relay.h), for its faults at effect level and the
  // names of its ids.
  if (path != nullptr && std::string_view(path) == "/dev/infiniband/rdma_cm" && g_active &&
      provider::cm_kernel_present() && !called_from_verbs_library(caller))
    return provider::cm_open(flags, false);
  if (const std::optional<std::string> target = served_path(dirfd, path, caller)) {
    const Resolved found = resolve(*target, (flags & O_NOFOLLOW) == 0 || names_a_directory(path));
    if (found.error != 0 || found.node.kind != SystemNodeKind::kAbsent)
      return open_node(found, flags);
    return real().openat(AT_FDCWD, found.path.c_str(), flags, mode);
  }
  return real().openat(dirfd, path, flags, mode);
}

FILE* fopen(const char* path, const char* mode, bool large_file, const void* caller) {
  if (const std::optional<std::string> target = served_path(AT_FDCWD, path, caller)) {
    const Resolved found = resolve(*target, true);
    if (found.error != 0 || found.node.kind != SystemNodeKind::kAbsent) {
      // fopen(3)'s modes: only reading is served (sysfs attributes are 0444).
      const bool reading = mode != nullptr && mode[0] == 'r' && std::strchr(mode, '+') == nullptr;
      const int fd = open_node(
          found, reading ? O_RDONLY | (std::strchr(mode, 'e') ? O_CLOEXEC : 0) : O_WRONLY);
      if (fd < 0) return nullptr;
      FILE* stream = fdopen(fd, mode);
      if (stream == nullptr) {
        const int error = errno;
        ::close(fd);
        errno = error;
      }
      return stream;
    }
    return (large_file ? real().fopen64 : real().fopen)(found.path.c_str(), mode);
  }
  return (large_file ? real().fopen64 : real().fopen)(path, mode);
}

int fstatat(int dirfd, const char* path, struct stat* out, int flags, const void* caller) {
  const auto real_call = [&](int at, const char* p) { return real().fstatat(at, p, out, flags); };
  return on_path<int>(
      dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) == 0, caller, real_call,
      [&](const Resolved& found) {
        // A served directory that exists for real too: the kernel's.
        if (found.node.kind == SystemNodeKind::kDirectory && real_directory(found.path))
          return real_call(AT_FDCWD, found.path.c_str());
        fill_stat(found, out);
        return 0;
      });
}

int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out,
          const void* caller) {
  const auto real_call = [&](int at, const char* p) {
    return real().statx(at, p, flags, mask, out);
  };
  return on_path<int>(
      dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) == 0, caller, real_call,
      [&](const Resolved& found) {
        if (found.node.kind == SystemNodeKind::kDirectory && real_directory(found.path))
          return real_call(AT_FDCWD, found.path.c_str());
        struct stat st {};
        fill_stat(found, &st);
        *out = {};
        out->stx_mask = STATX_BASIC_STATS;
        out->stx_blksize = static_cast<uint32_t>(st.st_blksize);
        out->stx_nlink = static_cast<uint32_t>(st.st_nlink);
        out->stx_mode = static_cast<uint16_t>(st.st_mode);
        out->stx_ino = st.st_ino;
        out->stx_size = static_cast<uint64_t>(st.st_size);
        out->stx_blocks = static_cast<uint64_t>(st.st_blocks);
        out->stx_rdev_major = major(st.st_rdev);
        out->stx_rdev_minor = minor(st.st_rdev);
        out->stx_dev_major = kFileSystemMajor;
        out->stx_dev_minor = kFileSystemMinor;
        return 0;
      });
}

int faccessat(int dirfd, const char* path, int mode, int flags, const void* caller) {
  return on_path<int>(
      dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) == 0, caller,
      [&](int at, const char* p) { return real().faccessat(at, p, mode, flags); },
      [&](const Resolved& found) {
        const SystemNodeKind kind = found.node.kind;
        // The modes of attributes 0444, directories 0755, uverbs nodes 0666;
        // nothing here can be written but a device node.
        if ((mode & W_OK) && kind != SystemNodeKind::kCharDevice) return fail(EACCES);
        if ((mode & X_OK) && kind != SystemNodeKind::kDirectory) return fail(EACCES);
        return 0;
      });
}

ssize_t readlinkat(int dirfd, const char* path, char* buffer, size_t size, const void* caller) {
  return on_path<ssize_t>(
      dirfd, path, false, caller,
      [&](int at, const char* p) { return real().readlinkat(at, p, buffer, size); },
      [&](const Resolved& found) -> ssize_t {
        if (found.node.kind != SystemNodeKind::kSymlink) return fail(EINVAL);
        // readlink(2): no terminating NUL, truncated to the buffer.
        const size_t n = std::min(size, found.node.text.size());
        std::memcpy(buffer, found.node.text.data(), n);
        return static_cast<ssize_t>(n);
      });
}

char* realpath(const char* path, char* resolved, const void* caller) {
  if (const std::optional<std::string> target = served_path(AT_FDCWD, path, caller)) {
    const Resolved found = resolve(*target, true);
    if (found.error != 0) return errno = found.error, nullptr;
    if (found.node.kind == SystemNodeKind::kAbsent)
      return real().realpath(found.path.c_str(), resolved);
    if (found.path.size() >= PATH_MAX) return errno = ENAMETOOLONG, nullptr;
    if (resolved == nullptr) return strdup(found.path.c_str());
    std::memcpy(resolved, found.path.c_str(), found.path.size() + 1);
    return resolved;
  }
  return real().realpath(path, resolved);
}

ssize_t getxattr(const char* path, const char* name, void* value, size_t size, bool follow,
                 const void* caller) {
  return on_path<ssize_t>(
      AT_FDCWD, path, follow, caller,
      [&](int, const char* p) {
        return (follow ? real().getxattr : real().lgetxattr)(p, name, value, size);
      },
      // sysfs and devtmpfs nodes carry no extended attributes
      [](const Resolved&) -> ssize_t { return fail(ENODATA); });
}

ssize_t listxattr(const char* path, char* list, size_t size, bool follow, const void* caller) {
  return on_path<ssize_t>(
      AT_FDCWD, path, follow, caller,
      [&](int, const char* p) {
        return (follow ? real().listxattr : real().llistxattr)(p, list, size);
      },
      [](const Resolved&) -> ssize_t { return 0; });  // none
}

// ---- directories -------------------------------------------------------------

DIR* opendir(const char* path, const void* caller) {
  int error = 0;
  const std::optional<Resolved> dir = served_directory(AT_FDCWD, path, caller, &error);
  if (!dir) return real().opendir(path);
  if (error != 0) return errno = error, nullptr;
  if (dir->node.kind == SystemNodeKind::kAbsent) return real().opendir(dir->path.c_str());
  auto* served_dir = new ServedDir;
  served_dir->entries = listing(*dir);
  {
    std::lock_guard guard(dirs_lock);
    if (served_dirs == nullptr) served_dirs = new std::vector<ServedDir*>;
    served_dirs->push_back(served_dir);
    open_dirs.fetch_add(1, std::memory_order_release);
  }
  return reinterpret_cast<DIR*>(served_dir);
}

DIR* fdopendir(int fd) {
  return real().fdopendir(fd);
}

namespace {

// The next entry of a served directory into `out`: false at the end
// (readdir(3): errno untouched).
template <class Dirent>
bool next_entry(ServedDir& dir, Dirent* out) {
  if (dir.next >= dir.entries.size()) return false;
  fill_dirent(dir.entries[dir.next], dir.next, out);
  ++dir.next;
  return true;
}

// readdir and readdir64 (and their _r forms): one body for both layouts.
template <class Dirent>
Dirent* read_entry(DIR* dir, Dirent ServedDir::*slot, Dirent* (*real_read)(DIR*)) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real_read(dir);
  return next_entry(*served_dir, &(served_dir->*slot)) ? &(served_dir->*slot) : nullptr;
}

template <class Dirent>
int read_entry_r(DIR* dir, Dirent* entry, Dirent** result,
                 int (*real_read)(DIR*, Dirent*, Dirent**)) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real_read(dir, entry, result);
  *result = next_entry(*served_dir, entry) ? entry : nullptr;
  return 0;
}

// scandirat and scandirat64.
template <class Dirent>
int scan_at(int dirfd, const char* path, Dirent*** list, int (*filter)(const Dirent*),
            int (*compare)(const Dirent**, const Dirent**), const void* caller,
            int (*real_scan)(int, const char*, Dirent***, int (*)(const Dirent*),
                             int (*)(const Dirent**, const Dirent**))) {
  int error = 0;
  const std::optional<Resolved> dir = served_directory(dirfd, path, caller, &error);
  if (!dir) return real_scan(dirfd, path, list, filter, compare);
  if (error != 0) return fail(error);
  if (dir->node.kind == SystemNodeKind::kAbsent)
    return real_scan(AT_FDCWD, dir->path.c_str(), list, filter, compare);
  return scan(*dir, list, filter, compare);
}

}  // namespace

dirent* readdir(DIR* dir) {
  return read_entry(dir, &ServedDir::entry, real().readdir);
}

dirent64* readdir64(DIR* dir) {
  return read_entry(dir, &ServedDir::entry64, real().readdir64);
}

int readdir_r(DIR* dir, dirent* entry, dirent** result) {
  return read_entry_r(dir, entry, result, real().readdir_r);
}

int readdir64_r(DIR* dir, dirent64* entry, dirent64** result) {
  return read_entry_r(dir, entry, result, real().readdir64_r);
}

int closedir(DIR* dir) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real().closedir(dir);
  {
    std::lock_guard guard(dirs_lock);
    served_dirs->erase(std::find(served_dirs->begin(), served_dirs->end(), served_dir));
    open_dirs.fetch_sub(1, std::memory_order_release);
  }
  delete served_dir;
  return 0;
}

int dirfd(DIR* dir) {
  // A served directory has no descriptor (see open_node): dirfd(3)'s
  // answer for a stream without one.
  if (served(dir) != nullptr) return fail(ENOTSUP);
  return real().dirfd(dir);
}

void rewinddir(DIR* dir) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real().rewinddir(dir);
  served_dir->next = 0;
}

long telldir(DIR* dir) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real().telldir(dir);
  return static_cast<long>(served_dir->next);
}

void seekdir(DIR* dir, long position) {
  ServedDir* served_dir = served(dir);
  if (served_dir == nullptr) return real().seekdir(dir, position);
  served_dir->next = static_cast<size_t>(std::max(position, 0L));
}

int scandirat(int dirfd, const char* path, dirent*** list, int (*filter)(const dirent*),
              int (*compare)(const dirent**, const dirent**), const void* caller) {
  return scan_at(dirfd, path, list, filter, compare, caller, real().scandirat);
}

int scandirat64(int dirfd, const char* path, dirent64*** list, int (*filter)(const dirent64*),
                int (*compare)(const dirent64**, const dirent64**), const void* caller) {
  return scan_at(dirfd, path, list, filter, compare, caller, real().scandirat64);
}

// ---- the working directory ---------------------------------------------------

int chdir(const char* path, const void* caller) {
  int error = 0;
  const std::optional<Resolved> dir = served_directory(AT_FDCWD, path, caller, &error);
  if (dir) {
    if (error != 0) return fail(error);
    if (dir->node.kind != SystemNodeKind::kAbsent && !real_directory(dir->path)) {
      set_served_cwd(dir->path);
      return 0;
    }
    path = dir->path.c_str();  // a real directory after all: go there
    const int status = real().chdir(path);
    if (status == 0) set_served_cwd(std::nullopt);
    return status;
  }
  // A relative path from a served working directory leads out of it.
  if (path != nullptr && path[0] != '/' && has_served_cwd.load(std::memory_order_acquire)) {
    const std::string absolute = normalize(current_served_cwd() + "/" + path);
    const int status = real().chdir(absolute.c_str());
    if (status == 0) set_served_cwd(std::nullopt);
    return status;
  }
  const int status = real().chdir(path);
  if (status == 0) set_served_cwd(std::nullopt);
  return status;
}

int fchdir(int fd) {
  const int status = real().fchdir(fd);
  if (status == 0) set_served_cwd(std::nullopt);
  return status;
}

char* getcwd(char* buffer, size_t size) {
  if (!has_served_cwd.load(std::memory_order_acquire)) return real().getcwd(buffer, size);
  const std::string cwd = current_served_cwd();
  if (cwd.empty()) return real().getcwd(buffer, size);
  if (buffer == nullptr) {
    // glibc's extension: a buffer of the size asked, or of the path's.
    const size_t length = size == 0 ? cwd.size() + 1 : size;
    if (length < cwd.size() + 1) return errno = ERANGE, nullptr;
    buffer = static_cast<char*>(std::malloc(length));
    if (buffer == nullptr) return errno = ENOMEM, nullptr;
  } else if (size < cwd.size() + 1) {
    return errno = size == 0 ? EINVAL : ERANGE, nullptr;
  }
  std::memcpy(buffer, cwd.c_str(), cwd.size() + 1);
  return buffer;
}

char* get_current_dir_name() {
  // glibc's prefers $PWD when it names the working directory: kept.
  if (!has_served_cwd.load(std::memory_order_acquire)) return real().get_current_dir_name();
  return getcwd(nullptr, 0);
}

}  // namespace verbfault::interposer::system_files

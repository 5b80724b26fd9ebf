// Looks at the simulated devices as a program that never calls libibverbs
// does (UCX, libibumad, hwloc): through the C library's file calls, each
// entry point on its own. Prints one line per question; the test
// (test_system_files.cpp) checks them under LD_PRELOAD=libverbfault.so.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string read_file(const char* path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return std::string("error ") + std::strerror(errno);
  char buffer[256];
  const ssize_t n = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (n < 0) return std::string("error ") + std::strerror(errno);
  buffer[n] = '\0';
  if (n > 0 && buffer[n - 1] == '\n') buffer[n - 1] = '\0';
  return buffer;
}

int digits_only(const dirent* entry) {
  return entry->d_name[0] >= '0' && entry->d_name[0] <= '9';
}

}  // namespace

int main(int argc, char** argv) {
  const char* device = argc > 1 ? argv[1] : "vfsim0";
  const std::string dir = std::string("/sys/class/infiniband/") + device;

  // UCX's check of the uverbs node (uct_ib_device_is_accessible).
  struct stat st {};
  const std::string uverbs = "/dev/infiniband/uverbs0";
  if (stat(uverbs.c_str(), &st) == 0)
    std::printf("stat %s: %s %u:%u\n", uverbs.c_str(), S_ISCHR(st.st_mode) ? "chr" : "other",
                major(st.st_rdev), minor(st.st_rdev));
  else
    std::printf("stat %s: %s\n", uverbs.c_str(), std::strerror(errno));
  std::printf("access rw %s: %d\n", uverbs.c_str(), access(uverbs.c_str(), R_OK | W_OK));
  const int uverbs_fd = open(uverbs.c_str(), O_RDWR);
  std::printf("open %s: %d %s\n", uverbs.c_str(), uverbs_fd, std::strerror(errno));

  struct statx sx {};
  if (statx(AT_FDCWD, (dir + "/ports/1/state").c_str(), 0, STATX_BASIC_STATS, &sx) == 0)
    std::printf("statx state: %s mode %o\n", S_ISREG(sx.stx_mode) ? "file" : "other",
                sx.stx_mode & 0777);

  std::printf("node_guid: %s\n", read_file((dir + "/node_guid").c_str()).c_str());
  std::printf("state: %s\n", read_file((dir + "/ports/1/state").c_str()).c_str());
  std::printf("link_layer: %s\n", read_file((dir + "/ports/1/link_layer").c_str()).c_str());
  std::printf("numa_node: %s\n", read_file((dir + "/device/numa_node").c_str()).c_str());
  std::printf("gid type 0: %s\n", read_file((dir + "/ports/1/gid_attrs/types/0").c_str()).c_str());
  std::printf("gid type 9: %s\n", read_file((dir + "/ports/1/gid_attrs/types/9").c_str()).c_str());
  std::printf("abi_version: %s\n", read_file("/sys/class/infiniband_verbs/abi_version").c_str());
  std::printf("uverbs0 ibdev: %s\n",
              read_file("/sys/class/infiniband_verbs/uverbs0/ibdev").c_str());

  const int writing = open((dir + "/node_desc").c_str(), O_WRONLY);
  std::printf("open for writing: %d %s\n", writing, std::strerror(errno));
  const int missing = open((dir + "/ports/2/state").c_str(), O_RDONLY);
  std::printf("open missing: %d %s\n", missing, std::strerror(errno));

  if (FILE* f = std::fopen((dir + "/fw_ver").c_str(), "r")) {
    char line[64] = "";
    if (std::fgets(line, sizeof line, f) != nullptr) line[std::strcspn(line, "\n")] = '\0';
    std::printf("fopen fw_ver: %s\n", line);
    std::fclose(f);
  }

  char link[PATH_MAX] = "";
  const ssize_t n = readlink(dir.c_str(), link, sizeof link - 1);
  if (n >= 0) link[n] = '\0';
  std::printf("readlink: %s\n", n >= 0 ? link : std::strerror(errno));
  char* resolved = realpath((dir + "/ports/1/../1/gids").c_str(), nullptr);
  std::printf("realpath: %s\n", resolved != nullptr ? resolved : std::strerror(errno));
  std::free(resolved);

  if (DIR* d = opendir("/sys/class/infiniband")) {
    std::printf("opendir:");
    while (dirent* entry = readdir(d)) std::printf(" %s(%d)", entry->d_name, entry->d_type);
    std::printf("\n");
    closedir(d);
  } else {
    std::printf("opendir: %s\n", std::strerror(errno));
  }

  dirent** names = nullptr;
  const int count = scandir((dir + "/ports/1/pkeys").c_str(), &names, digits_only, alphasort);
  std::printf("scandir pkeys: %d first %s\n", count, count > 0 ? names[0]->d_name : "-");
  for (int i = 0; i < count; ++i) std::free(names[i]);
  std::free(names);

  if (chdir((dir + "/ports").c_str()) == 0) {
    char cwd[PATH_MAX] = "";
    std::printf("getcwd: %s\n", getcwd(cwd, sizeof cwd) != nullptr ? cwd : std::strerror(errno));
    std::printf("relative state: %s\n", read_file("1/state").c_str());
    if (chdir("/") == 0 && getcwd(cwd, sizeof cwd) != nullptr) std::printf("back: %s\n", cwd);
  } else {
    std::printf("chdir: %s\n", std::strerror(errno));
  }

  // librdmacm's connection manager node (open_cdev: open O_RDWR, then
  // fstat must say a character device) and its ABI version.
  const std::string cm = "/dev/infiniband/rdma_cm";
  if (stat(cm.c_str(), &st) == 0)
    std::printf("stat %s: %s %u:%u\n", cm.c_str(), S_ISCHR(st.st_mode) ? "chr" : "other",
                major(st.st_rdev), minor(st.st_rdev));
  else
    std::printf("stat %s: %s\n", cm.c_str(), std::strerror(errno));
  const int cm_fd = open(cm.c_str(), O_RDWR | O_CLOEXEC);
  std::printf("open %s: %s\n", cm.c_str(), cm_fd >= 0 ? "ok" : std::strerror(errno));
  if (cm_fd >= 0) {
    struct stat opened {};
    if (fstat(cm_fd, &opened) == 0)
      std::printf("fstat rdma_cm: %s %u:%u\n", S_ISCHR(opened.st_mode) ? "chr" : "other",
                  major(opened.st_rdev), minor(opened.st_rdev));
    char byte;
    const ssize_t got = read(cm_fd, &byte, 1);
    std::printf("read rdma_cm: %zd %s\n", got, std::strerror(errno));
    std::printf("close rdma_cm: %d\n", close(cm_fd));
  }
  std::printf("rdma_cm abi_version: %s\n",
              read_file("/sys/class/misc/rdma_cm/abi_version").c_str());

  // A path nobody serves stays the C library's.
  std::printf("other path: %d\n", access("/sys/class/net-not-there", F_OK));
  return 0;
}

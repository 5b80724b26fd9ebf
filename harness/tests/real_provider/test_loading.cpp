// The provider double is the libibverbs.so.1 of this process: it is the
// object the loader mapped for libverbfault.so's DT_NEEDED, the front door's
// dlvsym(RTLD_NEXT) finds every symbol it needs there, and its devices are
// the only ones listed (VERBFAULT_SIM_DEVICES=0 for the front door).
#include "double_fixture.h"
#include "libc_table.h"
#include "verb_table.h"
#include "verbfault/fabric.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace verbfault::testing {
namespace {

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

const std::string kDoublePath = real_path(PROVIDER_DOUBLE_DIR "/libibverbs.so.1");

// The libibverbs.so.1 already loaded in the process (RTLD_NOLOAD).
void* loaded_libibverbs() {
  return dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
}

// The file a symbol address lies in.
std::string file_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return real_path(info.dli_fname);
}

TEST(Loading, TheDoubleIsTheLibibverbsTheLoaderMapped) {
  void* handle = loaded_libibverbs();
  ASSERT_NE(handle, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
  EXPECT_EQ(real_path(map->l_name), kDoublePath);
  // No other libibverbs is mapped: the system's was never loaded.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libibverbs") == std::string::npos) continue;
    const std::string file = line.substr(line.find('/'));
    EXPECT_EQ(real_path(file), kDoublePath) << line;
  }
  dlclose(handle);
}

TEST(Loading, RtldNextFromTheFrontDoorReachesTheDouble) {
  // What VERBFAULT_REAL does inside libverbfault.so: the next definition
  // after the front door. From the test binary, RTLD_DEFAULT finds the front
  // door's export first; the one behind it is the double's.
  void* front = dlvsym(RTLD_DEFAULT, "ibv_get_device_list", "IBVERBS_1.1");
  ASSERT_NE(front, nullptr);
  EXPECT_NE(file_of(front).find("libverbfault.so"), std::string::npos) << file_of(front);
  void* handle = loaded_libibverbs();
  ASSERT_NE(handle, nullptr);
  void* behind = dlvsym(handle, "ibv_get_device_list", "IBVERBS_1.1");
  EXPECT_EQ(file_of(behind), kDoublePath);
  dlclose(handle);
}

// (name, version) of every symbol of the IBVERBS_* nodes of a version
// script (VERBFAULT_0.1 is the front door's own API).
std::vector<std::pair<std::string, std::string>> libibverbs_symbols(std::string script) {
  for (size_t open; (open = script.find("/*")) != std::string::npos;) {
    const size_t close = script.find("*/", open + 2);
    script.erase(open, close == std::string::npos ? std::string::npos : close + 2 - open);
  }
  std::vector<std::pair<std::string, std::string>> symbols;
  const char* blank = " \t\n";
  for (size_t at = 0; (at = script.find("IBVERBS_", at)) != std::string::npos;) {
    const size_t name_end = script.find_first_of(" \t\n{};", at);
    const std::string version = script.substr(at, name_end - at);
    const size_t brace = script.find_first_not_of(blank, name_end);
    at = name_end;
    // "} IBVERBS_1.0;" names a node's parent, not a node.
    if (brace == std::string::npos || script[brace] != '{') continue;
    const size_t close = script.find('}', brace);
    std::istringstream body(script.substr(brace + 1, close - brace - 1));
    for (std::string statement; std::getline(body, statement, ';');) {
      // "global: name", "name", "local: *"
      if (const size_t label = statement.rfind(':'); label != std::string::npos)
        statement.erase(0, label + 1);
      const size_t first = statement.find_first_not_of(blank);
      if (first == std::string::npos) continue;
      statement = statement.substr(first, statement.find_last_not_of(blank) - first + 1);
      if (statement != "*") symbols.emplace_back(statement, version);
    }
    at = close;
  }
  return symbols;
}

TEST(Loading, TheDoubleDefinesEveryLibibverbsSymbolTheFrontDoorExports) {
  // What the front door's VERBFAULT_REAL(name, version) calls look up.
  std::ifstream file(FRONTDOOR_MAP);
  ASSERT_TRUE(file) << FRONTDOOR_MAP;
  std::stringstream text;
  text << file.rdbuf();
  const auto symbols = libibverbs_symbols(text.str());
  EXPECT_GT(symbols.size(), 50u);
  void* handle = loaded_libibverbs();
  ASSERT_NE(handle, nullptr);
  for (const auto& [symbol, version] : symbols) {
    void* address = dlvsym(handle, symbol.c_str(), version.c_str());
    EXPECT_EQ(file_of(address), kDoublePath) << symbol << "@" << version;
  }
  dlclose(handle);
}

// The verb table (record/verb_table.h) is the export list: each row's
// symbol is defined by libverbfault.so at the row's version, and found
// there before the double's, as a program linked against libibverbs
// binds it.
TEST(Loading, TheFrontDoorExportsEveryVerbOfTheTableAtItsVersion) {
  struct Row {
    const char* symbol;
    const char* version;
  };
#define VERBFAULT_ROW(ret, name, symbol, version, params, args, front, route, by) \
  Row{#symbol, version},
  const Row rows[] = {VERBFAULT_VERBS(VERBFAULT_ROW)};
#undef VERBFAULT_ROW
  EXPECT_GT(std::size(rows), 50u);
  void* front_door = dlopen("libverbfault.so.0", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(front_door, nullptr) << dlerror();
  void* double_library = loaded_libibverbs();
  ASSERT_NE(double_library, nullptr);
  const std::string front_door_path = file_of(dlsym(front_door, "ibv_open_device"));
  EXPECT_NE(front_door_path.find("libverbfault.so"), std::string::npos) << front_door_path;
  for (const Row& row : rows) {
    void* exported = dlvsym(front_door, row.symbol, row.version);
    EXPECT_EQ(file_of(exported), front_door_path) << row.symbol << "@" << row.version;
    EXPECT_EQ(file_of(dlvsym(RTLD_DEFAULT, row.symbol, row.version)), front_door_path)
        << row.symbol << "@" << row.version;
    EXPECT_EQ(file_of(dlvsym(double_library, row.symbol, row.version)), kDoublePath)
        << row.symbol << "@" << row.version;
  }
  dlclose(double_library);
  dlclose(front_door);
}

// The C library's table (frontdoor/libc_table.h) is that export list: each
// row's function is defined by libverbfault.so at the row's version (and
// at its older one, if it has one), and found there before the C
// library's, as a program built against glibc binds it.
TEST(Loading, TheFrontDoorExportsEveryLibcFunctionOfTheTableAtItsVersions) {
  struct Row {
    const char* name;
    const char* version;
    const char* older;
  };
#define VERBFAULT_ROW(ret, name, version, older, kind, target, params, args) \
  Row{#name, version, VERBFAULT_LIBC_OLDER_VERSION(older)},
  const Row rows[] = {VERBFAULT_LIBC_CALLS(VERBFAULT_ROW)};
#undef VERBFAULT_ROW
  EXPECT_GT(std::size(rows), 100u);
  void* front_door = dlopen("libverbfault.so.0", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(front_door, nullptr) << dlerror();
  const std::string front_door_path = file_of(dlsym(front_door, "ibv_open_device"));
  std::size_t older_rows = 0;
  for (const Row& row : rows) {
    EXPECT_EQ(file_of(dlvsym(front_door, row.name, row.version)), front_door_path)
        << row.name << "@" << row.version;
    EXPECT_EQ(file_of(dlvsym(RTLD_DEFAULT, row.name, row.version)), front_door_path)
        << row.name << "@" << row.version;
    if (*row.older == '\0') continue;
    ++older_rows;
    EXPECT_EQ(file_of(dlvsym(front_door, row.name, row.older)), front_door_path)
        << row.name << "@" << row.older;
  }
  EXPECT_GT(older_rows, 20u);  // pthread_create@GLIBC_2.2.5, the clock* variants' GLIBC_2.30
  dlclose(front_door);
}

TEST(Loading, OnlyTheDoublesDevicesAreListed) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  // VERBFAULT_SIM_DEVICES=0: no vfsim*; VERBFAULT_DOUBLE_DEVICES (default
  // 1) vfreal*.
  const char* configured = std::getenv("VERBFAULT_DOUBLE_DEVICES");
  const int count = configured != nullptr ? std::atoi(configured) : 1;
  std::vector<std::string> expected;
  for (int i = 0; i < count; ++i) expected.push_back("vfreal" + std::to_string(i));
  EXPECT_EQ(names, expected);
  for (const std::string& device : names) EXPECT_NE(device.rfind("vfsim", 0), 0u) << device;
}

TEST(Loading, TheDoublesNamesAndPathsAreRenamedThroughout) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_GE(n, 1);
  EXPECT_STREQ(list[0]->name, "vfreal0");
  EXPECT_STREQ(list[0]->dev_name, "uverbs-vfreal0");
  EXPECT_STREQ(list[0]->ibdev_path, "/sys/class/infiniband/vfreal0");
  EXPECT_EQ(std::string(list[0]->dev_path).find("vfsim"), std::string::npos);
  ibv_free_device_list(list);
}

class Provider : public DoublePair {};

TEST_F(Provider, ContextsOfTheDoubleTakeTheFrontDoorsRealPath) {
  begin("");
  EXPECT_EQ(records_with("\"call\":\"open_device\",\"device\":\"vfreal0\",\"provider\":\"real\""),
            1u);
  // The front door's own simulator does not own the context.
  EXPECT_EQ(fabric::set_port_state(ctx_, 1, IBV_PORT_DOWN), ENODEV);
  // The interposer wrapped the context's async fd in an epoll fd.
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(ctx_->async_fd);
  ASSERT_GT(readlink(link.c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "anon_inode:[eventpoll]");
}

}  // namespace
}  // namespace verbfault::testing

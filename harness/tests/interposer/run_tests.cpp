// A Run is an object, not the process: a test makes its own from a Config
// and calls the interposer's functions with it (interposer/calls.h), and
// each run names, traces and injects for the calls made with it alone.
// The process's own run (process_run(), made from the environment) is
// inactive here: this binary sets no VERBFAULT_* variable and links the
// interposer without the front door, so nothing else calls in.
#include "calls.h"
#include "run.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace verbfault::interposer {
namespace {

Config active_config(std::uint64_t seed, std::string_view rules = "") {
  Config config;
  config.active = true;
  config.seed = seed;
  config.seed_given = true;
  if (!rules.empty()) config.plan = parse_rules(rules);
  return config;
}

// The first simulated device (vfsim0), opened with `run`.
ibv_context* open_simulated(Run& run) {
  int count = 0;
  ibv_device** list = calls::get_device_list(run, &count);
  if (list == nullptr) return nullptr;
  ibv_context* context = nullptr;
  for (int i = 0; i < count && context == nullptr; ++i)
    if (std::string(calls::get_device_name(run, list[i])).rfind("vfsim", 0) == 0)
      context = calls::open_device(run, list[i], nullptr);
  calls::free_device_list(run, list);
  return context;
}

std::vector<std::string> records(Run& run) {
  std::lock_guard lock(run.mutex);
  run.trace.flush_idle();
  return run.trace.captured();
}

bool any_record_has(const std::vector<std::string>& lines, std::string_view text) {
  for (const std::string& line : lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

TEST(RunObject, ProcessRunIsInactiveWithoutTheEnvironment) {
  EXPECT_FALSE(process_run().active());
  EXPECT_FALSE(g_active);
}

TEST(RunObject, EachRunNamesAndTracesOnlyItsOwnObjects) {
  interposer::Run first(active_config(1));
  interposer::Run second(active_config(2));
  {
    std::lock_guard lock(first.mutex);
    first.trace.start_capture();
  }
  {
    std::lock_guard lock(second.mutex);
    second.trace.start_capture();
  }
  ibv_context* first_context = open_simulated(first);
  ibv_context* second_context = open_simulated(second);
  ASSERT_NE(first_context, nullptr);
  ASSERT_NE(second_context, nullptr);
  ibv_pd* first_pd = calls::alloc_pd(first, first_context, nullptr);
  ibv_pd* other_pd = calls::alloc_pd(first, first_context, nullptr);
  ibv_pd* second_pd = calls::alloc_pd(second, second_context, nullptr);
  ASSERT_NE(first_pd, nullptr);
  ASSERT_NE(other_pd, nullptr);
  ASSERT_NE(second_pd, nullptr);
  {
    std::lock_guard lock(first.mutex);
    ASSERT_NE(first.registry.find(first_pd), nullptr);
    EXPECT_EQ(first.registry.find(first_pd)->name(), "pd#0");
    EXPECT_EQ(first.registry.find(other_pd)->name(), "pd#1");
    EXPECT_EQ(first.registry.find(second_pd), nullptr);  // the other run's
  }
  {
    std::lock_guard lock(second.mutex);
    ASSERT_NE(second.registry.find(second_pd), nullptr);
    EXPECT_EQ(second.registry.find(second_pd)->name(), "pd#0");
    EXPECT_EQ(second.registry.find(first_pd), nullptr);
  }
  const auto first_records = records(first);
  const auto second_records = records(second);
  EXPECT_TRUE(any_record_has(first_records, "\"obj\":\"pd#1\""));
  EXPECT_FALSE(any_record_has(second_records, "\"obj\":\"pd#1\""));
  EXPECT_TRUE(any_record_has(second_records, "\"obj\":\"pd#0\""));
  // The process's run saw none of it.
  {
    std::lock_guard lock(process_run().mutex);
    EXPECT_EQ(process_run().registry.find(first_pd), nullptr);
  }
  EXPECT_EQ(calls::dealloc_pd(first, other_pd), 0);
  EXPECT_EQ(calls::dealloc_pd(first, first_pd), 0);
  EXPECT_EQ(calls::dealloc_pd(second, second_pd), 0);
  EXPECT_EQ(calls::close_device(first, first_context), 0);
  EXPECT_EQ(calls::close_device(second, second_context), 0);
}

TEST(RunObject, ARunsPlanFailsOnlyTheCallsMadeWithIt) {
  interposer::Run failing(active_config(3, "verb_failure(alloc_pd,ENOMEM) p=1"));
  interposer::Run plain(active_config(3));
  ibv_context* failing_context = open_simulated(failing);
  ibv_context* plain_context = open_simulated(plain);
  ASSERT_NE(failing_context, nullptr);
  ASSERT_NE(plain_context, nullptr);
  errno = 0;
  EXPECT_EQ(calls::alloc_pd(failing, failing_context, nullptr), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_pd* pd = calls::alloc_pd(plain, plain_context, nullptr);
  ASSERT_NE(pd, nullptr);
  {
    std::lock_guard lock(failing.mutex);
    ASSERT_FALSE(failing.engine.fired().empty());
    EXPECT_EQ(failing.engine.fired()[0], 1u);
  }
  EXPECT_EQ(calls::dealloc_pd(plain, pd), 0);
  EXPECT_EQ(calls::close_device(failing, failing_context), 0);
  EXPECT_EQ(calls::close_device(plain, plain_context), 0);
}

}  // namespace
}  // namespace verbfault::interposer

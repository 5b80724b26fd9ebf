// Golden files for the writers' tests: the text a writer produces for the
// sample report against reports/tests/golden/NAME. With
// VERBFAULT_UPDATE_GOLDENS=1 the test writes the file instead (and skips):
// review its diff, then commit it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace verbfault::reports::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path(VERBFAULT_REPORTS_GOLDEN_DIR) / name;
}

// Says where the text differs from the golden file, not two pages of text.
#define EXPECT_MATCHES_GOLDEN(text, name)                                                   \
  do {                                                                                      \
    const std::string golden_text_ = (text);                                                \
    const std::filesystem::path golden_ = ::verbfault::reports::testing::golden_path(name); \
    if (const char* update_ = std::getenv("VERBFAULT_UPDATE_GOLDENS");                      \
        update_ != nullptr && *update_ == '1') {                                            \
      std::ofstream(golden_, std::ios::binary) << golden_text_;                             \
      GTEST_SKIP() << "wrote " << golden_;                                                  \
    }                                                                                       \
    ASSERT_TRUE(std::filesystem::exists(golden_)) << golden_ << " is missing";              \
    ::verbfault::reports::testing::expect_same_lines(                                       \
        golden_text_, ::verbfault::reports::testing::read_file(golden_), golden_);          \
  } while (false)

inline void expect_same_lines(const std::string& now, const std::string& golden,
                              const std::filesystem::path& path) {
  if (now == golden) return;
  std::istringstream got(now), want(golden);
  std::string got_line, want_line;
  for (int line = 1;; ++line) {
    const bool more_got = static_cast<bool>(std::getline(got, got_line));
    const bool more_want = static_cast<bool>(std::getline(want, want_line));
    if (!more_got && !more_want) break;
    if (got_line != want_line || more_got != more_want) {
      ADD_FAILURE() << path << ":" << line
                    << " differs (regenerate with VERBFAULT_UPDATE_GOLDENS=1 if the change is "
                       "intended)\n  golden: "
                    << want_line.substr(0, 300) << "\n  now:    " << got_line.substr(0, 300);
      return;
    }
  }
  ADD_FAILURE() << path << ": differs in its line endings";
}

}  // namespace verbfault::reports::testing

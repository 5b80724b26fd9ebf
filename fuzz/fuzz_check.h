// What a fuzzer does when an input breaks a contract that is not a crash
// (a round trip that changes the plan, an errno the man page does not
// allow): say which, then abort, so that libFuzzer keeps the input as a
// finding and the standalone driver's ctest fails.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace verbfault::fuzz {

[[noreturn]] inline void fail(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "verbfault fuzz: contract broken: %.*s%s%.*s\n",
               static_cast<int>(what.size()), what.data(), detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void require(bool holds, std::string_view what, std::string_view detail = {}) {
  if (!holds) fail(what, detail);
}

// A PlanError's what() is one line "<source>...: ...: expected ..."
// (verbfault/plan.h): not empty, no line break inside it.
inline void require_one_line(std::string_view message, std::string_view what) {
  require(!message.empty(), what, "empty message");
  require(message.find('\n') == std::string_view::npos, what, message);
}

}  // namespace verbfault::fuzz

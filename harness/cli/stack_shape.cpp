#include "stack_shape.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace verbfault::cli {
namespace {

constexpr const char* kPrefix = "VERBFAULT_";
constexpr const char* kPadPrefix = "VERBFAULT_PAD_";
// The harness's variables and their pads: this many, of this many bytes
// (their "NAME=value\0" strings), or of the next multiple of it when the
// settings are larger (a long plan in VERBFAULT_FAULTS): a few KiB of an
// 8 MiB stack.
constexpr std::size_t kSlots = 32;
constexpr std::size_t kBytes = 16384;

bool starts_with(const char* text, const char* prefix) {
  return std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

void pad_environment_to_fixed_shape() {
  // Pads inherited from a run that started this one are not counted twice.
  std::vector<std::string> inherited_pads;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    if (starts_with(*entry, kPadPrefix)) {
      const char* equals = std::strchr(*entry, '=');
      if (equals != nullptr)
        inherited_pads.emplace_back(*entry, static_cast<std::size_t>(equals - *entry));
    }
  for (const std::string& name : inherited_pads) unsetenv(name.c_str());
  std::size_t count = 0;
  std::size_t bytes = 0;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    if (starts_with(*entry, kPrefix)) {
      ++count;
      bytes += std::strlen(*entry) + 1;
    }
  if (count >= kSlots) return;  // more than the harness ever sets: left as is
  const std::size_t pads = kSlots - count;
  // Each pad's own "VERBFAULT_PAD_<i>=" and its terminator.
  std::size_t pad_names = 0;
  for (std::size_t i = 0; i < pads; ++i)
    pad_names += std::strlen(kPadPrefix) + std::to_string(i).size() + 2;
  const std::size_t used = bytes + pad_names;
  const std::size_t target = (used + kBytes - 1) / kBytes * kBytes;
  for (std::size_t i = 0; i < pads; ++i) {
    const std::string name = kPadPrefix + std::to_string(i);
    const std::string value = i + 1 == pads ? std::string(target - used, 'x') : std::string();
    setenv(name.c_str(), value.c_str(), 1);
  }
}

}  // namespace verbfault::cli

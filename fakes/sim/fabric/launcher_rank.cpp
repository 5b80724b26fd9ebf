#include "verbfault/sim/launcher_rank.h"

#include <cerrno>
#include <cstdlib>

namespace verbfault::sim {

namespace {

// The variable's value as a number; nullopt when unset. A value that is
// not a decimal number below 2^31 sets `error`.
std::optional<std::uint32_t> number(const char* name, std::string& error) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(value, &end, 10);
  if (*value < '0' || *value > '9' || *end != '\0' || errno != 0 || n > 0x7fffffffUL) {
    if (error.empty())
      error = std::string(name) + "='" + value +
              "' is invalid: expected a rank number, as the launcher sets it";
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(n);
}

}  // namespace

std::optional<LauncherRank> launcher_rank(std::string& error) {
  // The rank variable and where the job's size is, launcher by launcher.
  struct Launcher {
    const char* rank;
    const char* sizes[2];
  };
  static constexpr Launcher kLaunchers[] = {
      {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE", nullptr}},
      {"PMIX_RANK", {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}},
      {"PMI_RANK", {"PMI_SIZE", nullptr}},
      {"SLURM_PROCID", {"SLURM_NTASKS", nullptr}},
  };
  for (const Launcher& launcher : kLaunchers) {
    if (std::getenv(launcher.rank) == nullptr) continue;
    const std::optional<std::uint32_t> rank = number(launcher.rank, error);
    if (!rank) return std::nullopt;
    LauncherRank found{*rank, 0, launcher.rank};
    for (const char* size_variable : launcher.sizes) {
      if (size_variable == nullptr) continue;
      if (const std::optional<std::uint32_t> size = number(size_variable, error)) {
        found.size = *size;
        break;
      }
      if (!error.empty()) return std::nullopt;
    }
    return found;
  }
  return std::nullopt;
}

}  // namespace verbfault::sim

#include "launch.h"

#include "verbfault/sim/launcher_rank.h"

namespace verbfault::provider {

std::optional<LaunchedRank> launcher_rank(std::string& error) {
  const std::optional<sim::LauncherRank> rank = sim::launcher_rank(error);
  if (!rank) return std::nullopt;
  return LaunchedRank{rank->rank, rank->size, rank->variable};
}

}  // namespace verbfault::provider

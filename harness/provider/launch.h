// The process's place in a parallel launcher's job (mpirun, srun, PMI or
// PMIx), as the simulated device reads it (sim/fabric/launcher_rank.h): the
// interposer gives a rank its own process index and trace, as the device
// gives it its own member index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace verbfault::provider {

struct LaunchedRank {
  std::uint32_t rank = 0;
  std::uint32_t size = 0;  // 0: the launcher did not say
  std::string variable;    // where the rank came from ("OMPI_COMM_WORLD_RANK")
};

// nullopt when the process is no rank of a launcher's job; a malformed
// launcher variable: nullopt and `error` says which, in one line.
std::optional<LaunchedRank> launcher_rank(std::string& error);

}  // namespace verbfault::provider

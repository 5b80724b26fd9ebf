// A process started by a parallel launcher (Open MPI's mpirun, Slurm's
// srun, a PMI or PMIx server) as one rank of a job: its rank and the job's
// size, from the variables the launcher sets in each rank's environment.
// A rank is a process of the local fabric of its own (its member index,
// and under `verbfault run` its own trace), so that the ranks of one
// `verbfault run -- mpirun -np N ...` are told apart as the commands of a
// `:::` group are (docs/local-fabric.md, "The local fabric").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace verbfault::sim {

struct LauncherRank {
  std::uint32_t rank = 0;
  std::uint32_t size = 0;        // 0: the launcher did not say
  const char* variable = "";     // the variable the rank came from
};

// The first of OMPI_COMM_WORLD_RANK (with OMPI_COMM_WORLD_SIZE), PMIX_RANK
// (with OMPI_COMM_WORLD_SIZE or PMI_SIZE), PMI_RANK (PMI_SIZE),
// SLURM_PROCID (SLURM_NTASKS) that is set; nullopt when none is. A value
// that is not a decimal number: `error` says which, in one line
// ("PMI_RANK='x' is invalid: ..."), and nullopt.
std::optional<LauncherRank> launcher_rank(std::string& error);

}  // namespace verbfault::sim

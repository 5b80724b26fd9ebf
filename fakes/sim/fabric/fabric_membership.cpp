#include "fabric_membership.h"

#include "verbfault/sim/launcher_rank.h"

#include <unistd.h>


#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace verbfault::sim {

namespace {

// VERBFAULT_PROC: a member index 0..kMaxMembers-1, or unset.
bool requested_member(std::optional<uint32_t>& out, std::string& error) {
  const char* value = std::getenv("VERBFAULT_PROC");
  if (value == nullptr) return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(value, &end, 10);
  if (*value < '0' || *value > '9' || *end != '\0' || errno != 0 || n >= wire::kMaxMembers) {
    error = "verbfault: VERBFAULT_PROC='" + std::string(value) +
            "' is invalid: expected a member index 0.." + std::to_string(wire::kMaxMembers - 1);
    return false;
  }
  out = static_cast<uint32_t>(n);
  return true;
}

// VERBFAULT_FABRIC_SIZE: how many members the run has (`verbfault run`
// sets it), 1..kMaxMembers, or unset.
bool expected_members(uint32_t& out, std::string& error) {
  const char* value = std::getenv("VERBFAULT_FABRIC_SIZE");
  if (value == nullptr) return true;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(value, &end, 10);
  if (*value < '0' || *value > '9' || *end != '\0' || errno != 0 || n == 0 ||
      n > wire::kMaxMembers) {
    error = "verbfault: VERBFAULT_FABRIC_SIZE='" + std::string(value) +
            "' is invalid: expected a number of processes 1.." + std::to_string(wire::kMaxMembers);
    return false;
  }
  out = static_cast<uint32_t>(n);
  return true;
}

// A rank of a parallel launcher's job (launcher_rank.h) is member
// VERBFAULT_PROC + 1 + rank (0 for VERBFAULT_PROC when unset): the
// launcher is member VERBFAULT_PROC when it joins (mpirun does: hwloc reads
// the served /sys/class/infiniband), and its ranks follow it, as the
// commands of a `verbfault run ... ::: ...` group follow each other. A
// VERBFAULT_FABRIC_SIZE (the run's commands, the launcher's one among
// them) grows by the job's ranks.
bool apply_launcher_rank(std::optional<uint32_t>& requested, uint32_t& expected,
                         std::string& error) {
  const std::optional<LauncherRank> rank = launcher_rank(error);
  if (!error.empty()) {
    error = "verbfault: " + error;
    return false;
  }
  if (!rank) return true;
  const uint64_t member = uint64_t{requested.value_or(0)} + 1 + rank->rank;
  if (member >= wire::kMaxMembers) {
    error = std::string("verbfault: ") + rank->variable + "=" + std::to_string(rank->rank) +
            " makes member index " + std::to_string(member) +
            ": expected at most " + std::to_string(wire::kMaxMembers) + " processes on a fabric";
    return false;
  }
  requested = static_cast<uint32_t>(member);
  if (rank->size != 0 && expected != 0)
    expected = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{expected} + rank->size,
                                                        wire::kMaxMembers));
  return true;
}

}  // namespace

FabricMembership FabricMembership::from_environment() {
  FabricMembership m;
  std::optional<uint32_t> requested;
  if (!requested_member(requested, m.error) || !expected_members(m.expected, m.error) ||
      !apply_launcher_rank(requested, m.expected, m.error))
    return m;
  const char* name = std::getenv("VERBFAULT_FABRIC");
  if (name != nullptr && std::string_view(name) == "private") {
    m.member = requested.value_or(0);
    return m;
  }
  const std::string fabric =
      name != nullptr ? std::string(name) : "user-" + std::to_string(getuid());
  m.endpoint = wire::Endpoint::join(fabric, requested, m.error);
  if (m.endpoint != nullptr) m.member = m.endpoint->member();
  return m;
}

FabricMembership FabricMembership::for_forked_child() {
  FabricMembership m;
  if (!expected_members(m.expected, m.error)) return m;
  const char* name = std::getenv("VERBFAULT_FABRIC");
  if (name != nullptr && std::string_view(name) == "private") return m;
  const std::string fabric =
      name != nullptr ? std::string(name) : "user-" + std::to_string(getuid());
  m.endpoint = wire::Endpoint::join(fabric, std::nullopt, m.error);
  if (m.endpoint != nullptr) m.member = m.endpoint->member();
  return m;
}

}  // namespace verbfault::sim

#include "fabric_membership.h"

#include <unistd.h>

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

}  // namespace

FabricMembership FabricMembership::from_environment() {
  FabricMembership m;
  std::optional<uint32_t> requested;
  if (!requested_member(requested, m.error) || !expected_members(m.expected, m.error)) return m;
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

}  // namespace verbfault::sim

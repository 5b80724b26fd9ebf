#include "fabric_name.h"

#include <cstddef>
#include <cstring>

namespace verbfault::sim::wire {

std::string check_fabric_name(std::string_view fabric) {
  bool valid = !fabric.empty() && fabric.size() <= kMaxFabricNameLength;
  for (const char c : fabric) {
    valid = valid && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-');
  }
  if (valid) return {};
  return "verbfault: fabric name '" + std::string(fabric) + "' is invalid: expected 1 to " +
         std::to_string(kMaxFabricNameLength) + " characters from [A-Za-z0-9._-]";
}

MemberAddress member_address(std::string_view fabric, uint32_t index) {
  MemberAddress result{};
  result.address.sun_family = AF_UNIX;
  // sun_path[0] stays '\0': the abstract namespace. 108 bytes hold the
  // longest name: 1 + 10 ("verbfault/") + 64 + 1 + 2 digits.
  const std::string name = "verbfault/" + std::string(fabric) + "/" + std::to_string(index);
  static_assert(1 + 10 + kMaxFabricNameLength + 1 + 10 <= sizeof(result.address.sun_path));
  std::memcpy(result.address.sun_path + 1, name.data(), name.size());
  result.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return result;
}

}  // namespace verbfault::sim::wire

// The names a fabric gives its parts: the members' abstract socket
// addresses and (fabric_files.h) the status table's file.
#pragma once

#include "fabric_files.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace verbfault::sim::wire {

inline constexpr std::size_t kMaxFabricNameLength = 64;

// Empty when `fabric` is a valid name (1 to kMaxFabricNameLength characters
// from [A-Za-z0-9._-]: it goes into a socket address and a file name),
// else one line naming it and what is expected.
std::string check_fabric_name(std::string_view fabric);

// "\0verbfault/<fabric>/<index>": an abstract address (unix(7)), so no
// file is left behind and the kernel frees the name when its last socket
// closes. `length` is what bind(2)/connect(2) take: the name is not
// NUL-terminated in the abstract namespace, every byte counts.
struct MemberAddress {
  sockaddr_un address;
  socklen_t length;
};
MemberAddress member_address(std::string_view fabric, uint32_t index);

}  // namespace verbfault::sim::wire

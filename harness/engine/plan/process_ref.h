// The `proc=` selector: which process of a run a rule is for. A value of
// digits (or 0x hex) is a member index (VERBFAULT_PROC), anything else the
// basename of the process's argv[0], the name it was started by: a symlink
// or a Debian alternative matches by the name typed, not by its target
// (/proc/self/exe would say the target).
#pragma once

#include "verbfault/plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace verbfault::engine {

// Who this process is, read once at startup (interposer/config.h).
struct ProcessIdentity {
  std::optional<std::uint32_t> index;  // VERBFAULT_PROC; unset: unknown, only names match
  std::string name;                    // basename of argv[0]
};

// A process as a plan names it; nothing when `text` is neither an index
// 0..kMaxProcessIndex nor a name of letters, digits, '_', '.', '+', '-'
// (not starting with '+' or '-': YAML and the one-line form read it back).
std::optional<ProcessRef> parse_process(std::string_view text);
// Whether `ref` is one parse_process gives (validate() checks rules made
// by hand).
bool valid_process(const ProcessRef& ref);
// What a plan expects of a `proc` value, for error messages.
inline constexpr const char* kProcessExpected =
    "a process index 0..63 (VERBFAULT_PROC) or an executable name (letters, digits, '_', '.', "
    "'+', '-')";

// Whether `rule` is for `self`: it has no proc selector, or the selector
// names this process's index or name.
bool for_process(const Rule& rule, const ProcessIdentity& self);

}  // namespace verbfault::engine

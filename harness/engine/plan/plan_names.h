// Name tables of the plan formats: enum <-> the lower-case names plans use.
#pragma once

#include "verbfault/plan.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::engine {

template <class Enum>
struct Named {
  Enum value;
  std::string_view name;
};

const std::vector<Named<FaultKind>>& fault_kind_names();
const std::vector<Named<ObjectKind>>& object_kind_names();
const std::vector<Named<Opcode>>& opcode_names();
const std::vector<Named<Verb>>& verb_names();
const std::vector<Named<Side>>& side_names();
const std::vector<Named<ibv_qp_type>>& qp_type_names();
const std::vector<Named<ibv_wc_status>>& status_names();
const std::vector<Named<ibv_event_type>>& event_names();
const std::vector<Named<CmEvent>>& cm_event_names();
const std::vector<Named<int>>& errno_names();

template <class Enum>
std::optional<Enum> lookup(const std::vector<Named<Enum>>& table, std::string_view name) {
  for (const auto& entry : table)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

template <class Enum>
std::string_view name_of(const std::vector<Named<Enum>>& table, Enum value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

// "a, b, c": what a plan may say instead of an unknown name.
template <class Enum>
std::string choices(const std::vector<Named<Enum>>& table) {
  std::string out;
  for (const auto& entry : table) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

// Decimal or 0x hex, the whole text; nothing for anything else.
std::optional<std::uint64_t> parse_number(std::string_view text);
// An errno name (ENOMEM) or a positive number.
std::optional<int> parse_errno(std::string_view text);
// "qp#2".
std::optional<ObjectRef> parse_object(std::string_view text);
std::string hex(std::uint64_t value);

}  // namespace verbfault::engine

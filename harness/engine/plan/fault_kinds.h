// What each fault kind is, one row a kind (in the style of the kernel's
// Soft-RoCE opcode table, rxe_opcode.c): its name in plans, its entry in
// docs/fault-kinds.md's reference, where its opportunities arise, whether a
// rule of it is decided by its selector alone, and the parameters it takes
// (read by the plan parsers and plan_validate.cpp). Adding a kind is an
// enumerator (verbfault/plan.h), a row here, its implementation at its
// site, and its tests (docs/hacking.md).
#pragma once

#include "verbfault/plan.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace verbfault::engine {

// Where an opportunity arises; each fault kind is decided at one site.
enum class Site : std::uint8_t {
  posted_wr,   // each work request of post_send / post_recv / post_srq_recv
  poll,        // each poll_cq call
  completion,  // each work completion the provider returns
  arm,         // each req_notify_cq call
  cq_event,    // each completion event ibv_get_cq_event returns
  call,        // each other hooked call on an object (create/modify/...)
  cm_command,  // each rdma_cm command that starts a step of an id (resolve, connect)
  cm_event,    // each rdma_cm event an id is about to report
};

struct FaultKindInfo {
  FaultKind kind;
  std::string_view name;  // in plans: "completion_error"
  std::string_view
      signature;  // with its parameters, as docs/fault-kinds.md lists it: "completion_error(status)"
  // Where its opportunities arise; verb_failure's is its verb's
  // (site_of, fault_engine.h).
  Site site;
  // Whether a rule of it with no selector matches every opportunity of its
  // site: false for the kinds with conditions of their own (a verb, an
  // event type, an RC send, a CM step).
  bool selector_decides;
  std::string_view counts;    // docs/fault-kinds.md: what its nth= and p= count
  std::string_view observed;  // docs/fault-kinds.md: what the application observes
  // The parameters a rule of it takes, in the order of the one-line form's
  // parentheses (completion_error(status)); their names are the plan's keys
  // (status: rem_access_err). Any other parameter in a rule is an error.
  std::array<std::string_view, 2> parameters = {};
  // Why a rule of it lacks what it needs, when a parameter is absent or
  // has no effect (a success status, 0 polls): the plan error's text.
  // Empty: its parameters may be left out (port_down's port: 1).
  std::string_view missing = {};
};

inline constexpr std::size_t kFaultKindCount = 25;

// Every kind, in the order plans' error messages list them.
const std::array<FaultKindInfo, kFaultKindCount>& fault_kinds();
const FaultKindInfo& info(FaultKind kind);

}  // namespace verbfault::engine

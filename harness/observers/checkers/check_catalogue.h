// The runtime checks: each has a stable id (used in reports, in the trace,
// in VERBFAULT_CHECKS and in verbfault::Finding), the mistake it catches,
// and the field failures of ../docs (shared/field-failures.md) it stands
// for. The checks themselves are in checkers.cpp.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>

namespace verbfault::checkers {

struct CheckInfo {
  std::string_view id;
  std::string_view catches;
  std::string_view field_failures;  // "F08", or "" when none is listed
  // Whether a finding fails the run (`verbfault run` exit status 121). The
  // others are reported but left to judgement (what a program leaves to
  // the kernel at exit).
  bool fails_run = true;
  // Whether it needs the simulated device's view (what a CQ holds, what is
  // due on the device's clock): off on a real provider, where the
  // interposer says so once (lifetime.cpp).
  bool needs_simulated_device = false;
};

std::span<const CheckInfo> catalogue();
bool known(std::string_view id);
bool fails_run(std::string_view id);
bool needs_simulated_device(std::string_view id);

// Which checks run. VERBFAULT_CHECKS is a comma-separated list applied in
// order to "all on": "off" / "all" switch every check, "-ID" / "+ID" one
// check, "-PREFIX.*" / "+PREFIX.*" a family ("-resource.*"). An unknown id
// is an error (std::runtime_error, one line naming it and the known ids).
class CheckSelection {
 public:
  static CheckSelection parse(std::string_view text, std::string_view source);
  bool enabled(std::string_view id) const;

 private:
  std::set<std::string, std::less<>> enabled_;
};

}  // namespace verbfault::checkers

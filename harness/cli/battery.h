// A conformance battery: the fault plans `verbfault conform` runs an
// application under, each with what a correct application does under it.
// A YAML file (reports/batteries/default.yaml is the default, built in):
//
//   format: 1
//   seeds: 3                  # seeds per entry: 1..N (--seeds overrides)
//   entries:
//     - name: baseline        # [A-Za-z0-9_.-]+, unique: the fault class
//       expect: success       # success | recovery | clean_failure
//     - name: flush
//       fault: flush p=0.2 count=1      # one rule, one-line form
//       expect: clean_failure
//     - name: mix
//       faults: [partial_poll p=0.5, coalesce_cq_event p=0.3]
//       expect: recovery
//
// An entry with no fault expects success; one with faults expects recovery
// or clean_failure (report.h says what each accepts).
#pragma once

#include "report.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace verbfault::cli {

// A battery that cannot be used; what() is one line naming the file, the
// entry and what was expected.
class BatteryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BatteryEntry {
  std::string name;
  std::vector<std::string> faults;  // one-line rules, checked against the plan grammar
  reports::Expectation expect = reports::Expectation::success;
};

struct Battery {
  std::string source;  // "default" or the file's path
  unsigned seeds = 3;
  std::vector<BatteryEntry> entries;
};

// "default" is the built-in battery; anything else a file. Throws BatteryError.
Battery read_battery(const std::string& name_or_file);
Battery parse_battery(const std::string& text, const std::string& source);

// The default battery's YAML text (reports/batteries/default.yaml, built in).
const char* default_battery_text();

}  // namespace verbfault::cli

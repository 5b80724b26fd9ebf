// The fault-kind descriptor table (engine/plan/fault_kinds.h): one row a
// kind, and docs/fault-kinds.md's reference of the kinds is that table.
#include "fault_kinds.h"
#include "plan_names.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace verbfault::engine {
namespace {

TEST(FaultKindTable, EveryKindHasOneRow) {
  std::set<FaultKind> kinds;
  std::set<std::string_view> names;
  for (const FaultKindInfo& row : fault_kinds()) {
    EXPECT_TRUE(kinds.insert(row.kind).second) << row.name << " has two rows";
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_EQ(&info(row.kind), &row) << row.name;
    EXPECT_EQ(to_string(row.kind), row.name);
    EXPECT_EQ(row.signature.substr(0, row.name.size()), row.name);
    // The connection manager's kinds count their own steps.
    if (is_cm_fault(row.kind)) {
      EXPECT_FALSE(row.selector_decides) << row.name;
    }
  }
  // Every enumerator, the last one included.
  EXPECT_EQ(kinds.size(), static_cast<std::size_t>(kLastFaultKind) + 1);
}

// docs/fault-kinds.md's table of fault kinds ("| kind (parameters) | counts |
// what the application observes |"), row for row.
TEST(FaultKindTable, TheReadmeTableIsTheDescriptorTable) {
  std::ifstream readme(VERBFAULT_SOURCE_DIR "/docs/fault-kinds.md");
  ASSERT_TRUE(readme) << VERBFAULT_SOURCE_DIR "/docs/fault-kinds.md";
  std::map<std::string, std::vector<std::string>> rows;  // by signature
  bool in_table = false;
  for (std::string line; std::getline(readme, line);) {
    if (line == "| kind (parameters) | counts | what the application observes |") {
      in_table = true;
      std::getline(readme, line);  // the | --- | line
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("| `", 0) != 0) break;
    std::vector<std::string> cells;
    std::size_t at = 2;
    for (std::size_t bar; (bar = line.find(" | ", at)) != std::string::npos; at = bar + 3)
      cells.push_back(line.substr(at, bar - at));
    cells.push_back(line.substr(at, line.size() - 2 - at));
    ASSERT_EQ(cells.size(), 3u) << line;
    rows[cells[0]] = cells;
  }
  ASSERT_EQ(rows.size(), fault_kinds().size());
  for (const FaultKindInfo& kind : fault_kinds()) {
    const auto row = rows.find("`" + std::string(kind.signature) + "`");
    ASSERT_NE(row, rows.end()) << kind.signature << ": no row in docs/fault-kinds.md";
    EXPECT_EQ(row->second[1], kind.counts) << kind.name;
    EXPECT_EQ(row->second[2], kind.observed) << kind.name;
  }
}

}  // namespace
}  // namespace verbfault::engine

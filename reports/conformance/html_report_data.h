// What the HTML report's script reads (html/report.js): the entries of a
// report as JSON, in the page's own compact shape (a timeline's marks as
// arrays, its rows resolved), embedded in the page by html_writer.
#pragma once

#include "report.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace verbfault::reports {

// An enumeration's name as the page shows it: "clean_failure" -> "clean failure".
std::string display_name(std::string_view name);

// The rows of a run's timeline: each object its marks name, once, ordered
// by kind (context, pd, cq, qp, then the other kinds by name) and then by
// creation index ("qp#2" before "qp#10").
std::vector<std::string> timeline_rows(const std::vector<TimelineMark>& marks);

// {"mark_kinds": [...], "entries": [...]}: per entry its fields, seeds as
// strings (a 64-bit seed does not fit a JavaScript number) and
// "timeline": {"rows": [...], "marks": [[record, row, kind, label], ...]}
// with row and kind as indices into "rows" and "mark_kinds".
nlohmann::json html_report_data(const Report& report);

}  // namespace verbfault::reports

// The HTML report's matrix: an inline SVG with a row per fault class (in
// battery order) and a column per outcome (kOutcomes order), one square per
// entry (a seed) in its cell, coloured by verdict. Every square is a button
// that names its entry (data-entry: its index in Report::entries) for the
// page's script; the first entry that does not conform is the matrix's one
// tab stop, so a keyboard reaches a failure first (arrow keys move on).
#pragma once

#include "report.h"

#include <string>
#include <vector>

namespace verbfault::reports {

// The fault classes of a report's entries, each once, in battery order
// (the order of their first entry).
std::vector<std::string> fault_classes(const Report& report);

// The matrix as an <svg> element; a short paragraph when there is no entry.
std::string html_matrix(const Report& report);

}  // namespace verbfault::reports

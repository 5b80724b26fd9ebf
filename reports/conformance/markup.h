// Escaping text from a run (program output, plans, trace records) for the
// markup the writers produce. The text may hold any bytes: invalid UTF-8
// becomes U+FFFD and control characters that XML 1.0 forbids become
// U+FFFD too, so that the output always parses.
#pragma once

#include <string>
#include <string_view>

namespace verbfault::reports {

// Valid UTF-8 with no C0 control characters but tab, newline, carriage return.
std::string clean_text(std::string_view text);

// For XML and HTML text and attribute values: & < > " ' escaped, and clean_text.
std::string xml_escape(std::string_view text);

// For a Markdown table cell: clean_text on one line, | escaped, < and &
// as entities (comments render inline HTML).
std::string markdown_cell(std::string_view text);

// For Markdown inline code in a table cell: `text`, with enough backticks.
std::string markdown_code(std::string_view text);

}  // namespace verbfault::reports

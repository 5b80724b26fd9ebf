// Text from a run (program output, plans, trace records, names the user
// chose) made safe for the HTML page: it may hold any bytes, and must come
// out as text, never as markup or script.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace verbfault::reports {

// For HTML text and (quoted) attribute values: & < > " ' as references;
// invalid UTF-8 and control characters other than tab, newline and carriage
// return become U+FFFD, so that the page always parses the same way.
std::string html_escape(std::string_view text);

// `value` as JSON for the inside of a <script type="application/json">
// element: every '<' written as \u003c, so that no "</script" or "<!--" can
// end or change the element (JSON.parse reads it back unchanged); invalid
// UTF-8 becomes U+FFFD.
std::string json_for_script(const nlohmann::json& value);

}  // namespace verbfault::reports

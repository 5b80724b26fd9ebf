// A value as JSON inside the HTML page's <script type="application/json">
// element, where text from a run (program output, trace records) must stay
// data: no "</script" or "<!--" in it may end or change the element.
// (Text in the page's markup goes through markup.h's xml_escape.)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace verbfault::reports {

// `value` as JSON with every '<' written as \u003c (JSON.parse reads it
// back unchanged); invalid UTF-8 becomes U+FFFD.
std::string json_for_script(const nlohmann::json& value);

}  // namespace verbfault::reports

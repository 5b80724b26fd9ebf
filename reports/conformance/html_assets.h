// The HTML report's stylesheet and script (html/report.css, html/report.js),
// compiled in by html/embed_assets.cmake so that the page is one file that
// needs nothing beside it. Defined in a generated source; internal to the
// HTML writer.
#pragma once

#include <string_view>

namespace verbfault::reports::html_assets {

extern const std::string_view kCss;
extern const std::string_view kJs;
// SHA-256 of kJs (lowercase hex): the page's Content-Security-Policy allows
// that one inline script and no other.
extern const std::string_view kJsSha256Hex;

}  // namespace verbfault::reports::html_assets

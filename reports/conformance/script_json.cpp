#include "script_json.h"

namespace verbfault::reports {

std::string json_for_script(const nlohmann::json& value) {
  const std::string json = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  // A '<' can only stand inside a JSON string, where \u003c means the same.
  for (const char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

}  // namespace verbfault::reports

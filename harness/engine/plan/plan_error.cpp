// PlanError's one-line message (verbfault/plan.h).
#include <verbfault/plan.h>

namespace verbfault {

namespace {

// The message quotes the input (a token, a YAML scalar, yaml-cpp's own
// text, a path), and the input may hold control characters: a line break
// inside it would split the one line a user, a log scraper or CI reads.
// They are written as C escapes; bytes of UTF-8 text are kept as they are.
std::string escape_control_characters(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

}  // namespace

PlanError::PlanError(const std::string& message)
    : std::runtime_error(escape_control_characters(message)) {}

}  // namespace verbfault

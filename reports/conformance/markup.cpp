#include "markup.h"

#include <algorithm>

namespace verbfault::reports {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at `text[at]`, or 0 (RFC 3629:
// no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string clean_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence(text, at);
    const unsigned char c = static_cast<unsigned char>(text[at]);
    if (length == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      out += kReplacement;
      ++at;
      continue;
    }
    out.append(text.substr(at, length));
    at += length;
  }
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : clean_text(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// One line for a table cell, | escaped (GFM tables split on it even inside
// code spans); with `entities`, < and & too: GitHub and GitLab render
// inline HTML in a comment, and a program's name or output must stay text.
// (Inside a code span nothing is rendered, and entities would show as typed.)
std::string table_text(std::string_view text, bool entities) {
  std::string out;
  for (const char c : clean_text(text)) {
    if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (c == '|')
      out += "\\|";
    else if (entities && c == '<')
      out += "&lt;";
    else if (entities && c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string markdown_cell(std::string_view text) {
  return table_text(text, true);
}

std::string markdown_code(std::string_view text) {
  const std::string cell = table_text(text, false);
  // A code span is delimited by a run of backticks longer than any inside it
  // (CommonMark 6.1); a space pads a span that starts or ends with one.
  std::size_t longest = 0, run = 0;
  for (const char c : cell) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !cell.empty() && (cell.front() == '`' || cell.back() == '`');
  return fence + (pad ? " " : "") + cell + (pad ? " " : "") + fence;
}

}  // namespace verbfault::reports

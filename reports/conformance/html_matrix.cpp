#include "html_matrix.h"

#include "html_report_data.h"
#include "markup.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string_view>

namespace verbfault::reports {

namespace {

// Geometry, in SVG user units (CSS pixels at scale 1).
constexpr int kSquare = 14;
constexpr int kPitch = 18;      // square plus gap
constexpr int kMaxPerLine = 4;  // squares side by side in a cell
constexpr int kCellPad = 8;
constexpr int kHeaderHeight = 40;  // the outcome names, up to two lines
constexpr int kMinColumnWidth = 68;
constexpr int kMinRowHeight = 42;        // the class name and its expectation
constexpr double kLabelCharWidth = 7.6;  // 13px sans-serif, generously

std::string square_title(const Entry& entry) {
  return entry.fault_class + ", seed " + std::to_string(entry.seed) + ": " +
         display_name(to_string(entry.outcome)) + ", " + display_name(to_string(entry.verdict));
}

std::size_t column_of(Outcome outcome) {
  return static_cast<std::size_t>(std::find(std::begin(kOutcomes), std::end(kOutcomes), outcome) -
                                  std::begin(kOutcomes));
}

// printf into a string of the size it needs.
std::string format(const char* pattern, auto... values) {
  std::string out(static_cast<std::size_t>(std::snprintf(nullptr, 0, pattern, values...)), '\0');
  std::snprintf(out.data(), out.size() + 1, pattern, values...);
  return out;
}

}  // namespace

std::vector<std::string> fault_classes(const Report& report) {
  std::vector<std::string> classes;
  for (const Entry& entry : report.entries)
    if (std::find(classes.begin(), classes.end(), entry.fault_class) == classes.end())
      classes.push_back(entry.fault_class);
  return classes;
}

std::string html_matrix(const Report& report) {
  if (report.entries.empty()) return "<p class=\"empty\">The battery ran no entry.</p>\n";
  const std::vector<std::string> classes = fault_classes(report);
  const std::size_t columns = std::size(kOutcomes);

  // cells[row][column]: the entries there, in report order (seed order).
  std::vector<std::vector<std::vector<std::size_t>>> cells(
      classes.size(), std::vector<std::vector<std::size_t>>(columns));
  // A class's expectation, from its first entry (the battery gives one per class).
  std::vector<std::optional<Expectation>> expectation(classes.size());
  for (std::size_t i = 0; i < report.entries.size(); ++i) {
    const Entry& entry = report.entries[i];
    const std::size_t row = static_cast<std::size_t>(
        std::find(classes.begin(), classes.end(), entry.fault_class) - classes.begin());
    if (!expectation[row]) expectation[row] = entry.expect;
    cells[row][column_of(entry.outcome)].push_back(i);
  }

  std::size_t widest_cell = 1;
  std::size_t longest_label = 0;
  for (std::size_t row = 0; row < classes.size(); ++row) {
    longest_label = std::max(longest_label, classes[row].size());
    for (const auto& cell : cells[row]) widest_cell = std::max(widest_cell, cell.size());
  }
  const int per_line = static_cast<int>(std::min<std::size_t>(widest_cell, kMaxPerLine));
  const int column_width = std::max(kMinColumnWidth, per_line * kPitch + 2 * kCellPad);
  const int label_width =
      std::clamp(static_cast<int>(longest_label * kLabelCharWidth) + 24, 120, 240);

  std::vector<int> row_top(classes.size() + 1, kHeaderHeight);
  for (std::size_t row = 0; row < classes.size(); ++row) {
    std::size_t fullest = 1;
    for (const auto& cell : cells[row]) fullest = std::max(fullest, cell.size());
    const int lines = static_cast<int>((fullest + per_line - 1) / per_line);
    row_top[row + 1] = row_top[row] + std::max(kMinRowHeight, lines * kPitch + 2 * kCellPad);
  }
  const int width = label_width + static_cast<int>(columns) * column_width;
  const int height = row_top.back() + 2;

  // The tab stop: the first entry that does not conform, else the first.
  std::size_t tab_stop = 0;
  for (std::size_t i = 0; i < report.entries.size(); ++i)
    if (report.entries[i].verdict == Verdict::does_not_conform) {
      tab_stop = i;
      break;
    }

  std::string svg = format(
      "<svg class=\"matrix\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" role=\"group\" aria-label=\"Conformance matrix: fault class by "
      "outcome, one square per seed\">\n",
      width, height, width, height);
  for (std::size_t column = 0; column < columns; ++column) {
    const int x = label_width + static_cast<int>(column) * column_width + column_width / 2;
    const std::string name = display_name(to_string(kOutcomes[column]));
    const std::size_t space = name.find(' ');
    if (space == std::string::npos) {
      svg += format("<text class=\"col-label\" x=\"%d\" y=\"%d\">", x, kHeaderHeight - 12) +
             xml_escape(name) + "</text>\n";
    } else {
      // Two lines, so that the columns stay narrow.
      svg += format("<text class=\"col-label\" x=\"%d\" y=\"%d\">", x, kHeaderHeight - 26) +
             xml_escape(name.substr(0, space)) + format("<tspan x=\"%d\" dy=\"14\">", x) +
             xml_escape(name.substr(space + 1)) + "</tspan></text>\n";
    }
  }
  for (std::size_t row = 0; row < classes.size(); ++row) {
    const int top = row_top[row];
    const int bottom = row_top[row + 1];
    svg += format("<g class=\"class-row\" data-row=\"%zu\">\n", row);
    svg += format("<text class=\"row-label\" x=\"0\" y=\"%d\">", top + 20) +
           xml_escape(classes[row]) + "</text>\n";
    svg += format("<text class=\"row-expect\" x=\"0\" y=\"%d\">expects ", top + 35) +
           xml_escape(display_name(to_string(*expectation[row]))) + "</text>\n";
    for (std::size_t column = 0; column < columns; ++column) {
      const int left = label_width + static_cast<int>(column) * column_width;
      svg +=
          format("<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\"/>\n",
                 left + 2, top + 2, column_width - 4, bottom - top - 4);
      const auto& cell = cells[row][column];
      for (std::size_t k = 0; k < cell.size(); ++k) {
        const std::size_t index = cell[k];
        const Entry& entry = report.entries[index];
        const int x = left + kCellPad + static_cast<int>(k % per_line) * kPitch;
        const int y = top + kCellPad + static_cast<int>(k / per_line) * kPitch;
        const std::string title = xml_escape(square_title(entry));
        svg += format(
                   "<rect class=\"sq v-%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                   "rx=\"2\" data-entry=\"%zu\" data-row=\"%zu\" tabindex=\"%d\" "
                   "role=\"button\" aria-label=\"",
                   std::string(to_string(entry.verdict)).c_str(), x, y, kSquare, kSquare, index,
                   row, index == tab_stop ? 0 : -1) +
               title + "\"><title>" + title + "</title></rect>\n";
      }
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace verbfault::reports

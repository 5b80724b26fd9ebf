#include "markdown_writer.h"

#include "markup.h"
#include "text_file.h"

#include <fmt/format.h>

#include <map>

namespace verbfault::reports {

namespace {

// A comment must stay readable: the first rows, then a count of the rest.
constexpr std::size_t kMaxRows = 50;

std::string summary_line(const Report& report) {
  const Summary summary = summarize(report);
  std::string line =
      fmt::format("**verbfault conform: {}** on {}: ", markdown_cell(report.application),
                  markdown_cell(report.provider));
  if (summary.not_conforming == 0)
    line += fmt::format(":white_check_mark: all {} runs that exercised their fault conform",
                        summary.conforming);
  else
    line +=
        fmt::format(":x: {} of {} runs do not conform", summary.not_conforming, summary.entries);
  if (summary.not_exercised != 0)
    line += fmt::format(" ({} not exercised: the fault never fired)", summary.not_exercised);
  return line + fmt::format(". Battery {}, seeds per class {}, {:.1f} s.\n",
                            markdown_cell(report.battery), report.seeds.size(),
                            report.duration_seconds);
}

}  // namespace

std::string markdown_report(const Report& report) {
  std::string md = summary_line(report);
  std::vector<const Entry*> failing, unexercised;
  for (const Entry& entry : report.entries) {
    if (entry.verdict == Verdict::does_not_conform) failing.push_back(&entry);
    if (entry.verdict == Verdict::not_exercised) unexercised.push_back(&entry);
  }
  if (!failing.empty()) {
    md += "\n| fault class | seed | expected | outcome | why | reproduce |\n";
    md += "| --- | --- | --- | --- | --- | --- |\n";
    for (std::size_t i = 0; i < failing.size() && i < kMaxRows; ++i) {
      const Entry& entry = *failing[i];
      md += fmt::format("| {} | {} | {} | **{}** | {} | {} |\n", markdown_cell(entry.fault_class),
                        entry.seed, to_string(entry.expect), to_string(entry.outcome),
                        markdown_cell(entry.reason), markdown_code(entry.replay));
    }
    if (failing.size() > kMaxRows)
      md +=
          fmt::format("\n… and {} more: see the HTML or JSON report.\n", failing.size() - kMaxRows);
  }
  if (!unexercised.empty()) {
    md += "\nNot exercised (the fault never fired, so the run tested nothing): ";
    for (std::size_t i = 0; i < unexercised.size(); ++i)
      md += fmt::format("{}{} seed {}", i == 0 ? "" : ", ",
                        markdown_cell(unexercised[i]->fault_class), unexercised[i]->seed);
    md += ".\n";
  }

  // The race windows: how many runs reached each; one no run reached was
  // not exercised, however clean the report.
  if (!report.race_windows.empty()) {
    std::string reached, never;
    for (const std::string& window : report.race_windows) {
      const std::size_t runs = entries_reaching(report, window).size();
      if (runs == 0)
        never += (never.empty() ? "`" : ", `") + window + "`";
      else
        reached += fmt::format("{}`{}` {}", reached.empty() ? "" : ", ", window, runs);
    }
    md += "\nRace windows reached (runs): " + (reached.empty() ? "none" : reached) + ".\n";
    if (!never.empty()) md += "No run reached: " + never + ".\n";
  }

  // The matrix: runs per (class, outcome), a cross on the cells that hold a
  // run that does not conform.
  std::vector<std::string> classes;
  std::map<std::string, std::map<Outcome, std::pair<std::size_t, bool>>> cells;
  for (const Entry& entry : report.entries) {
    if (!cells.contains(entry.fault_class)) classes.push_back(entry.fault_class);
    auto& cell = cells[entry.fault_class][entry.outcome];
    ++cell.first;
    cell.second = cell.second || entry.verdict == Verdict::does_not_conform;
  }
  md += "\n<details><summary>Fault class × outcome (runs; ✗: does not conform)</summary>\n\n";
  md += "| fault class |";
  for (const Outcome outcome : kOutcomes) md += fmt::format(" {} |", to_string(outcome));
  md += "\n| --- |";
  for (std::size_t i = 0; i < std::size(kOutcomes); ++i) md += " ---: |";
  md += "\n";
  for (const std::string& fault_class : classes) {
    md += "| " + markdown_cell(fault_class) + " |";
    for (const Outcome outcome : kOutcomes) {
      const auto found = cells[fault_class].find(outcome);
      if (found == cells[fault_class].end())
        md += "  |";
      else
        md += fmt::format(" {}{} |", found->second.first, found->second.second ? " ✗" : "");
    }
    md += "\n";
  }
  md += "\n</details>\n";
  return md;
}

void write_markdown_report(const Report& report, const std::filesystem::path& path) {
  write_text_file(path, markdown_report(report));
}

}  // namespace verbfault::reports

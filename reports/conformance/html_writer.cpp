#include "html_writer.h"

#include "html_assets.h"
#include "html_matrix.h"
#include "html_report_data.h"
#include "markup.h"
#include "script_json.h"
#include "text_file.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace verbfault::reports {

namespace {

// The SHA-256 (hex) as CSP wants it: base64 of the 32 bytes.
std::string csp_hash(std::string_view hex) {
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t group = 0;
    for (std::size_t k = 0; k < 3; ++k)
      group = (group << 8) | (k < n ? static_cast<std::uint8_t>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k)
      out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 0x3F] : '=';
  }
  return "sha256-" + out;
}

// "1..8, 12": runs of consecutive seeds, as `sweep --seeds A..B` writes them.
std::string seed_ranges(const std::vector<std::uint64_t>& seeds) {
  std::string out;
  for (std::size_t i = 0; i < seeds.size();) {
    std::size_t j = i;
    while (j + 1 < seeds.size() && seeds[j + 1] == seeds[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(seeds[i]);
    if (j > i) out += ".." + std::to_string(seeds[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

std::string seconds(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f s", value);
  return buffer;
}

std::string fact(std::string_view name, const std::string& value_html) {
  return "<div><dt>" + std::string(name) + "</dt><dd>" + value_html + "</dd></div>\n";
}

std::string header(const Report& report) {
  const Summary summary = summarize(report);
  std::string html =
      "<header class=\"page-head\">\n<div class=\"wrap\">\n<div class=\"head-top\">\n";
  html += "<div><p class=\"eyebrow\">verbfault conformance report</p>\n";
  html += "<h1>" +
          xml_escape(report.application.empty() ? "(unnamed application)" : report.application) +
          "</h1></div>\n";
  html += "<p class=\"summary\"><span class=\"runs\">" + std::to_string(summary.entries) +
          (summary.entries == 1 ? " run" : " runs") + "</span>";
  html +=
      "<span class=\"pill v-conforms\">" + std::to_string(summary.conforming) + " conform</span>";
  html += "<span class=\"pill v-does_not_conform\">" + std::to_string(summary.not_conforming) +
          " do not conform</span>";
  html += "<span class=\"pill v-not_exercised\">" + std::to_string(summary.not_exercised) +
          " not exercised</span></p>\n</div>\n";
  html += "<p class=\"command\"><code>" + xml_escape(join(report.command, " ")) + "</code></p>\n";
  html += "<dl class=\"facts head-facts\">\n";
  html += fact("Provider", xml_escape(report.provider));
  html += fact("Battery", xml_escape(report.battery));
  html += fact("Seeds", xml_escape(seed_ranges(report.seeds)));
  html += fact("Started", "<time>" + xml_escape(report.started_at) + "</time>");
  html += fact("Duration", xml_escape(seconds(report.duration_seconds)));
  html += fact("verbfault", xml_escape(report.verbfault_version));
  html += "</dl>\n</div>\n</header>\n";
  return html;
}

std::string legend(const Report& report) {
  const Summary summary = summarize(report);
  const auto item = [](std::string_view verdict, std::string_view text, std::size_t count) {
    return "<li><svg width=\"14\" height=\"14\" aria-hidden=\"true\"><rect class=\"sq v-" +
           std::string(verdict) + "\" x=\"1\" y=\"1\" width=\"12\" height=\"12\" rx=\"2\"/></svg>" +
           std::string(text) + " <span class=\"count\">" + std::to_string(count) + "</span></li>";
  };
  return "<ul class=\"legend\" aria-label=\"Legend\">" +
         item("conforms", "conforms", summary.conforming) +
         item("does_not_conform", "does not conform", summary.not_conforming) +
         item("not_exercised", "not exercised (the fault never fired)", summary.not_exercised) +
         "</ul>\n";
}

std::string failures_table(const Report& report) {
  std::string rows;
  std::size_t count = 0;
  for (std::size_t i = 0; i < report.entries.size(); ++i) {
    const Entry& entry = report.entries[i];
    if (entry.verdict != Verdict::does_not_conform) continue;
    ++count;
    const std::string index = std::to_string(i);
    rows += "<tr data-row-entry=\"" + index + "\">";
    rows += "<td><button type=\"button\" class=\"linkish\" data-entry=\"" + index + "\">" +
            xml_escape(entry.fault_class) + " <span class=\"seed\">seed " +
            std::to_string(entry.seed) + "</span></button></td>";
    rows += "<td><span class=\"outcome\">" + xml_escape(display_name(to_string(entry.outcome))) +
            "</span><br><span class=\"muted\">expected " +
            xml_escape(display_name(to_string(entry.expect))) + "</span></td>";
    rows += "<td>" + xml_escape(entry.reason) + "<code class=\"replay-cell\">" +
            xml_escape(entry.replay) + "</code></td>";
    rows += "</tr>\n";
  }
  std::string html = "<section class=\"card\" aria-labelledby=\"failures-title\">\n";
  html += "<h2 id=\"failures-title\">Entries that do not conform <span class=\"count\">" +
          std::to_string(count) + "</span></h2>\n";
  if (count == 0)
    return html + "<p class=\"empty\">Every entry conforms or was not exercised.</p>\n</section>\n";
  html +=
      "<table class=\"failures\">\n<thead><tr><th>Entry</th><th>Outcome</th>"
      "<th>Why, and the line that reproduces it</th></tr></thead>\n<tbody>\n";
  return html + rows + "</tbody>\n</table>\n</section>\n";
}

// The race windows (docs/threads-and-time.md, "Race windows"): per window the
// runs that reached it, and those no run reached, which the report did not
// exercise however clean it is.
std::string windows_table(const Report& report) {
  if (report.race_windows.empty()) return "";
  std::string rows;
  std::size_t never = 0;
  for (const std::string& window : report.race_windows) {
    const std::vector<std::size_t> reached = entries_reaching(report, window);
    rows += "<tr><td><code>" + xml_escape(window) + "</code></td>";
    if (reached.empty()) {
      ++never;
      rows += "<td class=\"count\">0</td><td class=\"muted\">not reached by any run</td></tr>\n";
      continue;
    }
    rows += "<td class=\"count\">" + std::to_string(reached.size()) + "</td><td>";
    constexpr std::size_t kListed = 12;
    for (std::size_t i = 0; i < reached.size() && i < kListed; ++i) {
      const Entry& entry = report.entries[reached[i]];
      const std::string index = std::to_string(reached[i]);
      rows += std::string(i == 0 ? "" : " ") +
              "<button type=\"button\" class=\"linkish\" data-entry=\"" + index + "\">" +
              xml_escape(entry.fault_class) + " <span class=\"seed\">seed " +
              std::to_string(entry.seed) + "</span></button>";
    }
    if (reached.size() > kListed)
      rows +=
          " <span class=\"muted\">and " + std::to_string(reached.size() - kListed) + " more</span>";
    rows += "</td></tr>\n";
  }
  std::string html = "<section class=\"card\" aria-labelledby=\"windows-title\">\n";
  html += "<h2 id=\"windows-title\">Race windows <span class=\"count\">" +
          std::to_string(report.race_windows.size() - never) + " of " +
          std::to_string(report.race_windows.size()) + " reached</span></h2>\n";
  html +=
      "<p class=\"hint\">The moments a completion race needs. A window no run reached was not "
      "exercised: a clean report says nothing about that race.</p>\n";
  html +=
      "<table class=\"windows\">\n<thead><tr><th>Window</th><th>Runs</th><th>Runs that "
      "reached it</th></tr></thead>\n<tbody>\n";
  return html + rows + "</tbody>\n</table>\n</section>\n";
}

}  // namespace

std::string html_report(const Report& report) {
  const std::string title =
      "verbfault conformance: " + (report.application.empty() ? "report" : report.application);
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  // No request of any kind: the page is its own world; only its own script runs.
  html +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src '" +
      csp_hash(html_assets::kJsSha256Hex) + "'; base-uri 'none'; form-action 'none'\">\n";
  html += "<meta name=\"generator\" content=\"verbfault " + xml_escape(report.verbfault_version) +
          "\">\n";
  html += "<title>" + xml_escape(title) + "</title>\n";
  html += "<style>" + std::string(html_assets::kCss) + "</style>\n</head>\n<body>\n";
  html += header(report);
  html += "<main class=\"wrap layout\">\n<div class=\"col-main\">\n";
  html += "<section class=\"card\" aria-labelledby=\"matrix-title\">\n";
  html += "<h2 id=\"matrix-title\">Fault class &times; outcome</h2>\n";
  html +=
      "<p class=\"hint\">One square per seed. Select a square (click, or Tab then arrow keys "
      "and Enter) to see its run.</p>\n";
  html += "<div class=\"matrix-box\">\n" + html_matrix(report) + "</div>\n";
  html += legend(report);
  html += "</section>\n";
  html += failures_table(report);
  html += windows_table(report);
  html += "</div>\n";
  html +=
      "<aside class=\"col-detail\">\n<section id=\"detail\" class=\"card detail\" "
      "aria-live=\"polite\" aria-label=\"Selected entry\">\n"
      "<p class=\"empty\">Select a square of the matrix to see its run.</p>\n"
      "</section>\n</aside>\n</main>\n";
  html += "<footer class=\"wrap page-foot\">verbfault " + xml_escape(report.verbfault_version) +
          " &middot; a self-contained page: no request leaves it.</footer>\n";
  html += "<script type=\"application/json\" id=\"report-data\">" +
          json_for_script(html_report_data(report)) + "</script>\n";
  html += "<script>" + std::string(html_assets::kJs) + "</script>\n";
  html += "</body>\n</html>\n";
  return html;
}

void write_html_report(const Report& report, const std::filesystem::path& path) {
  write_text_file(path, html_report(report));
}

}  // namespace verbfault::reports

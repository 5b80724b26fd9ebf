#include "markdown_table.h"

#include <algorithm>
#include <sstream>

namespace verbfault::provider_report {

namespace {

// A table cell holds one line: pipes escaped, line breaks as spaces.
std::string cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string verdict_cell(const Check* check) {
  if (check == nullptr) return "(not run)";
  const std::string observed = cell(check->observed);
  switch (check->verdict) {
    case Verdict::conforms:
      return observed;
    case Verdict::deviates:
      return "**✗ " + observed + "**";
    case Verdict::unsupported:
      return "unsupported: " + observed;
    case Verdict::inconclusive:
      return "inconclusive: " + observed +
             (check->note.empty() ? "" : " (" + cell(check->note) + ")");
  }
  return observed;
}

// The checks in the order the first report that has each lists them, so
// that a check only one provider ran still gets its row.
std::vector<const Check*> rows(const std::vector<ProviderReport>& reports) {
  std::vector<const Check*> out;
  for (const ProviderReport& report : reports)
    for (const Check& check : report.checks)
      if (std::none_of(out.begin(), out.end(), [&](const Check* c) { return c->id == check.id; }))
        out.push_back(&check);
  return out;
}

}  // namespace

std::string side_by_side_markdown(const std::vector<ProviderReport>& reports,
                                  const std::string& preface) {
  std::ostringstream out;
  out << "# Provider reports\n\n";
  if (!preface.empty()) out << preface << "\n\n";
  out << "| provider | link layer | kernel | checks | deviations | unsupported | inconclusive |\n"
      << "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const ProviderReport& r : reports)
    out << "| " << cell(r.provider.device) << " | " << cell(r.provider.link_layer) << " | "
        << cell(r.provider.kernel) << " | " << r.checks.size() << " | "
        << r.count(Verdict::deviates) << " | " << r.count(Verdict::unsupported) << " | "
        << r.count(Verdict::inconclusive) << " |\n";
  out << "\nA cell is what the provider did; **✗** marks a deviation from the cited man page or "
         "IBTA section.\n";

  std::string area;
  for (const Check* row : rows(reports)) {
    if (row->area() != area) {
      area = std::string(row->area());
      out << "\n## " << area << "\n\n| check | spec | expected |";
      for (const ProviderReport& r : reports) out << ' ' << cell(r.provider.device) << " |";
      out << "\n| --- | --- | --- |";
      for (std::size_t i = 0; i < reports.size(); ++i) out << " --- |";
      out << '\n';
    }
    out << "| `" << cell(row->id) << "` " << cell(row->title) << " | " << cell(row->spec) << " | "
        << cell(row->expected) << " |";
    for (const ProviderReport& r : reports) out << ' ' << verdict_cell(r.find(row->id)) << " |";
    out << '\n';
  }
  return out.str();
}

}  // namespace verbfault::provider_report

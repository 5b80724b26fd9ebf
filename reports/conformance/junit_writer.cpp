#include "junit_writer.h"

#include "markup.h"
#include "text_file.h"

#include <fmt/format.h>

#include <map>

namespace verbfault::reports {

namespace {

// What a failure says in one line: how the run ended against what the
// entry expected.
std::string failure_message(const Entry& entry) {
  return fmt::format("{} (expected {}): {}", to_string(entry.outcome), to_string(entry.expect),
                     entry.reason);
}

// The failure's body: everything a person needs to run it again.
std::string failure_text(const Entry& entry) {
  std::string text = "replay: " + entry.replay + "\n";
  if (!entry.replay_file.empty()) text += "replay file: " + entry.replay_file + "\n";
  text += fmt::format("exit status: {}\n", entry.exit_status);
  if (!entry.checks.empty())
    text += "checks: " + fmt::format("{}", fmt::join(entry.checks, ", ")) + "\n";
  for (const FiredFault& fault : entry.faults)
    text += fmt::format("fault: {} on {} (opportunity {}, rule #{}, {} level)\n", fault.kind,
                        fault.object, fault.nth, fault.rule, fault.level);
  if (!entry.said.empty()) text += "the program said: " + entry.said + "\n";
  return text;
}

// JUnit's timestamp is xs:dateTime without a zone (Ant's format); the
// report's is UTC with a Z.
std::string junit_timestamp(const std::string& iso) {
  return !iso.empty() && iso.back() == 'Z' ? iso.substr(0, iso.size() - 1) : iso;
}

}  // namespace

std::string junit_report(const Report& report) {
  // Suites in battery order: the order in which classes first appear.
  std::vector<std::string> classes;
  std::map<std::string, std::vector<const Entry*>> by_class;
  for (const Entry& entry : report.entries) {
    if (!by_class.contains(entry.fault_class)) classes.push_back(entry.fault_class);
    by_class[entry.fault_class].push_back(&entry);
  }
  const Summary summary = summarize(report);
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      xml_escape("verbfault conform: " + report.application), summary.entries,
      summary.not_conforming, summary.not_exercised, report.duration_seconds);
  for (std::size_t suite = 0; suite < classes.size(); ++suite) {
    const std::vector<const Entry*>& entries = by_class[classes[suite]];
    std::size_t failures = 0, skipped = 0;
    double seconds = 0;
    for (const Entry* entry : entries) {
      failures += entry->verdict == Verdict::does_not_conform;
      skipped += entry->verdict == Verdict::not_exercised;
      seconds += entry->duration_seconds;
    }
    xml += fmt::format(
        "  <testsuite name=\"{}\" id=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
        "skipped=\"{}\" time=\"{:.3f}\" timestamp=\"{}\">\n",
        xml_escape(classes[suite]), suite, entries.size(), failures, skipped, seconds,
        xml_escape(junit_timestamp(report.started_at)));
    const Entry& first = *entries.front();
    xml += "    <properties>\n";
    xml += fmt::format("      <property name=\"expect\" value=\"{}\"/>\n", to_string(first.expect));
    for (const std::string& rule : first.plan)
      xml += fmt::format("      <property name=\"rule\" value=\"{}\"/>\n", xml_escape(rule));
    xml += fmt::format("      <property name=\"provider\" value=\"{}\"/>\n",
                       xml_escape(report.provider));
    xml += "    </properties>\n";
    for (const Entry* entry : entries) {
      xml += fmt::format("    <testcase name=\"seed {}\" classname=\"{}\" time=\"{:.3f}\"",
                         entry->seed, xml_escape(report.application + "." + entry->fault_class),
                         entry->duration_seconds);
      if (entry->verdict == Verdict::conforms) {
        xml += "/>\n";
        continue;
      }
      xml += ">\n";
      if (entry->verdict == Verdict::not_exercised)
        xml += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(entry->reason));
      else
        xml += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                           xml_escape(failure_message(*entry)), to_string(entry->outcome),
                           xml_escape(failure_text(*entry)));
      xml += "    </testcase>\n";
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

void write_junit_report(const Report& report, const std::filesystem::path& path) {
  write_text_file(path, junit_report(report));
}

}  // namespace verbfault::reports

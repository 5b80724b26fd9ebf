#include "report_files.h"

#include "html_writer.h"
#include "junit_writer.h"
#include "markdown_writer.h"
#include "report_json.h"

namespace verbfault::reports {

void write_report_files(const Report& report, const std::filesystem::path& dir) {
  write_report_json(report, dir / "report.json");
  write_junit_report(report, dir / "report.xml");
  write_markdown_report(report, dir / "report.md");
  write_html_report(report, dir / "report.html");
}

}  // namespace verbfault::reports

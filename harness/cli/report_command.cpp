#include "report_command.h"

#include "report_files.h"
#include "report_json.h"
#include "report_merge.h"
#include "verbfault/exit_status.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace verbfault::cli {

namespace fs = std::filesystem;

int report_merge(const ReportMergeOptions& options) {
  const fs::path out = options.out;
  std::vector<reports::PartReport> parts;
  for (const std::string& given : options.parts) {
    const fs::path file =
        fs::is_directory(given) ? fs::path(given) / "report.json" : fs::path(given);
    const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
    std::error_code error;
    if (fs::equivalent(dir, out, error)) {
      std::fprintf(stderr,
                   "verbfault: report merge: --out '%s' is one of the reports merged: expected "
                   "another directory\n",
                   out.c_str());
      return exit_status::kUsage;
    }
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr,
                   "verbfault: report merge: %s: cannot be read: expected a report.json "
                   "(or a directory holding one) of sweep --report or conform\n",
                   file.c_str());
      return exit_status::kUsage;
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
      parts.push_back({dir, reports::report_from_json(text.str())});
    } catch (const reports::ReportFormatError& failure) {
      std::fprintf(stderr, "verbfault: report merge: %s: %s\n", file.c_str(), failure.what());
      return exit_status::kUsage;
    }
  }
  reports::Report merged;
  try {
    merged = reports::merge_reports(parts, out);
  } catch (const reports::ReportMergeError& failure) {
    std::fprintf(stderr, "verbfault: %s\n", failure.what());
    return exit_status::kUsage;
  }
  std::error_code error;
  fs::create_directories(out, error);
  try {
    if (error)
      throw std::runtime_error("cannot make the directory '" + out.string() +
                               "': " + error.message());
    reports::write_report_files(merged, out);
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "verbfault: report merge: %s\n", failure.what());
    return exit_status::kUsage;
  }
  const reports::Summary summary = reports::summarize(merged);
  std::fprintf(stderr,
               "verbfault: report merge: %zu report%s, %zu runs: %zu conform, %zu do not, %zu not "
               "exercised\nverbfault: report: %s (and report.json, report.xml, report.md)\n",
               parts.size(), parts.size() == 1 ? "" : "s", summary.entries, summary.conforming,
               summary.not_conforming, summary.not_exercised, (out / "report.html").c_str());
  return summary.not_conforming == 0 ? 0 : 1;
}

}  // namespace verbfault::cli

#include "trace_view.h"

#include "journal.h"
#include "process.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace verbfault::cli {

namespace {

using Json = nlohmann::ordered_json;

// What a record is: a fault the engine injected, a finding of a check, an
// event or diagnosis the harness noted, or a verbs call.
std::string kind_of(const Json& record) {
  if (record.contains("fault")) return "fault";
  if (record.contains("check")) return "check";
  if (record.contains("call")) return "call";
  return "event";
}

std::string value_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "qp#1 #4  post_send wrs=[...] ret=0": the object, its sequence number,
// then the fields in the order the trace has them.
std::string line_of(const Json& record, const std::string& kind) {
  std::string line = record.value("obj", "?") + " #" + value_text(record.value("seq", Json(0)));
  line.resize(std::max<std::size_t>(line.size(), 16), ' ');
  line += kind == "call" ? "" : kind + " ";
  for (const auto& [key, value] : record.items()) {
    if (key == "obj" || key == "seq") continue;
    if (key == "call" || key == "fault" || key == "check") {  // what the record is: its head
      line += value_text(value) + " ";
      continue;
    }
    line += key + "=" + value_text(value) + " ";
  }
  if (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

int print_trace(const TraceViewOptions& options) {
  if (options.kind && *options.kind != "call" && *options.kind != "fault" &&
      *options.kind != "check" && *options.kind != "event") {
    std::fprintf(stderr, "verbfault: --kind '%s': expected call, fault, check or event\n",
                 options.kind->c_str());
    return exit_status::kUsage;
  }
  std::ifstream file(options.file, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "verbfault: trace '%s': cannot open for reading\n", options.file.c_str());
    return exit_status::kUsage;
  }
  // A journal (a program killed before it wrote its trace) is rendered
  // first; anything else is read as JSON Lines.
  std::stringstream in;
  in << file.rdbuf();
  if (observers::journal::is_journal(in.view())) {
    observers::encoding::TextBuffer text;
    std::string error;
    if (observers::journal::render(in.view(), text, error) < 0) {
      std::fprintf(stderr, "verbfault: trace '%s': %s\n", options.file.c_str(), error.c_str());
      return exit_status::kUsage;
    }
    in.str(std::string(text.view()));
  }
  std::size_t number = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    Json record = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("obj")) {
      std::fprintf(stderr, "verbfault: %s:%zu: expected a JSON trace record\n",
                   options.file.c_str(), number);
      return exit_status::kUsage;
    }
    const std::string kind = kind_of(record);
    if (options.object && record.value("obj", "") != *options.object) continue;
    if (options.kind && kind != *options.kind) continue;
    std::printf("%6zu  %s\n", number, line_of(record, kind).c_str());
  }
  return 0;
}

}  // namespace verbfault::cli

#include "battery.h"

#include "plan_names.h"
#include "verbfault/plan.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace verbfault::cli {

namespace {

bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

// The node's scalar, or a BatteryError naming `what`.
std::string scalar(const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) throw BatteryError(what + ": expected a string");
  return node.as<std::string>();
}

BatteryEntry parse_entry(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) throw BatteryError(where + ": expected a mapping with name, expect, fault(s)");
  BatteryEntry entry;
  for (const auto& field : node) {
    const std::string key = field.first.as<std::string>();
    if (key != "name" && key != "expect" && key != "fault" && key != "faults")
      throw BatteryError(where + ": unknown field '" + key +
                         "' (expected name, expect, fault or faults)");
  }
  if (!node["name"]) throw BatteryError(where + ": expected a name");
  entry.name = scalar(node["name"], where + ".name");
  if (!valid_name(entry.name))
    throw BatteryError(where + ".name '" + entry.name +
                       "': expected letters, digits, '_', '.', '-' (at most 64)");
  const std::string at = where + " (" + entry.name + ")";
  if (!node["expect"]) throw BatteryError(at + ": expected expect: success|recovery|clean_failure");
  const std::string expect = scalar(node["expect"], at + ".expect");
  const auto expectation = reports::expectation_named(expect);
  if (!expectation)
    throw BatteryError(at + ".expect '" + expect +
                       "': expected success, recovery or clean_failure");
  entry.expect = *expectation;
  if (node["fault"] && node["faults"])
    throw BatteryError(at + ": expected fault or faults, not both");
  if (node["fault"]) entry.faults.push_back(scalar(node["fault"], at + ".fault"));
  if (node["faults"]) {
    if (!node["faults"].IsSequence() || node["faults"].size() == 0)
      throw BatteryError(at + ".faults: expected a list of rules in the one-line form");
    for (const YAML::Node& rule : node["faults"])
      entry.faults.push_back(scalar(rule, at + ".faults"));
  }
  for (const std::string& rule : entry.faults) {
    try {
      validate(parse_rule(rule, at));
    } catch (const PlanError& error) {
      throw BatteryError(error.what());
    }
  }
  if (entry.faults.empty() && entry.expect != reports::Expectation::success)
    throw BatteryError(at + ": expected expect: success for an entry with no fault");
  if (!entry.faults.empty() && entry.expect == reports::Expectation::success)
    throw BatteryError(at +
                       ": expected expect: recovery or clean_failure for an entry with faults");
  return entry;
}

}  // namespace

Battery parse_battery(const std::string& text, const std::string& source) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& error) {
    throw BatteryError(source + ": not YAML: " + error.msg + " (line " +
                       std::to_string(error.mark.line + 1) + ")");
  }
  if (documents.size() != 1 || !documents[0].IsMap())
    throw BatteryError(source +
                       ": expected one YAML document: a mapping with format, seeds, entries");
  const YAML::Node& root = documents[0];
  for (const auto& field : root) {
    const std::string key = field.first.as<std::string>();
    if (key != "format" && key != "seeds" && key != "entries")
      throw BatteryError(source + ": unknown field '" + key +
                         "' (expected format, seeds, entries)");
  }
  if (!root["format"] || scalar(root["format"], source + ".format") != "1")
    throw BatteryError(source + ": expected format: 1");
  Battery battery;
  battery.source = source;
  if (root["seeds"]) {
    const std::optional<std::uint64_t> seeds =
        engine::parse_number(scalar(root["seeds"], source + ".seeds"));
    if (!seeds || *seeds < 1 || *seeds > 10000)
      throw BatteryError(source + ".seeds: expected an integer 1..10000");
    battery.seeds = static_cast<unsigned>(*seeds);
  }
  if (!root["entries"] || !root["entries"].IsSequence() || root["entries"].size() == 0)
    throw BatteryError(source + ": expected entries: a list of fault classes");
  std::set<std::string> names;
  for (std::size_t i = 0; i < root["entries"].size(); ++i) {
    BatteryEntry entry =
        parse_entry(root["entries"][i], source + ": entries[" + std::to_string(i) + "]");
    if (!names.insert(entry.name).second)
      throw BatteryError(source + ": entries[" + std::to_string(i) + "]: the name '" + entry.name +
                         "' is taken by an earlier entry");
    battery.entries.push_back(std::move(entry));
  }
  return battery;
}

Battery read_battery(const std::string& name_or_file) {
  if (name_or_file == "default") return parse_battery(default_battery_text(), "default");
  std::ifstream in(name_or_file);
  if (!in)
    throw BatteryError("--battery '" + name_or_file +
                       "': cannot read it (expected default or a battery file)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_battery(text.str(), name_or_file);
}

}  // namespace verbfault::cli

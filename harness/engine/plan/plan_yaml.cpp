// The YAML plan file (yaml-cpp), with one-line errors naming the line.
#include "plan_names.h"
#include "rule_fields.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace verbfault {

namespace {

using engine::FieldError;

[[noreturn]] void fail(std::string_view source, const YAML::Node& node, const std::string& what) {
  throw PlanError(std::string(source) + ":" + std::to_string(node.Mark().line + 1) + ": " + what);
}

// Where a document's content starts (its first node's mark, as
// YAML::Node::Mark gives it); nothing else of it is kept.
class FirstNodeMark : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& at, YAML::anchor_t) override { seen(at); }
  void OnAlias(const YAML::Mark& at, YAML::anchor_t) override { seen(at); }
  void OnScalar(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                const std::string&) override {
    seen(at);
  }
  void OnSequenceStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    seen(at);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    seen(at);
  }
  void OnMapEnd() override {}

 private:
  void seen(const YAML::Mark& at) {
    if (!mark) mark = at;
  }
};

// The line of a second document in `text`, if it has one (YAML::Load reads
// the first only). Not YAML::LoadAll: yaml-cpp 0.7 finds documents without
// end in some inputs ("," alone: found by fuzz_plan_yaml, a hang), so only
// the first two are asked for.
std::optional<int> second_document_line(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  FirstNodeMark first, second;
  if (!parser.HandleNextDocument(first) || !parser.HandleNextDocument(second)) return std::nullopt;
  return second.mark ? second.mark->line + 1 : 1;
}

std::string scalar(std::string_view source, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(source, node, key + " is not a single value: expected a scalar");
  return node.Scalar();
}

Rule parse_rule_node(std::string_view source, const YAML::Node& node) {
  if (!node.IsMap())
    fail(source, node, "a rule that is not a map: expected 'kind: ...' and fields");
  Rule rule;
  bool has_kind = false;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    try {
      if (key == "kind") {
        const std::string text = scalar(source, value, key);
        auto kind = engine::lookup(engine::fault_kind_names(), text);
        if (!kind)
          throw FieldError{"unknown fault kind '" + text + "': expected one of " +
                           engine::choices(engine::fault_kind_names())};
        rule.kind = *kind;
        has_kind = true;
      } else if (key == "window") {
        if (!value.IsSequence() || value.size() != 2)
          throw FieldError{"window: expected [start, end]"};
        engine::set_window(rule, scalar(source, value[0], key), scalar(source, value[1], key));
      } else {
        // An empty value (`proc:`) is the field's own error: "proc '': expected ...".
        engine::set_field(rule, key, value.IsNull() ? std::string() : scalar(source, value, key));
      }
    } catch (const FieldError& error) {
      // An empty value has no place of its own (yaml-cpp marks the next line).
      fail(source, value.IsDefined() && !value.IsNull() && key != "kind" ? value : entry.first,
           error.message);
    }
  }
  if (!has_kind)
    fail(source, node,
         "a rule without 'kind': expected one of " + engine::choices(engine::fault_kind_names()));
  validate(rule, std::string(source) + ":" + std::to_string(node.Mark().line + 1));
  return rule;
}

// A plain scalar YAML reads back as the same text: only the null words
// and a lone '-' (a block sequence entry) among the names a plan takes
// (rule names, process names) would read as something else.
std::string yaml_text(const std::string& text) {
  const bool plain = text != "null" && text != "Null" && text != "NULL" && text != "-";
  return plain ? text : "\"" + text + "\"";
}

void line(std::string& out, std::string_view key, const std::string& value) {
  out += "    ";
  out += key;
  out += ": ";
  out += value;
  out += "\n";
}

}  // namespace

Plan parse_plan_yaml(std::string_view text, std::string_view source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
    // A second document is an error rather than silently left out; asked
    // only of a plan whose first document is one (otherwise that is the
    // error).
    if (root.IsMap())
      if (const std::optional<int> line = second_document_line(text))
        throw PlanError(std::string(source) + ":" + std::to_string(*line) +
                        ": a second YAML document: expected one plan ('rules:' once, no '---' "
                        "after it)");
  } catch (const YAML::Exception& error) {
    throw PlanError(std::string(source) + ":" + std::to_string(error.mark.line + 1) +
                    ": not YAML (" + error.msg + "): expected a plan such as 'rules: [...]'");
  }
  if (!root.IsMap())
    throw PlanError(std::string(source) + ":1: " +
                    (root.IsNull() ? "an empty document" : "a document that is not a map") +
                    ": expected 'rules:' with a list of rules");
  Plan plan;
  bool has_rules = false;
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    if (key != "rules") fail(source, entry.first, "unknown key '" + key + "': expected rules");
    has_rules = true;
    const YAML::Node& rules = entry.second;
    if (rules.IsNull()) continue;
    if (!rules.IsSequence())
      fail(source, rules, "rules is not a list: expected '- kind: ...' items");
    for (const auto& rule : rules) plan.rules.push_back(parse_rule_node(source, rule));
  }
  if (!has_rules)
    throw PlanError(std::string(source) + ":1: no 'rules': expected 'rules:' with a list");
  return plan;
}

Plan parse_plan_file(const std::string& path) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0)
    throw PlanError(path + ": cannot open: " + std::strerror(errno) + ": expected a plan file");
  // An ifstream opens a directory and reads nothing: it would be "an
  // empty document".
  if (S_ISDIR(status.st_mode)) throw PlanError(path + ": is a directory: expected a plan file");
  std::ifstream in(path);
  if (!in)
    throw PlanError(path + ": cannot open: " + std::strerror(errno) + ": expected a plan file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw PlanError(path + ": cannot be read: expected a plan file");
  return parse_plan_yaml(text.str(), path);
}

std::string to_yaml(const Plan& plan) {
  if (plan.rules.empty()) return "rules: []\n";
  std::string out = "rules:\n";
  for (const Rule& rule : plan.rules) {
    out += "  - kind: " + std::string(to_string(rule.kind)) + "\n";
    if (rule.status) line(out, "status", std::string(to_string(*rule.status)));
    if (rule.event) line(out, "event", std::string(to_string(*rule.event)));
    if (rule.verb) line(out, "verb", std::string(to_string(*rule.verb)));
    if (rule.error) line(out, "error", errno_name(*rule.error));
    if (rule.polls) line(out, "polls", std::to_string(*rule.polls));
    if (rule.port) line(out, "port", std::to_string(*rule.port));
    if (rule.cm_event) line(out, "cm_event", std::string(to_string(*rule.cm_event)));
    if (rule.delay_ms) line(out, "delay_ms", std::to_string(*rule.delay_ms));
    const Selector& s = rule.selector;
    if (s.object) line(out, "object", to_string(*s.object));
    if (s.qp_type)
      line(out, "qp_type", std::string(engine::name_of(engine::qp_type_names(), *s.qp_type)));
    if (s.opcode) line(out, "opcode", std::string(to_string(*s.opcode)));
    if (s.side) line(out, "side", std::string(engine::name_of(engine::side_names(), *s.side)));
    if (s.wr_id) line(out, "wr_id", engine::hex(*s.wr_id));
    if (s.wr_id_mask != ~std::uint64_t{0}) line(out, "wr_id_mask", engine::hex(s.wr_id_mask));
    if (s.proc) line(out, "proc", yaml_text(to_string(*s.proc)));
    const Trigger& t = rule.trigger;
    switch (t.kind) {
      case Trigger::Kind::always:
        break;
      case Trigger::Kind::nth:
        line(out, "nth", std::to_string(t.n));
        break;
      case Trigger::Kind::every:
        line(out, "every", std::to_string(t.n));
        break;
      case Trigger::Kind::window:
        line(out, "window", "[" + std::to_string(t.from) + ", " + std::to_string(t.to) + "]");
        break;
      case Trigger::Kind::probability:
        line(out, "probability", engine::format_probability(t.probability));
        break;
    }
    if (rule.count) line(out, "count", std::to_string(*rule.count));
    if (!rule.name.empty()) line(out, "name", yaml_text(rule.name));
  }
  return out;
}

}  // namespace verbfault

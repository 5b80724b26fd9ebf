// The one-line form of a rule:
//   completion_error(rem_access_err) qp#1 type=rc opcode=send proc=1 nth=3 count=1
#include "fault_kinds.h"
#include "plan_names.h"
#include "rule_fields.h"

#include <cctype>

namespace verbfault {

namespace {

using engine::FieldError;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == separator) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> tokens(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// The parameters of each kind, in the order of the parentheses
// (fault_kinds.cpp).
std::vector<std::string_view> parameters(FaultKind kind) {
  std::vector<std::string_view> names;
  for (std::string_view name : engine::info(kind).parameters)
    if (!name.empty()) names.push_back(name);
  return names;
}

[[noreturn]] void fail(std::string_view source, std::string_view token, const std::string& what) {
  throw PlanError(std::string(source) + ": '" + std::string(token) + "': " + what);
}

}  // namespace

Rule parse_rule(std::string_view text, std::string_view source) {
  auto words = tokens(text);
  if (words.empty()) throw PlanError(std::string(source) + ": empty rule: expected a fault kind");
  Rule rule;
  std::string_view head = words[0];
  std::string_view params;
  if (auto open = head.find('('); open != std::string_view::npos) {
    if (head.back() != ')') fail(source, head, "unclosed '(': expected kind(parameters)");
    params = head.substr(open + 1, head.size() - open - 2);
    head = head.substr(0, open);
  }
  auto kind = engine::lookup(engine::fault_kind_names(), head);
  if (!kind)
    fail(source, words[0],
         "unknown fault kind: expected one of " + engine::choices(engine::fault_kind_names()));
  rule.kind = *kind;
  try {
    const auto names = parameters(rule.kind);
    if (!params.empty() || words[0].find('(') != std::string_view::npos) {
      auto values = split(params, ',');
      if (values.size() != names.size())
        throw FieldError{std::to_string(values.size()) + " parameter(s): expected " +
                         std::to_string(names.size()) + " for " + std::string(head)};
      for (std::size_t i = 0; i < names.size(); ++i)
        engine::set_field(rule, names[i], trim(values[i]));
    }
  } catch (const FieldError& error) {
    fail(source, words[0], error.message);
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    std::string_view word = words[i];
    try {
      if (word == "always") continue;
      const auto equals = word.find('=');
      if (equals == std::string_view::npos) {
        if (word.find('#') == std::string_view::npos)
          throw FieldError{"not an option: expected kind#index, key=value or always"};
        engine::set_field(rule, "object", word);
        continue;
      }
      std::string_view key = word.substr(0, equals);
      std::string_view value = word.substr(equals + 1);
      if (key == "type") {
        engine::set_field(rule, "qp_type", value);
      } else if (key == "p") {
        engine::set_field(rule, "probability", value);
      } else if (key == "window") {
        const auto dots = value.find("..");
        if (dots == std::string_view::npos) throw FieldError{"window: expected A..B"};
        engine::set_window(rule, value.substr(0, dots), value.substr(dots + 2));
      } else if (key == "wr_id") {
        const auto slash = value.find('/');
        engine::set_field(rule, "wr_id", value.substr(0, slash));
        if (slash != std::string_view::npos)
          engine::set_field(rule, "wr_id_mask", value.substr(slash + 1));
      } else if (key == "opcode" || key == "side" || key == "proc" || key == "nth" ||
                 key == "every" || key == "count" || key == "name") {
        engine::set_field(rule, key, value);
      } else {
        throw FieldError{
            "unknown option: expected type=, opcode=, side=, wr_id=, proc=, nth=, every=, "
            "window=, p=, count=, name="};
      }
    } catch (const FieldError& error) {
      fail(source, word, error.message);
    }
  }
  validate(rule, source);
  return rule;
}

Plan parse_rules(std::string_view text, std::string_view source) {
  Plan plan;
  for (std::string_view piece : split(text, ';')) {
    piece = trim(piece);
    if (!piece.empty()) plan.rules.push_back(parse_rule(piece, source));
  }
  return plan;
}

std::string to_cli(const Rule& rule) {
  std::string out(to_string(rule.kind));
  std::vector<std::string> params;
  if (rule.status) params.emplace_back(to_string(*rule.status));
  if (rule.event) params.emplace_back(to_string(*rule.event));
  if (rule.verb) params.emplace_back(to_string(*rule.verb));
  if (rule.error) params.push_back(errno_name(*rule.error));
  if (rule.polls) params.push_back(std::to_string(*rule.polls));
  if (rule.port) params.push_back(std::to_string(*rule.port));
  if (rule.cm_event) params.emplace_back(to_string(*rule.cm_event));
  if (rule.delay_ms) params.push_back(std::to_string(*rule.delay_ms));
  if (!params.empty()) {
    out += "(";
    for (std::size_t i = 0; i < params.size(); ++i) out += (i ? "," : "") + params[i];
    out += ")";
  }
  const Selector& s = rule.selector;
  if (s.object) out += " " + to_string(*s.object);
  if (s.qp_type)
    out += " type=" + std::string(engine::name_of(engine::qp_type_names(), *s.qp_type));
  if (s.opcode) out += " opcode=" + std::string(to_string(*s.opcode));
  if (s.side) out += " side=" + std::string(engine::name_of(engine::side_names(), *s.side));
  if (s.wr_id) {
    out += " wr_id=" + engine::hex(*s.wr_id);
    if (s.wr_id_mask != ~std::uint64_t{0}) out += "/" + engine::hex(s.wr_id_mask);
  }
  if (s.proc) out += " proc=" + to_string(*s.proc);
  const Trigger& t = rule.trigger;
  switch (t.kind) {
    case Trigger::Kind::always:
      break;
    case Trigger::Kind::nth:
      out += " nth=" + std::to_string(t.n);
      break;
    case Trigger::Kind::every:
      out += " every=" + std::to_string(t.n);
      break;
    case Trigger::Kind::window:
      out += " window=" + std::to_string(t.from) + ".." + std::to_string(t.to);
      break;
    case Trigger::Kind::probability:
      out += " p=" + engine::format_probability(t.probability);
      break;
  }
  if (rule.count) out += " count=" + std::to_string(*rule.count);
  if (!rule.name.empty()) out += " name=" + rule.name;
  return out;
}

}  // namespace verbfault

#include "rule_fields.h"

#include "plan_names.h"
#include "process_ref.h"

#include <cstdio>
#include <cstdlib>

namespace verbfault::engine {

namespace {

[[noreturn]] void fail(std::string found, std::string expected) {
  throw FieldError{std::move(found) + ": expected " + std::move(expected)};
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

template <class Enum>
Enum named(const std::vector<Named<Enum>>& table, std::string_view key, std::string_view value) {
  if (auto found = lookup(table, value)) return *found;
  fail("unknown " + std::string(key) + " " + quoted(value), "one of " + choices(table));
}

std::uint64_t number(std::string_view key, std::string_view value, std::uint64_t min,
                     std::uint64_t max) {
  auto parsed = parse_number(value);
  if (!parsed || *parsed < min || *parsed > max)
    fail(std::string(key) + " " + quoted(value),
         "a number from " + std::to_string(min) + " to " + std::to_string(max));
  return *parsed;
}

void set_trigger(Rule& rule, std::string_view key, Trigger trigger) {
  if (rule.trigger.kind != Trigger::Kind::always)
    fail("a second trigger '" + std::string(key) + "'",
         "at most one of nth, every, window, probability");
  rule.trigger = trigger;
}

}  // namespace

bool is_trigger_key(std::string_view key) {
  return key == "nth" || key == "every" || key == "window" || key == "probability";
}

void set_field(Rule& rule, std::string_view key, std::string_view value) {
  Selector& s = rule.selector;
  if (key == "status") {
    rule.status = named(status_names(), key, value);
  } else if (key == "event") {
    rule.event = named(event_names(), key, value);
  } else if (key == "verb") {
    rule.verb = named(verb_names(), key, value);
  } else if (key == "error") {
    auto error = parse_errno(value);
    if (!error)
      fail("error " + quoted(value), "an errno name such as ENOMEM, or a positive number");
    rule.error = *error;
  } else if (key == "polls") {
    rule.polls = static_cast<std::uint32_t>(number(key, value, 1, UINT32_MAX));
  } else if (key == "cm_event") {
    rule.cm_event = named(cm_event_names(), key, value);
  } else if (key == "delay_ms") {
    rule.delay_ms = static_cast<std::uint32_t>(number(key, value, 1, 60000));
  } else if (key == "port") {
    rule.port = static_cast<std::uint8_t>(number(key, value, 1, 255));
  } else if (key == "object") {
    auto ref = parse_object(value);
    // A thread is named in traces, but faults act on verbs objects.
    if (!ref || ref->kind == ObjectKind::thread)
      fail("object " + quoted(value),
           "kind#index with kind one of context, pd, mr, cq, srq, qp, ah, channel, cm_id");
    s.object = *ref;
  } else if (key == "qp_type") {
    s.qp_type = named(qp_type_names(), key, value);
  } else if (key == "opcode") {
    s.opcode = named(opcode_names(), key, value);
  } else if (key == "side") {
    s.side = named(side_names(), key, value);
  } else if (key == "wr_id") {
    s.wr_id = number(key, value, 0, UINT64_MAX);
  } else if (key == "wr_id_mask") {
    s.wr_id_mask = number(key, value, 0, UINT64_MAX);
  } else if (key == "proc") {
    auto proc = parse_process(value);
    if (!proc) fail("proc " + quoted(value), kProcessExpected);
    s.proc = std::move(*proc);
  } else if (key == "nth") {
    set_trigger(rule, key, {Trigger::Kind::nth, number(key, value, 1, UINT64_MAX), 0, 0, 0});
  } else if (key == "every") {
    set_trigger(rule, key, {Trigger::Kind::every, number(key, value, 1, UINT64_MAX), 0, 0, 0});
  } else if (key == "probability") {
    char* end = nullptr;
    const std::string text(value);
    const double p = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(p > 0.0 && p <= 1.0))
      fail("probability " + quoted(value), "a number in (0, 1]");
    set_trigger(rule, key, {Trigger::Kind::probability, 0, 0, 0, p});
  } else if (key == "count") {
    rule.count = number(key, value, 1, UINT64_MAX);
  } else if (key == "name") {
    const bool ok = !value.empty() && value.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyz"
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_.-") == std::string_view::npos;
    if (!ok) fail("name " + quoted(value), "letters, digits, '_', '.' or '-'");
    rule.name = std::string(value);
  } else {
    fail("unknown key " + quoted(key),
         "one of kind, status, event, verb, error, polls, port, cm_event, delay_ms, object, "
         "qp_type, opcode, side, "
         "wr_id, wr_id_mask, proc, nth, every, window, probability, count, name");
  }
}

void set_window(Rule& rule, std::string_view from, std::string_view to) {
  const std::uint64_t a = number("window start", from, 1, UINT64_MAX);
  const std::uint64_t b = number("window end", to, 1, UINT64_MAX);
  if (a >= b) fail("window " + std::string(from) + ".." + std::string(to), "a start below the end");
  set_trigger(rule, "window", {Trigger::Kind::window, 0, a, b, 0});
}

std::string format_probability(double p) {
  char buffer[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, p);
    if (std::strtod(buffer, nullptr) == p) break;
  }
  return buffer;
}

}  // namespace verbfault::engine

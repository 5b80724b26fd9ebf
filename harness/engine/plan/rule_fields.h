// The fields of a rule by their canonical key, shared by the YAML and the
// one-line forms so that both accept and write exactly the same rules.
#pragma once

#include "verbfault/plan.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace verbfault::engine {

// Thrown by set_field with the part after "<source>: ": "<found>: expected
// <what>"; the parsers add where.
struct FieldError {
  std::string message;
};

// Sets one field from its text (canonical keys: status, event, verb, error,
// polls, port, object, qp_type, opcode, side, wr_id, wr_id_mask, proc,
// nth, every, probability, count, name; window takes "A" and "B" through
// set_window). Throws FieldError.
void set_field(Rule& rule, std::string_view key, std::string_view value);
void set_window(Rule& rule, std::string_view from, std::string_view to);
// Whether `key` is a trigger key (nth, every, window, probability).
bool is_trigger_key(std::string_view key);

// Text of a probability that reads back to the same double.
std::string format_probability(double p);

}  // namespace verbfault::engine

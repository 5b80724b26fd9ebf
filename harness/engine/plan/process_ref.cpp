#include "process_ref.h"

#include "plan_names.h"

#include <cctype>

namespace verbfault::engine {

namespace {

bool name_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
         c == '-';
}

bool valid_name(std::string_view name) {
  // 255: NAME_MAX, the longest file name; a leading '-' would read as a
  // YAML list item, a leading '+' is no program's name.
  if (name.empty() || name.size() > 255 || name.front() == '-' || name.front() == '+') return false;
  for (char c : name)
    if (!name_character(c)) return false;
  // A name that reads as a number would come back as an index.
  return !parse_number(name);
}

}  // namespace

std::optional<ProcessRef> parse_process(std::string_view text) {
  if (auto number = parse_number(text)) {
    if (*number > kMaxProcessIndex) return std::nullopt;
    return ProcessRef{static_cast<std::uint32_t>(*number), {}};
  }
  if (!valid_name(text)) return std::nullopt;
  return ProcessRef{std::nullopt, std::string(text)};
}

bool valid_process(const ProcessRef& ref) {
  if (ref.index) return *ref.index <= kMaxProcessIndex && ref.name.empty();
  return valid_name(ref.name);
}

bool for_process(const Rule& rule, const ProcessIdentity& self) {
  const std::optional<ProcessRef>& proc = rule.selector.proc;
  if (!proc) return true;
  if (proc->index) return self.index == proc->index;
  return proc->name == self.name;
}

}  // namespace verbfault::engine

namespace verbfault {

std::string to_string(const ProcessRef& ref) {
  return ref.index ? std::to_string(*ref.index) : ref.name;
}

}  // namespace verbfault

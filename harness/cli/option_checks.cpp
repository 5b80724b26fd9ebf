#include "option_checks.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace verbfault::cli {

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

std::string in_quotes(const std::string& text) {
  return "'" + text + "'";
}

}  // namespace

CLI::Validator whole_number(std::uint64_t low, std::uint64_t high) {
  const std::string expected =
      "expected a whole number " + std::to_string(low) + ".." + std::to_string(high);
  return CLI::Validator(
      [low, high, expected](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!all_digits(text) || error != std::errc() || end != text.data() + text.size() ||
            value < low || value > high)
          return in_quotes(text) + ": " + expected;
        return {};
      },
      "INT in [" + std::to_string(low) + " - " + std::to_string(high) + "]");
}

CLI::Validator seconds(bool zero_allowed) {
  const std::string expected =
      zero_allowed ? "expected seconds, a number >= 0" : "expected seconds, a number > 0";
  return CLI::Validator(
      [zero_allowed, expected](std::string& text) -> std::string {
        // strtod alone would take " 5", "inf", "0x1p3" and "nan".
        const bool plain = !text.empty() &&
                           text.find_first_not_of("0123456789.") == std::string::npos &&
                           text.find_first_of("0123456789") != std::string::npos;
        char* end = nullptr;
        errno = 0;
        const double value = plain ? std::strtod(text.c_str(), &end) : -1;
        if (!plain || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value) ||
            value < 0 || (value == 0 && !zero_allowed))
          return in_quotes(text) + ": " + expected;
        return {};
      },
      zero_allowed ? "SECONDS >= 0" : "SECONDS > 0");
}

CLI::Validator existing_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        struct stat status {};
        if (stat(path.c_str(), &status) != 0)
          return in_quotes(path) + ": " + std::strerror(errno) + ": expected an existing file";
        if (S_ISDIR(status.st_mode)) return in_quotes(path) + ": is a directory: expected a file";
        return {};
      },
      "FILE");
}

std::string one_line(const CLI::ParseError& error, const std::string& subcommand) {
  std::string what = error.what();
  // By type: get_name() is the subcommand's name for some (ExtrasError).
  auto is = [&error]<class Kind>(Kind*) { return dynamic_cast<const Kind*>(&error) != nullptr; };
  const std::string help =
      "see verbfault" + (subcommand.empty() ? "" : " " + subcommand) + " --help";
  // After the first ": " CLI11 names what it did not expect.
  const auto colon = what.find(": ");
  if (is(static_cast<CLI::ExtrasError*>(nullptr)) && colon != std::string::npos) {
    std::string extras = what.substr(colon + 2);
    if (!extras.empty() && extras.front() == '[' && extras.back() == ']')
      extras = extras.substr(1, extras.size() - 2);
    const bool option = !extras.empty() && extras.front() == '-';
    what = extras + (option ? ": unknown option" : ": unexpected argument") +
           (option ? "" : " (the program to run goes after --)");
  } else if (is(static_cast<CLI::ArgumentMismatch*>(nullptr)) && colon != std::string::npos &&
             what.find("missing") != std::string::npos) {
    what = what.substr(0, colon) + ": expected a value";
  } else if (is(static_cast<CLI::RequiredError*>(nullptr)) &&
             what.find("subcommand") != std::string::npos) {
    what =
        "expected a command: run, sweep, minimize, replay, conform, swarm, plan, trace or "
        "provider-report";
  } else if (!what.empty()) {
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  }
  for (char& c : what)
    if (c == '\n') c = ' ';
  return "verbfault: " + what + " (" + help + ")";
}

}  // namespace verbfault::cli

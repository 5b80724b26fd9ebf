// The checks of verbfault's numeric and file options, one wording for all:
// a bad value is "--jobs: '0': expected a whole number 1..1024", the same
// strictness everywhere (no sign, no spaces, no trailing characters: what
// the seed parser takes, engine/plan). CLI11 runs them on the text given,
// before converting it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace verbfault::cli {

// Decimal digits only, from `low` to `high`.
CLI::Validator whole_number(std::uint64_t low, std::uint64_t high);
// Seconds: a decimal number (with a fraction or not), above 0 or, when
// `zero_allowed`, at least 0.
CLI::Validator seconds(bool zero_allowed);
// A file that exists and is not a directory.
CLI::Validator existing_file();

// A CLI11 parse error as one line, "verbfault: --bogus: unknown option
// (see verbfault run --help)": `subcommand` is the one being parsed ("" for
// the command itself).
std::string one_line(const CLI::ParseError& error, const std::string& subcommand);

}  // namespace verbfault::cli

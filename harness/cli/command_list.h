// The commands of a run: the words after `--`, one command or several
// separated by a lone `:::` (`verbfault run -- server ARGS ::: client
// ARGS`). The words stay as given everywhere a run is described (the
// reproduce line, replay files, sweeps): the separator is an ordinary
// word to them, and `verbfault run` is the one place that splits it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace verbfault::cli {

inline constexpr std::string_view kCommandSeparator = ":::";

using Command = std::vector<std::string>;

// The commands in order. Throws std::invalid_argument with one line when
// there is none or one is empty ("':::' with no command after it: expected
// the next command (the client) there").
std::vector<Command> split_commands(const std::vector<std::string>& words);

// Where each command's program is in `words` (0, and the word after each
// separator): what replay resolves to the program as found now.
std::vector<std::size_t> program_positions(const std::vector<std::string>& words);

}  // namespace verbfault::cli

#include "command_list.h"

#include <stdexcept>

namespace verbfault::cli {

std::vector<Command> split_commands(const std::vector<std::string>& words) {
  if (words.empty()) throw std::invalid_argument("expected the program to run after --");
  std::vector<Command> commands(1);
  for (const std::string& word : words) {
    if (word != kCommandSeparator) {
      commands.back().push_back(word);
      continue;
    }
    if (commands.back().empty())
      throw std::invalid_argument(
          commands.size() == 1
              ? "':::' with no command before it: expected the first command (the server) there"
              : "two ':::' with no command between them: expected a command there");
    commands.emplace_back();
  }
  if (commands.back().empty())
    throw std::invalid_argument(
        "':::' with no command after it: expected the next command (the client) there");
  return commands;
}

std::vector<std::size_t> program_positions(const std::vector<std::string>& words) {
  std::vector<std::size_t> positions;
  if (!words.empty()) positions.push_back(0);
  for (std::size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == kCommandSeparator) positions.push_back(i + 1);
  return positions;
}

}  // namespace verbfault::cli

// Writing a report file whole, or saying why not: a report that is lost
// without a word is worse than none.
#pragma once

#include <filesystem>
#include <string_view>

namespace verbfault::reports {

// Writes `text` to `path` (replacing it); throws std::runtime_error naming
// the path and the system's reason when any byte cannot be written.
void write_text_file(const std::filesystem::path& path, std::string_view text);

}  // namespace verbfault::reports

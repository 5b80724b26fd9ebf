#include "text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace verbfault::reports {

void write_text_file(const std::filesystem::path& path, std::string_view text) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr)
    throw std::runtime_error("cannot write '" + path.string() + "': " + std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const int write_errno = errno;
  // fclose flushes: a full disk shows up here as often as in fwrite.
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed)
    throw std::runtime_error("cannot write '" + path.string() +
                             "': " + std::strerror(written ? errno : write_errno));
}

}  // namespace verbfault::reports

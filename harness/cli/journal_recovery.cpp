#include "journal_recovery.h"

#include "journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace verbfault::cli {

namespace fs = std::filesystem;

void recover_journal(const std::string& trace, const std::string& who) {
  const std::string journal = trace + ".journal";
  std::error_code ignored;
  if (!fs::exists(journal, ignored)) return;
  const int fd = ::open(trace.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "verbfault: cannot write the trace '%s': %s (its journal '%s' is kept)\n",
                 trace.c_str(), std::strerror(errno), journal.c_str());
    return;
  }
  std::string error;
  const long long records = observers::journal::render_file(journal, fd, error);
  ::close(fd);
  if (records < 0) {
    std::fprintf(stderr, "verbfault: %s (the journal is kept)\n", error.c_str());
    return;
  }
  fs::remove(journal, ignored);
  std::fprintf(stderr,
               "verbfault: %s ended before writing its trace: %lld record%s recovered "
               "from its journal into %s\n",
               who.c_str(), records, records == 1 ? "" : "s", trace.c_str());
}

}  // namespace verbfault::cli

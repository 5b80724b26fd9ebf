#include "journal_recovery.h"

#include "journal.h"
#include "trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace verbfault::cli {

namespace fs = std::filesystem;

bool recover_journal(const std::string& trace, int status, const std::string& who) {
  const std::string journal = trace + ".journal";
  std::error_code ignored;
  if (!fs::exists(journal, ignored)) return true;
  if (status == exit_status::kUsage) return true;
  std::string error;
  const int fd = observers::open_trace_file(trace, error);
  if (fd < 0) {
    std::fprintf(stderr, "verbfault: --trace '%s': %s (its journal '%s' is kept)\n", trace.c_str(),
                 error.c_str(), journal.c_str());
    return false;
  }
  const long long records = observers::journal::render_file(journal, fd, error);
  if (::close(fd) != 0 && records >= 0 && errno != EINTR) {
    std::fprintf(stderr, "verbfault: --trace '%s': cannot write: %s (its journal '%s' is kept)\n",
                 trace.c_str(), std::strerror(errno), journal.c_str());
    return false;
  }
  if (records < 0) {
    std::fprintf(stderr, "verbfault: --trace '%s': %s (its journal '%s' is kept)\n", trace.c_str(),
                 error.c_str(), journal.c_str());
    return false;
  }
  fs::remove(journal, ignored);
  std::fprintf(stderr,
               "verbfault: %s ended before writing its trace: %lld record%s recovered "
               "from its journal into %s\n",
               who.c_str(), records, records == 1 ? "" : "s", trace.c_str());
  return true;
}

}  // namespace verbfault::cli

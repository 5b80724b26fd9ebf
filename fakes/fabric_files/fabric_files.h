// The files a local fabric leaves in the file system, named in one place:
// the simulated device creates them (sim/wire/status_table.cpp) and
// `verbfault run` removes those of a fabric it named for one run once the
// run has ended (harness/cli/run_group.cpp). A library of its own, apart
// from the device: the command line may know where a fabric's files are
// without linking, or seeing the headers of, the simulated device.
#pragma once

#include <string>
#include <string_view>

namespace verbfault::sim::wire {

// The layout of the status table file (sim/wire/status_table.cpp). It is
// in the file's name, so that a table a process of another verbfault
// version left (the user's default fabric lives as long as /dev/shm) is
// never mistaken for this one's, and needs no removing by hand.
inline constexpr int kStatusTableLayout = 2;

// "/dev/shm/verbfault-fabric-<fabric>.v<layout>".
std::string status_table_path(std::string_view fabric);

// Removes the fabric's status table: 0 when it is gone (or was never
// there), else the errno of unlink(2). Members that still map it keep
// their mapping; one that joins later creates a new table.
int remove_status_table(std::string_view fabric);

}  // namespace verbfault::sim::wire

// The same stack addresses in every run of a program, whatever the
// harness's own settings say. execve(2) copies the argument and environment
// strings to the top of the new stack and builds argv[] and envp[] below
// them (the System V x86-64 ABI, "Initial Process Stack"), so with address
// randomization off (personality(2) ADDR_NO_RANDOMIZE, as every run) every
// stack address of the program moves with the environment's size: with the
// digits of the seed, the pid in VERBFAULT_FINDINGS, the trace's path, and
// between a run from exec and a fork server's child (cli/fork_server.h),
// whose server was started without the seed's settings. A program that
// takes a stack address as a wr_id, or a hang report that names a condition
// variable on the stack, would then differ between `verbfault run --seed S`
// and seed S of a sweep.
#pragma once

namespace verbfault::cli {

// In the child about to exec the program, after every setenv of the
// harness: pads the VERBFAULT_* variables, in number and in bytes, to a
// fixed shape with VERBFAULT_PAD_<i> variables (which nothing reads). The
// rest of the environment is the user's and is left as it is. Allocates
// (setenv): not for a process with other threads.
void pad_environment_to_fixed_shape();

}  // namespace verbfault::cli

/* A small MPI program of the project's own for the stacks tests: rank 0
 * sends 1 MiB to rank 1 and gets it back, rank 0 checks every byte, then
 * every rank takes part in an allreduce. Rank 0 prints one result line,
 * which scenarios/stacks/run_stack.sh checks:
 *   mpi_pingpong: N ranks, 1 MiB round trip intact, allreduce S (expected S)
 * Exit status 0 only when the bytes came back intact and the sum is right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kBytes = 1 << 20 };

static char pattern(int i) {
  return (char)(i * 7 + 3);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char* buffer = malloc(kBytes);
  if (buffer == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  for (int i = 0; i < kBytes; ++i) buffer[i] = rank == 0 ? pattern(i) : 0;
  int intact = 1;
  if (size >= 2 && rank == 0) {
    MPI_Send(buffer, kBytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
    for (int i = 0; i < kBytes; ++i) buffer[i] = 0;  /* what comes back must be rank 1's */
    MPI_Recv(buffer, kBytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < kBytes && intact; ++i) intact = buffer[i] == pattern(i);
  } else if (size >= 2 && rank == 1) {
    MPI_Recv(buffer, kBytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buffer, kBytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
  }
  long mine = rank + 1, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const long expected = (long)size * (size + 1) / 2;
  if (rank == 0)
    printf("mpi_pingpong: %d ranks, 1 MiB round trip %s, allreduce %ld (expected %ld)\n", size,
           size < 2 ? "not made" : intact ? "intact" : "CORRUPT", sum, expected);
  free(buffer);
  MPI_Finalize();
  return rank == 0 && (size < 2 || !intact || sum != expected) ? 1 : 0;
}

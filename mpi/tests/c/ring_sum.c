/* The same source for weft-mpicc and MPICH's mpicc_abi (standard ABI only, no extensions):
 * a ring exchange and two reductions; every rank prints one line that depends on the job. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long token = 1000 + rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_LONG, (rank + 1) % size, 3, &got, 1, MPI_LONG, (rank + size - 1) % size, 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long sum = 0, max = 0;
    MPI_Allreduce(&got, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&got, &max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    printf("rank %d of %d got %ld sum %ld max %ld\n", rank, size, got, sum, rank == 0 ? max : -1L);
    return MPI_Finalize();
}

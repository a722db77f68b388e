/* MPI_ERRORS_ARE_FATAL, the default: an invalid rank ends the job with a message. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int x = 0;
    MPI_Init(&argc, &argv);
    MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
    printf("not reached\n");
    MPI_Finalize();
    return 0;
}

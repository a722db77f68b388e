/* Whether libfabric is mapped into this process after MPI_Init (weft loads it only for the
 * network transport: not when every rank shares the host, yes across virtual nodes). Every
 * rank prints "rank R libfabric loaded|not loaded" after a barrier that crossed the
 * transports. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) {
        perror("/proc/self/maps");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char line[4096];
    int loaded = 0;
    while (fgets(line, sizeof line, maps))
        if (strstr(line, "/libfabric.so")) loaded = 1;
    fclose(maps);
    printf("rank %d libfabric %s\n", rank, loaded ? "loaded" : "not loaded");
    return MPI_Finalize();
}

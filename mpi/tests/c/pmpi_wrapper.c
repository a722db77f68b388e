/* A profiling wrapper in the program itself: MPI_Send and MPI_Recv are defined here, count their
 * calls and forward to PMPI_Send / PMPI_Recv. Rank 0 sends three messages to rank 1, which checks
 * their contents; each rank checks that its wrappers saw its calls, and that in the library
 * (looked up with dlsym) MPI_Send is an alias of PMPI_Send while the program's MPI_Send is its
 * own. Prints "pmpi_wrapper ok rank R" when every check passes, else "pmpi_wrapper FAIL ...". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>

static int send_calls, recv_calls;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    send_calls++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
    recv_calls++;
    return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

#define CHECK(cond, what)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("pmpi_wrapper FAIL rank %d: %s\n", rank, what); \
            return 1;                                              \
        }                                                          \
    } while (0)

int main(int argc, char **argv) {
    int rank = -1;
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 3; i++) {
        int data[4] = {i, i + 1, i + 2, i + 3};
        if (rank == 0) {
            CHECK(MPI_Send(data, 4, MPI_INT, 1, 5, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send");
        } else if (rank == 1) {
            int got[4] = {-1, -1, -1, -1};
            CHECK(MPI_Recv(got, 4, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Recv");
            CHECK(got[0] == i && got[3] == i + 3, "received data");
        }
    }
    CHECK(send_calls == (rank == 0 ? 3 : 0), "the MPI_Send wrapper did not see the sends");
    CHECK(recv_calls == (rank == 1 ? 3 : 0), "the MPI_Recv wrapper did not see the receives");

    void *lib = dlopen("libmpi_abi.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL, "libmpi_abi.so.1 is not loaded");
    void *lib_send = dlsym(lib, "MPI_Send"), *lib_psend = dlsym(lib, "PMPI_Send");
    CHECK(lib_send != NULL && lib_send == lib_psend, "the library's MPI_Send is not its PMPI_Send");
    CHECK(lib_send != (void *)&MPI_Send, "the program's MPI_Send is the library's");
    dlclose(lib);

    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("pmpi_wrapper ok rank %d\n", rank);
    return 0;
}

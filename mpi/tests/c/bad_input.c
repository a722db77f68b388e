/* Bad input through weft's MPI library: every call returns its error class through the error
 * handler, the user's handler sees each code, nothing crashes and the library keeps working.
 * Run with WEFT_MPI_INITIAL_ERRHANDLER=return (the call before MPI_Init returns). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int calls, last_code, fails;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    calls++;
    last_code = *code;
}

#define EXPECT(call, want)                                                              \
    do {                                                                                \
        int rc_ = (call), cls_ = -1;                                                    \
        MPI_Error_class(rc_, &cls_);                                                    \
        if (cls_ != (want)) {                                                           \
            printf("FAIL %s: class %d, want %d\n", #call, cls_, (want));                \
            fails++;                                                                    \
        }                                                                               \
    } while (0)

int main(int argc, char **argv)
{
    int buf[4] = {0}, rank, len;
    char text[MPI_MAX_ERROR_STRING];

    /* Before MPI_Init there is no communicator: the initial handler returns the error. */
    if (MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS) {
        printf("FAIL a call before MPI_Init succeeded\n");
        fails++;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(count_errors, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);

    MPI_Comm dup, freed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    freed = dup;
    MPI_Comm_free(&dup);
    EXPECT(MPI_Send(buf, 1, MPI_INT, 0, 0, freed), MPI_ERR_COMM);
    EXPECT(MPI_Barrier((MPI_Comm)(intptr_t)0x7fff12345678), MPI_ERR_COMM);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);

    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    EXPECT(MPI_Send(buf, 1, pair, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE); /* not committed */
    EXPECT(MPI_Send(buf, 1, (MPI_Datatype)(intptr_t)0x7fff1000, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Allreduce(buf, buf + 2, -3, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);

    /* Handles freed after a successful call on them (which the library may remember). */
    int size2, in[2] = {1, 2}, out[2] = {0, 0};
    MPI_Comm_size(MPI_COMM_WORLD, &size2);
    MPI_Comm used;
    MPI_Comm_dup(MPI_COMM_WORLD, &used);
    MPI_Comm_set_errhandler(used, eh);
    MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, used);
    MPI_Bcast(out, 2, MPI_INT, 0, used);
    if (size2 >= 2 && rank < 2)
        EXPECT(rank == 0 ? MPI_Send(in, 2, MPI_INT, 1, 7, used)
                         : MPI_Recv(out, 2, MPI_INT, 0, 7, used, MPI_STATUS_IGNORE),
               MPI_SUCCESS);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    MPI_Allreduce(in, out, 1, two, MPI_SUM, MPI_COMM_WORLD);
    if (out[0] != size2 || out[1] != 2 * size2) {
        printf("FAIL allreduce of a contiguous type: %d %d\n", out[0], out[1]);
        fails++;
    }
    MPI_Comm stale = used;
    MPI_Datatype stale_type = two;
    MPI_Type_free(&two);
    EXPECT(MPI_Allreduce(in, out, 1, stale_type, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Comm_free(&used);
    EXPECT(MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, stale), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(out, 2, MPI_INT, 0, stale), MPI_ERR_COMM);
    EXPECT(MPI_Send(in, 2, MPI_INT, 0, 7, stale), MPI_ERR_COMM);

    EXPECT(MPI_Send(buf, 1, MPI_INT, 99, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    if (calls != 12 || last_code != MPI_ERR_RANK) {
        printf("FAIL the handler saw %d errors (last %d), want 12 (last MPI_ERR_RANK)\n", calls, last_code);
        fails++;
    }
    MPI_Error_string(MPI_ERR_RANK, text, &len);
    if (!strstr(text, "99")) {
        printf("FAIL the error string names no rank: %s\n", text);
        fails++;
    }

    /* Still working. */
    MPI_Type_commit(&pair);
    MPI_Type_free(&pair);
    int one = 1, sum = 0, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) {
        printf("FAIL allreduce after the errors: %d\n", sum);
        fails++;
    }
    MPI_Errhandler_free(&eh);
    if (!fails)
        printf("bad_input ok rank %d\n", rank);
    MPI_Finalize();
    return fails != 0;
}

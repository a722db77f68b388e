/* A few calls through weft's own mpi.h (and mpi-ext.h): point-to-point, a reduction, error
 * strings, address arithmetic, MPI_Pcontrol, and an unsupported function, which must report
 * MPI_ERR_UNSUPPORTED_OPERATION through the error handler (MPI_ERRORS_RETURN here) with its
 * name in the message. Prints "smoke ok rank R" when every check passes, else "smoke FAIL ...". */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond, what)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            printf("smoke FAIL rank %d: %s\n", rank, what); \
            return 1;                                       \
        }                                                   \
    } while (0)

int main(int argc, char **argv) {
    int rank = -1, size = 0, version = 0, subversion = 0;
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_version(&version, &subversion);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION, "MPI_Get_version");

    /* A ring: each rank sends its rank to the next. */
    int token = rank * 10, got = -1;
    MPI_Status st;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    CHECK(MPI_Sendrecv(&token, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "MPI_Sendrecv");
    CHECK(got == prev * 10 && st.MPI_SOURCE == prev && st.MPI_TAG == 7, "ring value/status");
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 1, "MPI_Get_count");

    double x = rank + 1.0, sum = 0.0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size + 1) / 2.0, "MPI_Allreduce");

    char buf[16];
    MPI_Aint base = (MPI_Aint)(intptr_t)&buf[0];
    CHECK(MPI_Aint_add(base, 5) == (MPI_Aint)(intptr_t)&buf[5], "MPI_Aint_add");
    CHECK(MPI_Aint_diff((MPI_Aint)(intptr_t)&buf[9], base) == 9, "MPI_Aint_diff");
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS, "MPI_Pcontrol");

    int abi_major = -1, abi_minor = -1, abi_flag = 0;
    CHECK(MPI_Abi_get_version(&abi_major, &abi_minor) == MPI_SUCCESS, "MPI_Abi_get_version");
    CHECK(abi_major == MPI_ABI_VERSION && abi_minor == MPI_ABI_SUBVERSION, "ABI version 1.0");
    MPI_Info abi_info;
    char abi_val[MPI_MAX_INFO_VAL];
    int abi_len = MPI_MAX_INFO_VAL;
    CHECK(MPI_Abi_get_info(&abi_info) == MPI_SUCCESS, "MPI_Abi_get_info");
    MPI_Info_get_string(abi_info, "mpi_aint_size", &abi_len, abi_val, &abi_flag);
    CHECK(abi_flag && abi_val[0] == '0' + (int)sizeof(MPI_Aint), "mpi_aint_size");
    MPI_Info_free(&abi_info);

    /* An unsupported function reports on MPI_COMM_SELF's handler (no object). */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Win win = MPI_WIN_NULL;
    int rc = MPI_Win_fence(0, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Win_fence class");
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "MPI_Win_fence is not implemented by weft") != NULL, msg);

    MPI_Barrier(MPI_COMM_WORLD);
    printf("smoke ok rank %d\n", rank);
    return MPI_Finalize();
}

/* MPI_Comm_spawn / MPI_Comm_get_parent / MPI_Intercomm_merge through weft's MPI library.
 *
 * Started with 2 ranks: they spawn 2 copies of this program (argument "child"), exchange
 * messages with them over the intercommunicator, merge it (parents first) and run an
 * allreduce over the merged communicator. Then a spawn beyond the universe's room must fail
 * with MPI_ERR_SPAWN, filling the error codes. Every process prints what it checked; any
 * mismatch aborts. With the argument "alone" (no launcher), the spawn must fail. With
 * "victim", one of the 2 children dies by SIGKILL: the parents and the other child must see
 * MPIX_ERR_PROC_FAILED on a receive from it. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what, int rank) {
    if (!ok) {
        fprintf(stderr, "rank %d: check failed: %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm parent, inter, merged;
    MPI_Comm_get_parent(&parent);
    if (argc > 1 && strcmp(argv[argc - 1], "alone") == 0) {
        /* Started without a launcher that can spawn: the spawn fails, naming the runtime. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int code = -1, cls = -1, len;
        MPI_Comm none = MPI_COMM_NULL;
        int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &none, &code);
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_SPAWN && code == rc && none == MPI_COMM_NULL, "spawn without a launcher", rank);
        char msg[MPI_MAX_ERROR_STRING];
        MPI_Error_string(rc, msg, &len);
        printf("alone: %s\n", msg);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && (strcmp(argv[argc - 1], "victim") == 0 || strcmp(argv[argc - 1], "doomed") == 0)) {
        /* A spawned process dies: its parents and its sibling learn it as a process failure. */
        MPI_Comm_get_parent(&parent);
        int doomed = strcmp(argv[argc - 1], "doomed") == 0;
        if (parent == MPI_COMM_NULL) {
            char *child_argv[] = {"doomed", NULL};
            MPI_Comm_spawn(argv[0], child_argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
        } else {
            inter = parent;
        }
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int x = 0, cls = -1;
        if (doomed && rank == 1) {
            fflush(stdout);
            raise(SIGKILL);
        }
        /* Parents wait for the dead child; the surviving child for its dead sibling. */
        int rc = parent == MPI_COMM_NULL ? MPI_Recv(&x, 1, MPI_INT, 1, 9, inter, MPI_STATUS_IGNORE)
                                         : MPI_Recv(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Error_class(rc, &cls);
        check(cls == MPIX_ERR_PROC_FAILED, "a receive from the dead child fails with MPIX_ERR_PROC_FAILED", rank);
        printf("%s %d: saw the child's death\n", parent == MPI_COMM_NULL ? "parent" : "child", rank);
        MPI_Finalize();
        return 0;
    }
    int is_child = argc > 1 && strcmp(argv[argc - 1], "child") == 0;
    check(is_child == (parent != MPI_COMM_NULL), "get_parent matches how the process started", rank);

    if (!is_child) {
        char *child_argv[] = {"child", NULL};
        int codes[2] = {-1, -1};
        int rc = MPI_Comm_spawn(argv[0], child_argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes);
        check(rc == MPI_SUCCESS, "spawn of 2 succeeds", rank);
        check(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "error codes are MPI_SUCCESS", rank);
    } else {
        inter = parent;
    }
    int lsize, rsize, lrank, inter_flag;
    MPI_Comm_test_inter(inter, &inter_flag);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    check(inter_flag, "the spawn gives an intercommunicator", rank);
    check(lsize == 2 && rsize == 2 && lrank == rank, "local and remote groups have 2 processes", rank);

    /* Each parent sends to the child of its rank, which answers with the value + 100. */
    int v = 10 * (rank + 1), got = -1;
    if (!is_child) {
        MPI_Send(&v, 1, MPI_INT, rank, 7, inter);
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 8, inter, &st);
        check(got == v + 100 && st.MPI_SOURCE == rank, "child's answer", rank);
    } else {
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, rank, 7, inter, &st);
        check(got == 10 * (rank + 1) && st.MPI_SOURCE == rank, "parent's message", rank);
        got += 100;
        MPI_Send(&got, 1, MPI_INT, rank, 8, inter);
    }

    MPI_Intercomm_merge(inter, is_child, &merged);
    int mrank, msize, sum = 0;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    check(msize == 4 && mrank == rank + (is_child ? 2 : 0), "merged: parents first", rank);
    int one = mrank + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    check(sum == 10, "allreduce over the merged communicator", rank);

    if (!is_child) {
        /* The universe holds 4 live processes (weft-run --universe-size 4): 4 more do not fit. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int codes[4] = {-1, -1, -1, -1};
        MPI_Comm none = MPI_COMM_NULL;
        int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 4, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &none, codes);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_SPAWN, "an oversized spawn fails with MPI_ERR_SPAWN", rank);
        check(rank != 0 || codes[0] == rc, "the root's error codes hold the error", rank);
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        if (rank == 0) printf("oversized spawn: %s\n", msg);
    }
    printf("%s %d: merged rank %d sum %d\n", is_child ? "child" : "parent", rank, mrank, sum);
    MPI_Comm_free(&merged);
    if (!is_child) MPI_Comm_free(&inter);
    MPI_Finalize();
    return 0;
}

/* MPI_Comm_idup is a non-blocking collective (standard ABI only, any number of ranks ≥ 2).
 *
 * 1. Rank 0 starts the duplication and then sends to rank 1, which receives before starting
 *    its own duplication: a library whose idup blocks until every member has called it
 *    deadlocks here.
 * 2. The new communicator has the old one's group and its own context: a message on it does
 *    not match a receive on the old one.
 * 3. Several duplications pending at once, one with info and one of a duplicate, a blocking
 *    duplication and communicators of one member created while they are pending, completed in
 *    reverse order: every communicator is distinct from every other.
 * 4. The duplicate of a communicator with a topology has that topology. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "rank %d: %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Rank 0 sends value i on comms[i] (same tag, in order); rank 1 receives on the comms in
 * reverse order: each gets its own value only if no two comms share a context. */
static void distinct(MPI_Comm *comms, int n) {
    if (rank == 0) {
        int vals[8];
        MPI_Request sends[8];
        for (int i = 0; i < n; i++) {
            vals[i] = i;
            MPI_Isend(&vals[i], 1, MPI_INT, 1, 7, comms[i], &sends[i]);
        }
        MPI_Waitall(n, sends, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        for (int i = n - 1; i >= 0; i--) {
            int got = -1;
            MPI_Recv(&got, 1, MPI_INT, 0, 7, comms[i], MPI_STATUS_IGNORE);
            check(got == i, "a message crossed communicators");
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check(size >= 2, "needs 2 ranks");

    /* 1: the order that deadlocks a blocking idup. */
    MPI_Comm a;
    MPI_Request r;
    int token = 42;
    if (rank == 0) {
        MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
        MPI_Send(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        token = 0;
        MPI_Recv(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    check(token == 42, "token");
    check(r == MPI_REQUEST_NULL, "the request is freed by the wait");

    /* 2: same group, own context. */
    int cmp, arank, asize;
    MPI_Comm_compare(MPI_COMM_WORLD, a, &cmp);
    check(cmp == MPI_CONGRUENT, "the duplicate is congruent");
    MPI_Comm_rank(a, &arank);
    MPI_Comm_size(a, &asize);
    check(arank == rank && asize == size, "rank and size");
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, a);
    check(sum == (long)size * (size + 1) / 2, "allreduce on the duplicate");
    MPI_Comm pair[2] = {MPI_COMM_WORLD, a};
    distinct(pair, 2);

    /* 3: several pending at once. One member's own communicators, made while they are
     * pending, must not take the context the pending ones agree on. */
    MPI_Group world_group, me_only;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &rank, &me_only);
    MPI_Comm solo_before, solo_during;
    if (rank == 0) MPI_Comm_create_group(MPI_COMM_WORLD, me_only, 11, &solo_before);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm b, c, d, e;
    MPI_Request rs[3];
    MPI_Comm_idup(MPI_COMM_WORLD, &b, &rs[0]);
    MPI_Comm_idup_with_info(a, info, &c, &rs[1]);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_idup(d, &e, &rs[2]);
    MPI_Comm_create_group(MPI_COMM_WORLD, me_only, 12, &solo_during);
    for (int i = 2; i >= 0; i--) MPI_Wait(&rs[i], MPI_STATUS_IGNORE);
    MPI_Info_free(&info);

    char value[16] = "";
    int flag = 0;
    MPI_Info got;
    MPI_Comm_get_info(c, &got);
    MPI_Info_get(got, "mpi_assert_no_any_tag", sizeof value - 1, value, &flag);
    MPI_Info_free(&got);
    check(flag, "idup_with_info keeps its hints");

    MPI_Comm all[6] = {MPI_COMM_WORLD, a, b, c, d, e};
    distinct(all, 6);
    /* Each member's communicator of itself alone is apart from the duplicates too: a message
     * to itself on it is not received on any of them. */
    int self_msg = 99, self_got = -1;
    MPI_Request self_send;
    MPI_Isend(&self_msg, 1, MPI_INT, 0, 3, solo_during, &self_send);
    for (int i = 0; i < 6; i++) {
        int pending = 0;
        MPI_Iprobe(rank, 3, all[i], &pending, MPI_STATUS_IGNORE);
        check(!pending, "a message to oneself crossed into a duplicate");
    }
    MPI_Recv(&self_got, 1, MPI_INT, 0, 3, solo_during, MPI_STATUS_IGNORE);
    MPI_Wait(&self_send, MPI_STATUS_IGNORE);
    check(self_got == 99, "solo message");

    /* 4: a ring's duplicate is a ring: each rank gathers its two neighbours' ranks. */
    MPI_Comm ring, ring2;
    int dims[1] = {size}, periods[1] = {1}, nb[2] = {-1, -1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Comm_idup(ring, &ring2, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    int topo = MPI_UNDEFINED;
    MPI_Topo_test(ring2, &topo);
    check(topo == MPI_CART, "the duplicate keeps the topology");
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, nb, 1, MPI_INT, ring2);
    check(nb[0] == (rank + size - 1) % size && nb[1] == (rank + 1) % size, "ring neighbours");
    MPI_Comm_free(&ring2);
    MPI_Comm_free(&ring);

    MPI_Barrier(e);
    MPI_Comm *frees[] = {&a, &b, &c, &d, &e, &solo_during};
    for (int i = 0; i < 6; i++) MPI_Comm_free(frees[i]);
    if (rank == 0) MPI_Comm_free(&solo_before);
    MPI_Group_free(&me_only);
    MPI_Group_free(&world_group);
    printf("idup ok rank %d\n", rank);
    return MPI_Finalize();
}

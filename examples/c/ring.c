/* ring.c: the weft C API in one page.
 *
 * 1. Ring exchange: every rank sends a rank-stamped buffer to its right neighbour and receives
 *    its left neighbour's, for sizes 0, 1, 4, ..., 1 MiB (eager and rendezvous paths), with
 *    weft_isend / weft_irecv / weft_waitall, checking every byte.
 * 2. A token passed once around the ring with blocking weft_send / weft_recv.
 * 3. A wildcard receive: rank 0 receives one message from every other rank with
 *    WEFT_ANY_SOURCE / WEFT_ANY_TAG and checks who sent what from the status.
 *
 * Build: cc -I include examples/c/ring.c -L target/debug -lweft -Wl,-rpath,target/debug
 * Run:   weft-run -n 4 ./ring
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != WEFT_SUCCESS) {                                                           \
            fprintf(stderr, "ring: %s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,         \
                    weft_error_string(rc_), weft_last_error());                              \
            weft_abort(1, "ring failed");                                                    \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

#define FAIL(...)                                                                            \
    do {                                                                                     \
        fprintf(stderr, "ring: rank %d: ", rank);                                            \
        fprintf(stderr, __VA_ARGS__);                                                        \
        fputc('\n', stderr);                                                                 \
        weft_abort(1, "ring check failed");                                                  \
        return 1;                                                                            \
    } while (0)

static unsigned char stamp(int rank, size_t i, size_t len) {
    return (unsigned char)(rank * 31 + i * 7 + len);
}

int main(void) {
    CHECK(weft_init());
    weft_comm world;
    int rank, size;
    CHECK(weft_comm_world(&world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* 1. ring exchange over sizes 0 .. 1 MiB */
    const size_t max = (size_t)1 << 20;
    unsigned char *sbuf = malloc(max), *rbuf = malloc(max);
    if (!sbuf || !rbuf) FAIL("out of memory");
    int nsizes = 0;
    for (size_t len = 0; len <= max; len = len ? len * 4 : 1) {
        for (size_t i = 0; i < len; i++) sbuf[i] = stamp(rank, i, len);
        memset(rbuf, 0xee, max);
        weft_request reqs[2];
        weft_status sts[2];
        CHECK(weft_irecv(rbuf, len, prev, 10, world, &reqs[0]));
        CHECK(weft_isend(sbuf, len, next, 10, world, &reqs[1]));
        CHECK(weft_waitall(2, reqs, sts));
        if (reqs[0] != WEFT_REQUEST_NULL || reqs[1] != WEFT_REQUEST_NULL)
            FAIL("waitall left a request set");
        if (sts[0].source != prev || sts[0].tag != 10 || sts[0].count != len || sts[0].error)
            FAIL("len %zu: status {%d, %d, %zu, %d}", len, sts[0].source, sts[0].tag,
                 sts[0].count, sts[0].error);
        for (size_t i = 0; i < len; i++)
            if (rbuf[i] != stamp(prev, i, len)) FAIL("len %zu: byte %zu differs", len, i);
        if (len < max && rbuf[len] != 0xee) FAIL("len %zu: wrote past the message", len);
        nsizes++;
    }

    /* 2. a token once around the ring (blocking calls) */
    int token = -1;
    if (size > 1) {
        weft_status st;
        if (rank == 0) {
            token = 1;
            CHECK(weft_send(&token, sizeof token, next, 20, world));
            CHECK(weft_recv(&token, sizeof token, prev, 20, world, &st));
        } else {
            CHECK(weft_recv(&token, sizeof token, prev, 20, world, &st));
            token += 1;
            CHECK(weft_send(&token, sizeof token, next, 20, world));
        }
        if (st.source != prev || st.count != sizeof token) FAIL("token status");
        if (rank == 0 && token != size) FAIL("token %d after one round, expected %d", token, size);
    }

    /* 3. wildcard receive at rank 0 */
    if (rank == 0) {
        int seen = 0;
        for (int k = 1; k < size; k++) {
            int who = -1;
            weft_status st;
            CHECK(weft_recv(&who, sizeof who, WEFT_ANY_SOURCE, WEFT_ANY_TAG, world, &st));
            if (st.source != who || st.tag != 100 + who || st.count != sizeof who)
                FAIL("wildcard: payload %d from status {%d, %d, %zu}", who, st.source, st.tag,
                     st.count);
            seen |= 1 << who;
        }
        if (size > 1 && seen != ((1 << size) - 2)) FAIL("wildcard: seen mask %#x", seen);
        printf("wildcard: rank 0 received from all %d peers with WEFT_ANY_SOURCE/WEFT_ANY_TAG\n",
               size - 1);
    } else {
        CHECK(weft_send(&rank, sizeof rank, 0, 100 + rank, world));
    }

    CHECK(weft_barrier(world));
    printf("ring: rank %d of %d ok: %d sizes up to %zu bytes, token %d\n", rank, size, nsizes,
           max, token);
    fflush(stdout);
    free(sbuf);
    free(rbuf);
    CHECK(weft_finalize());
    return 0;
}

/* frontends.c: the scenario of examples/frontends.rs through the C ABI; tests/frontends.rs
 * checks that both print the same lines. Run under weft-run -n 4. Each step prints
 * "frontends: rank R <step> <result>" with errors as their weft_error code. Rank 3 SIGKILLs
 * itself after the failure-free steps. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "weft.h"

static int me = -1;

#define CHECK(call)                                                                          \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != WEFT_SUCCESS) {                                                           \
            fprintf(stderr, "frontends: rank %d: %s: %s\n", me, #call, weft_last_error());   \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

int main(void) {
    weft_comm world, dup, half, small;
    int n, r, sz;
    uint64_t v, flag;
    unsigned char b[8], small_buf[4], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    weft_status st;
    size_t k;
    int failed[4];

    setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines, written before the SIGKILL */
    CHECK(weft_init());
    CHECK(weft_comm_world(&world));
    CHECK(weft_comm_rank(world, &me));
    CHECK(weft_comm_size(world, &n));
    if (n != 4) {
        fprintf(stderr, "run with weft-run -n 4\n");
        return 1;
    }
    printf("frontends: rank %d size %d\n", me, n);

    /* Ring of 8-byte values. */
    v = (uint64_t)me * 10;
    CHECK(weft_send(&v, 8, (me + 1) % n, 5, world));
    CHECK(weft_recv(&v, 8, (me + n - 1) % n, 5, world, NULL));
    printf("frontends: rank %d ring %llu\n", me, (unsigned long long)v);

    /* Bad input: a destination outside the communicator, a truncated receive. */
    printf("frontends: rank %d bad-dest %d\n", me, weft_send(b, 8, n, 0, world));
    if (me == 0) {
        CHECK(weft_send(ones, 8, 1, 7, world));
    } else if (me == 1) {
        r = weft_recv(small_buf, 4, 0, 7, world, &st);
        printf("frontends: rank %d truncate %d %zu\n", me, r, st.count);
    }

    /* Collectives. */
    {
        int64_t mine = me + 1, sum = 0;
        int32_t x = me == 2 ? 77 : 0;
        CHECK(weft_allreduce(&mine, &sum, 1, WEFT_INT64, WEFT_OP_SUM, world));
        printf("frontends: rank %d allreduce %lld\n", me, (long long)sum);
        CHECK(weft_bcast(&x, 1, WEFT_INT32, 2, world));
        printf("frontends: rank %d bcast %d\n", me, x);
        printf("frontends: rank %d bad-root %d\n", me, weft_bcast(&x, 1, WEFT_INT32, n, world));
    }
    flag = ~(1ull << me) & 0xff;
    CHECK(weft_comm_agree(world, &flag));
    printf("frontends: rank %d agree %#llx\n", me, (unsigned long long)flag);
    CHECK(weft_comm_dup(world, &dup));
    CHECK(weft_comm_split(dup, me % 2, -me, &half));
    CHECK(weft_comm_rank(half, &r));
    CHECK(weft_comm_size(half, &sz));
    printf("frontends: rank %d split %d %d\n", me, r, sz);

    /* Failure and recovery. */
    CHECK(weft_comm_set_uniform(world, 1));
    if (me == 3) {
        kill(getpid(), SIGKILL);
    }
    printf("frontends: rank %d uniform-barrier %d\n", me, weft_barrier(world));
    CHECK(weft_comm_ack_failed(world, &k));
    printf("frontends: rank %d ack %zu\n", me, k);
    CHECK(weft_comm_get_failed(world, failed, 4, &k));
    printf("frontends: rank %d failed [", me);
    for (size_t i = 0; i < k; i++) {
        printf(i ? ", %d" : "%d", failed[i]);
    }
    printf("]\n");
    flag = 0xff;
    CHECK(weft_comm_agree(world, &flag));
    printf("frontends: rank %d agree-acked %#llx\n", me, (unsigned long long)flag);
    if (me == 0) {
        CHECK(weft_comm_revoke(world));
    }
    printf("frontends: rank %d recv-revoked %d\n", me,
           weft_recv(b, 8, WEFT_ANY_SOURCE, 99, world, NULL));
    CHECK(weft_comm_shrink(world, &small));
    {
        int64_t mine, sum = 0;
        CHECK(weft_comm_rank(small, &r));
        CHECK(weft_comm_size(small, &sz));
        mine = r + 1;
        CHECK(weft_allreduce(&mine, &sum, 1, WEFT_INT64, WEFT_OP_SUM, small));
        printf("frontends: rank %d shrunk %d %d %lld\n", me, r, sz, (long long)sum);
    }
    CHECK(weft_finalize());
    printf("frontends: rank %d done\n", me);
    return 0;
}

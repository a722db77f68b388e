/* dgrp.c: the DGRP C ABI under weft-run, failure free: bad settings are rejected, the
 * diagnosis runs with a pluggable test task, every round barrier's view is printed (the Rust
 * side checks that all ranks print the same), counters are filled, stop ends it. Prints
 * "dgrp: rank R round K view a,b,..." per round and "dgrp: rank R ok" at the end. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "weft.h"

static int rank = -1, failures = 0;

#define EXPECT(call, code)                                                                   \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != (code)) {                                                                 \
            fprintf(stderr, "dgrp: rank %d: line %d: %s returned %d (%s), expected %s\n",    \
                    rank, __LINE__, #call, rc_, weft_last_error(), #code);                   \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define ASSERT(cond)                                                                         \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "dgrp: rank %d: line %d: %s\n", rank, __LINE__, #cond);          \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* The test task: a pure function of its argument; counts its calls in *ctx. */
static uint64_t task(uint64_t arg, void *ctx) {
    (*(uint64_t *)ctx)++;
    uint64_t x = arg;
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Busy for `secs`, calling weft all along so that tests are answered. */
static void compute(weft_comm world, double secs) {
    double t0 = now_s();
    int flag;
    while (now_s() - t0 < secs) EXPECT(weft_iprobe(WEFT_ANY_SOURCE, 999, world, &flag, NULL), WEFT_SUCCESS);
}

int main(void) {
    weft_comm world;
    int size = 0, ranks[64];
    size_t n = 0;
    uint64_t calls = 0;
    EXPECT(weft_init(), WEFT_SUCCESS);
    EXPECT(weft_comm_world(&world), WEFT_SUCCESS);
    EXPECT(weft_comm_rank(world, &rank), WEFT_SUCCESS);
    EXPECT(weft_comm_size(world, &size), WEFT_SUCCESS);

    /* Not started: typed errors, nothing else. */
    EXPECT(weft_dgrp_view(ranks, 64, &n), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_round_barrier(ranks, 64, &n), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_stop(), WEFT_ERR_ARG);
    /* Bad settings. */
    EXPECT(weft_dgrp_start(0, 2.5, 5), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_start(100000, 0.5, 5), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_start(100000, 2.5, 0), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_start_with_task(100000, 2.5, 5, 7, NULL, NULL), WEFT_ERR_ARG);

    EXPECT(weft_dgrp_start_with_task(100000, 2.5, 5, 7, task, &calls), WEFT_SUCCESS);
    EXPECT(weft_dgrp_start(100000, 2.5, 5), WEFT_ERR_ARG); /* already on */
    EXPECT(weft_dgrp_view(ranks, 64, NULL), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_view(NULL, 3, &n), WEFT_ERR_ARG);
    EXPECT(weft_dgrp_view(NULL, 0, &n), WEFT_SUCCESS);
    ASSERT(n == (size_t)size);

    for (int k = 0; k < 6; k++) {
        compute(world, 0.25);
        EXPECT(weft_dgrp_round_barrier(ranks, 64, &n), WEFT_SUCCESS);
        ASSERT(n >= 1 && n <= (size_t)size);
        char line[512];
        int off = snprintf(line, sizeof line, "dgrp: rank %d round %d view ", rank, k);
        for (size_t i = 0; i < n && i < 64; i++)
            off += snprintf(line + off, sizeof line - off, "%s%d", i ? "," : "", ranks[i]);
        printf("%s\n", line);
    }

    uint32_t events[64];
    weft_dgrp_stats st;
    memset(&st, 0, sizeof st);
    EXPECT(weft_dgrp_counters(events, 64, &n, &st), WEFT_SUCCESS);
    ASSERT(n == (size_t)size);
    ASSERT(st.tests > 0 && st.answered > 0 && st.rounds == 6);
    /* The tester computed the task once; every answered test ran it. */
    ASSERT(calls >= st.answered + 1);
    EXPECT(weft_dgrp_counters(NULL, 0, &n, NULL), WEFT_SUCCESS);
    EXPECT(weft_dgrp_stop(), WEFT_SUCCESS);
    EXPECT(weft_dgrp_stop(), WEFT_ERR_ARG);
    EXPECT(weft_barrier(world), WEFT_SUCCESS);
    EXPECT(weft_finalize(), WEFT_SUCCESS);
    if (failures == 0) printf("dgrp: rank %d ok\n", rank);
    return failures != 0;
}

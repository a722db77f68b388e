/* p2p.c: non-blocking point-to-point, completion calls, probes and communicators through the
 * C API. Run under weft-run with any number of ranks (>= 2 exercises messaging); prints
 * "p2p: rank R ok" on success. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int rank = -1;

#define CHECK(call)                                                                          \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != WEFT_SUCCESS) {                                                           \
            fprintf(stderr, "p2p: rank %d: line %d: %s: %s (%s)\n", rank, __LINE__, #call,   \
                    weft_error_string(rc_), weft_last_error());                              \
            weft_abort(1, "p2p failed");                                                     \
        }                                                                                    \
    } while (0)

#define ASSERT(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "p2p: rank %d: line %d: %s: ", rank, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
            weft_abort(1, "p2p check failed");                                               \
        }                                                                                    \
    } while (0)

int main(void) {
    weft_comm world;
    int size, flag;
    CHECK(weft_initialized(&flag));
    ASSERT(flag == 0, "initialized before init");
    CHECK(weft_init());
    CHECK(weft_initialized(&flag));
    ASSERT(flag == 1, "not initialized after init");
    CHECK(weft_comm_world(&world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* all-to-all with isend/irecv/waitall: message from s to d is 1000*s + d, tag = s */
    {
        int64_t *out = calloc(size, sizeof *out), *in = calloc(size, sizeof *in);
        weft_request *reqs = calloc(2 * size, sizeof *reqs);
        weft_status *sts = calloc(2 * size, sizeof *sts);
        for (int p = 0; p < size; p++) {
            in[p] = -1;
            out[p] = 1000 * rank + p;
            CHECK(weft_irecv(&in[p], sizeof in[p], p, p, world, &reqs[p]));
        }
        for (int p = 0; p < size; p++) CHECK(weft_isend(&out[p], sizeof out[p], p, rank, world, &reqs[size + p]));
        CHECK(weft_waitall(2 * size, reqs, sts));
        for (int p = 0; p < size; p++) {
            ASSERT(in[p] == 1000 * p + rank, "from %d got %lld", p, (long long)in[p]);
            ASSERT(sts[p].source == p && sts[p].tag == p && sts[p].count == 8, "status from %d", p);
            ASSERT(reqs[p] == WEFT_REQUEST_NULL && reqs[size + p] == WEFT_REQUEST_NULL, "not nulled");
        }
        /* waitall over NULL requests is a no-op */
        CHECK(weft_waitall(2 * size, reqs, NULL));
        free(out); free(in); free(reqs); free(sts);
    }

    /* waitany: rank 0 collects one message from every peer */
    if (rank == 0) {
        int n = size - 1;
        int *in = calloc(size, sizeof *in);
        weft_request *reqs = calloc(size, sizeof *reqs);
        for (int k = 0; k < n; k++) CHECK(weft_irecv(&in[k], sizeof in[k], k + 1, 50, world, &reqs[k]));
        int got = 0;
        for (int k = 0; k < n; k++) {
            size_t idx = 12345;
            weft_status st;
            CHECK(weft_waitany(n, reqs, &idx, &st));
            ASSERT(idx < (size_t)n, "index %zu", idx);
            ASSERT(reqs[idx] == WEFT_REQUEST_NULL, "waitany did not null request %zu", idx);
            ASSERT(st.source == (int)idx + 1 && in[idx] == 7 * ((int)idx + 1), "waitany data/status");
            got |= 1 << idx;
        }
        ASSERT(n == 0 || got == (1 << n) - 1, "mask %#x", got);
        size_t idx = 0;
        CHECK(weft_waitany(n, reqs, &idx, NULL));
        ASSERT(idx == (size_t)WEFT_UNDEFINED, "waitany on NULL requests: index %zu", idx);
        free(in); free(reqs);
    } else {
        int v = 7 * rank;
        CHECK(weft_send(&v, sizeof v, 0, 50, world));
    }

    /* testall / test: exchange with neighbours, 64 KiB each way */
    {
        size_t len = 64 * 1024;
        unsigned char *s = malloc(len), *r = malloc(len);
        memset(s, rank + 1, len);
        memset(r, 0, len);
        weft_request reqs[2];
        weft_status sts[2];
        CHECK(weft_irecv(r, len, prev, 60, world, &reqs[0]));
        CHECK(weft_isend(s, len, next, 60, world, &reqs[1]));
        long polls = 0;
        do {
            CHECK(weft_testall(2, reqs, &flag, sts));
            polls++;
        } while (!flag);
        ASSERT(reqs[0] == WEFT_REQUEST_NULL && reqs[1] == WEFT_REQUEST_NULL, "testall did not null");
        ASSERT(sts[0].count == len && sts[0].source == prev, "testall status");
        for (size_t i = 0; i < len; i++) ASSERT(r[i] == (unsigned char)(prev + 1), "byte %zu", i);
        weft_request req = WEFT_REQUEST_NULL;
        CHECK(weft_test(&req, &flag, NULL));
        ASSERT(flag == 1, "test on a NULL request");
        /* weft_test until done */
        CHECK(weft_irecv(r, len, prev, 61, world, &reqs[0]));
        CHECK(weft_isend(s, 16, next, 61, world, &reqs[1]));
        weft_status st;
        do CHECK(weft_test(&reqs[0], &flag, &st)); while (!flag);
        ASSERT(reqs[0] == WEFT_REQUEST_NULL && st.count == 16 && st.tag == 61, "test status");
        CHECK(weft_wait(&reqs[1], NULL));
        CHECK(weft_wait(&reqs[1], &st)); /* NULL request: immediate success */
        free(s); free(r);
    }

    /* probe / iprobe */
    {
        char msg[200];
        memset(msg, 'a' + rank % 26, sizeof msg);
        weft_request sreq;
        CHECK(weft_isend(msg, 100 + rank, next, 70, world, &sreq));
        weft_status st;
        CHECK(weft_iprobe(prev, 71, world, &flag, &st));
        ASSERT(flag == 0, "iprobe found a message nobody sent");
        CHECK(weft_probe(WEFT_ANY_SOURCE, 70, world, &st));
        ASSERT(st.source == prev && st.tag == 70 && st.count == (size_t)(100 + prev), "probe status");
        CHECK(weft_iprobe(prev, WEFT_ANY_TAG, world, &flag, &st));
        ASSERT(flag == 1 && st.count == (size_t)(100 + prev), "iprobe after probe");
        char in[200];
        CHECK(weft_recv(in, st.count, st.source, st.tag, world, &st));
        ASSERT(in[0] == 'a' + prev % 26 && in[st.count - 1] == 'a' + prev % 26, "probed data");
        CHECK(weft_wait(&sreq, NULL));
    }

    /* dup: traffic on the duplicate never matches the parent */
    {
        weft_comm dup;
        CHECK(weft_comm_dup(world, &dup));
        int dr, ds;
        CHECK(weft_comm_rank(dup, &dr));
        CHECK(weft_comm_size(dup, &ds));
        ASSERT(dr == rank && ds == size, "dup rank/size");
        int a = 1, b = 2, x = 0, y = 0;
        weft_request reqs[4];
        CHECK(weft_isend(&a, sizeof a, next, 5, world, &reqs[0]));
        CHECK(weft_isend(&b, sizeof b, next, 5, dup, &reqs[1]));
        CHECK(weft_irecv(&y, sizeof y, prev, 5, dup, &reqs[2]));
        CHECK(weft_irecv(&x, sizeof x, prev, 5, world, &reqs[3]));
        CHECK(weft_waitall(4, reqs, NULL));
        ASSERT(x == 1 && y == 2, "dup isolation: world %d dup %d", x, y);
        weft_comm old = dup;
        CHECK(weft_comm_free(&dup));
        ASSERT(dup == WEFT_COMM_NULL, "free did not null the handle");
        ASSERT(weft_comm_rank(old, &dr) == WEFT_ERR_COMM, "freed communicator still usable");
    }

    /* split: color = parity, key = -rank (reverse order); rank 0 also tries UNDEFINED */
    {
        weft_comm sub;
        CHECK(weft_comm_split(world, rank % 2, -rank, &sub));
        int sr, ss;
        CHECK(weft_comm_rank(sub, &sr));
        CHECK(weft_comm_size(sub, &ss));
        int want_size = (size + 1 - rank % 2) / 2;
        int want_rank = 0;
        for (int r = rank + 2; r < size; r += 2) want_rank++;
        ASSERT(ss == want_size && sr == want_rank, "split: rank %d size %d", sr, ss);
        int v = rank, w = -1;
        weft_request reqs[2];
        CHECK(weft_irecv(&w, sizeof w, (sr + ss - 1) % ss, 1, sub, &reqs[0]));
        CHECK(weft_isend(&v, sizeof v, (sr + 1) % ss, 1, sub, &reqs[1]));
        CHECK(weft_waitall(2, reqs, NULL));
        ASSERT(w % 2 == rank % 2, "split: got %d from the other color", w);
        CHECK(weft_barrier(sub));
        CHECK(weft_comm_free(&sub));

        weft_comm none = 42;
        CHECK(weft_comm_split(world, rank == 0 ? WEFT_UNDEFINED : 3, 0, &none));
        if (rank == 0) {
            ASSERT(none == WEFT_COMM_NULL, "UNDEFINED split gave a communicator");
        } else {
            CHECK(weft_comm_size(none, &ss));
            ASSERT(ss == size - 1, "split size %d", ss);
            CHECK(weft_comm_free(&none));
        }
    }

    /* failure queries on a healthy job */
    {
        int failed[8];
        size_t n = 99;
        CHECK(weft_comm_get_failed(world, failed, 8, &n));
        ASSERT(n == 0, "%zu failed ranks", n);
        CHECK(weft_comm_get_failed(world, NULL, 0, &n));
        CHECK(weft_comm_ack_failed(world, &n));
        ASSERT(n == 0, "%zu acknowledged", n);
    }

    CHECK(weft_barrier(world));
    printf("p2p: rank %d ok\n", rank);
    fflush(stdout);
    CHECK(weft_finalize());
    CHECK(weft_initialized(&flag));
    ASSERT(flag == 0, "initialized after finalize");
    return 0;
}

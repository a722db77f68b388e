/* errors.c: every bad input returns its code, sets weft_last_error(), and leaves the library
 * usable. Run under weft-run with any number of ranks; prints "errors: rank R ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int rank = -1, failures = 0;

/* `call` must return `code`; a failure must leave a non-empty weft_last_error(). */
#define EXPECT(call, code)                                                                   \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        const char *le_ = weft_last_error();                                                 \
        if (rc_ != (code)) {                                                                 \
            fprintf(stderr, "errors: rank %d: line %d: %s returned %d (%s: %s), expected %s\n", \
                    rank, __LINE__, #call, rc_, weft_error_string(rc_), le_, #code);         \
            failures++;                                                                      \
        } else if ((code) != WEFT_SUCCESS && (le_ == NULL || le_[0] == '\0')) {              \
            fprintf(stderr, "errors: rank %d: line %d: %s: empty weft_last_error()\n", rank, \
                    __LINE__, #call);                                                        \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define ASSERT(cond)                                                                         \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "errors: rank %d: line %d: %s\n", rank, __LINE__, #cond);        \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define LAST_HAS(s) ASSERT(strstr(weft_last_error(), (s)) != NULL)

int main(void) {
    weft_comm world = 12345, dup;
    int size = -1, flag = -1, x = 0;
    char buf[64] = {0};
    weft_status st;
    weft_request req;

    /* ---- before init */
    EXPECT(weft_comm_world(&world), WEFT_ERR_NOT_INITIALIZED);
    ASSERT(world == 12345);
    EXPECT(weft_comm_rank(1, &x), WEFT_ERR_NOT_INITIALIZED);
    EXPECT(weft_send(buf, 1, 0, 0, 1), WEFT_ERR_NOT_INITIALIZED);
    EXPECT(weft_barrier(1), WEFT_ERR_NOT_INITIALIZED);
    req = WEFT_REQUEST_NULL;
    EXPECT(weft_wait(&req, NULL), WEFT_ERR_NOT_INITIALIZED);
    EXPECT(weft_finalize(), WEFT_ERR_NOT_INITIALIZED);
    LAST_HAS("weft_init");
    EXPECT(weft_initialized(&flag), WEFT_SUCCESS);
    ASSERT(flag == 0);
    EXPECT(weft_initialized(NULL), WEFT_ERR_ARG);

    /* ---- init */
    EXPECT(weft_init(), WEFT_SUCCESS);
    EXPECT(weft_init(), WEFT_ERR_ALREADY_INITIALIZED);
    EXPECT(weft_comm_world(&world), WEFT_SUCCESS);
    EXPECT(weft_comm_rank(world, &rank), WEFT_SUCCESS);
    EXPECT(weft_comm_size(world, &size), WEFT_SUCCESS);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* ---- bad rank */
    EXPECT(weft_send(buf, 4, size + 3, 0, world), WEFT_ERR_RANK);
    char want[96];
    snprintf(want, sizeof want, "invalid rank %d: communicator has %d ranks", size + 3, size);
    LAST_HAS(want);
    EXPECT(weft_send(buf, 4, -2, 0, world), WEFT_ERR_RANK);
    EXPECT(weft_send(buf, 4, WEFT_ANY_SOURCE, 0, world), WEFT_ERR_RANK);
    EXPECT(weft_isend(buf, 4, size, 0, world, &req), WEFT_ERR_RANK);
    EXPECT(weft_recv(buf, 4, -5, 0, world, NULL), WEFT_ERR_RANK);
    EXPECT(weft_irecv(buf, 4, size, 0, world, &req), WEFT_ERR_RANK);
    EXPECT(weft_probe(size, 0, world, NULL), WEFT_ERR_RANK);
    EXPECT(weft_iprobe(-3, 0, world, &flag, NULL), WEFT_ERR_RANK);

    /* ---- bad tag */
    EXPECT(weft_send(buf, 4, next, -1, world), WEFT_ERR_TAG);
    LAST_HAS("invalid tag");
    EXPECT(weft_send(buf, 4, next, WEFT_MAX_TAG + 1, world), WEFT_ERR_TAG);
    EXPECT(weft_isend(buf, 4, next, WEFT_ANY_TAG, world, &req), WEFT_ERR_TAG);
    EXPECT(weft_recv(buf, 4, prev, -7, world, NULL), WEFT_ERR_TAG);
    EXPECT(weft_iprobe(prev, -9, world, &flag, NULL), WEFT_ERR_TAG);

    /* ---- truncated receives (blocking and non-blocking) */
    {
        char big[64], small[16];
        memset(big, 'T', sizeof big);
        memset(small, 0, sizeof small);
        weft_request sreq;
        EXPECT(weft_isend(big, sizeof big, next, 7, world, &sreq), WEFT_SUCCESS);
        memset(&st, 0, sizeof st);
        EXPECT(weft_recv(small, sizeof small, prev, 7, world, &st), WEFT_ERR_TRUNCATE);
        LAST_HAS("truncated");
        ASSERT(st.count == sizeof big && st.source == prev && st.tag == 7);
        ASSERT(st.error == WEFT_ERR_TRUNCATE);
        ASSERT(small[0] == 'T' && small[15] == 'T');
        EXPECT(weft_wait(&sreq, NULL), WEFT_SUCCESS);

        EXPECT(weft_isend(big, sizeof big, next, 8, world, &sreq), WEFT_SUCCESS);
        EXPECT(weft_irecv(small, sizeof small, prev, 8, world, &req), WEFT_SUCCESS);
        memset(&st, 0, sizeof st);
        EXPECT(weft_wait(&req, &st), WEFT_ERR_TRUNCATE);
        ASSERT(req == WEFT_REQUEST_NULL);
        ASSERT(st.count == sizeof big && st.error == WEFT_ERR_TRUNCATE);
        EXPECT(weft_wait(&sreq, NULL), WEFT_SUCCESS);

        /* waitall reports per-request errors in the statuses */
        weft_request reqs[3];
        weft_status sts[3];
        char ok[64];
        EXPECT(weft_isend(big, sizeof big, next, 9, world, &reqs[0]), WEFT_SUCCESS);
        EXPECT(weft_irecv(small, sizeof small, prev, 9, world, &reqs[1]), WEFT_SUCCESS);
        EXPECT(weft_isend(big, sizeof big, next, 10, world, &sreq), WEFT_SUCCESS);
        EXPECT(weft_irecv(ok, sizeof ok, prev, 10, world, &reqs[2]), WEFT_SUCCESS);
        EXPECT(weft_waitall(3, reqs, sts), WEFT_ERR_TRUNCATE);
        ASSERT(reqs[0] == WEFT_REQUEST_NULL && reqs[1] == WEFT_REQUEST_NULL && reqs[2] == WEFT_REQUEST_NULL);
        ASSERT(sts[0].error == 0 && sts[1].error == WEFT_ERR_TRUNCATE && sts[2].error == 0);
        ASSERT(sts[1].count == sizeof big && sts[2].count == sizeof big);
        EXPECT(weft_wait(&sreq, NULL), WEFT_SUCCESS);
    }

    /* ---- freed / bogus communicators */
    EXPECT(weft_comm_dup(world, &dup), WEFT_SUCCESS);
    weft_comm stale = dup;
    EXPECT(weft_comm_free(&dup), WEFT_SUCCESS);
    ASSERT(dup == WEFT_COMM_NULL);
    EXPECT(weft_send(buf, 4, next, 0, stale), WEFT_ERR_COMM);
    LAST_HAS("invalid communicator");
    EXPECT(weft_recv(buf, 4, prev, 0, stale, NULL), WEFT_ERR_COMM);
    EXPECT(weft_comm_rank(stale, &x), WEFT_ERR_COMM);
    EXPECT(weft_barrier(stale), WEFT_ERR_COMM);
    EXPECT(weft_comm_free(&stale), WEFT_ERR_COMM);
    EXPECT(weft_comm_size(WEFT_COMM_NULL, &x), WEFT_ERR_COMM);
    EXPECT(weft_comm_dup(0x7777777700000001ULL, &dup), WEFT_ERR_COMM);
    weft_comm w2 = world;
    EXPECT(weft_comm_free(&w2), WEFT_ERR_ARG);
    ASSERT(w2 == world);
    EXPECT(weft_comm_split(world, -5, 0, &dup), WEFT_ERR_ARG);

    /* ---- NULL pointers */
    EXPECT(weft_comm_world(NULL), WEFT_ERR_ARG);
    LAST_HAS("NULL");
    EXPECT(weft_comm_rank(world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_size(world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_dup(world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_split(world, 0, 0, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_free(NULL), WEFT_ERR_ARG);
    EXPECT(weft_send(NULL, 4, next, 0, world), WEFT_ERR_ARG);
    EXPECT(weft_recv(NULL, 4, prev, 0, world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_isend(buf, 4, next, 0, world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_isend(NULL, 4, next, 0, world, &req), WEFT_ERR_ARG);
    EXPECT(weft_irecv(buf, 4, prev, 0, world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_wait(NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_test(NULL, &flag, NULL), WEFT_ERR_ARG);
    req = WEFT_REQUEST_NULL;
    EXPECT(weft_test(&req, NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_waitall(2, NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_waitany(2, NULL, (size_t *)buf, NULL), WEFT_ERR_ARG);
    EXPECT(weft_waitany(1, &req, NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_testall(1, &req, NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_iprobe(prev, 0, world, NULL, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_get_failed(world, NULL, 4, (size_t *)buf), WEFT_ERR_ARG);
    EXPECT(weft_comm_get_failed(world, (int *)buf, 4, NULL), WEFT_ERR_ARG);
    EXPECT(weft_comm_ack_failed(world, NULL), WEFT_ERR_ARG);
    /* zero-length transfers may pass NULL */
    EXPECT(weft_isend(NULL, 0, next, 11, world, &req), WEFT_SUCCESS);
    EXPECT(weft_recv(NULL, 0, prev, 11, world, &st), WEFT_SUCCESS);
    ASSERT(st.count == 0 && st.source == prev);
    EXPECT(weft_wait(&req, NULL), WEFT_SUCCESS);

    /* ---- invalid request handles */
    weft_request bogus = 0x0000000500000007ULL;
    EXPECT(weft_wait(&bogus, &st), WEFT_ERR_REQUEST);
    LAST_HAS("invalid request");
    ASSERT(bogus == 0x0000000500000007ULL);
    EXPECT(weft_test(&bogus, &flag, NULL), WEFT_ERR_REQUEST);
    {
        int v = rank, w = -1;
        weft_request r2;
        EXPECT(weft_irecv(&w, sizeof w, prev, 12, world, &req), WEFT_SUCCESS);
        EXPECT(weft_isend(&v, sizeof v, next, 12, world, &r2), WEFT_SUCCESS);
        weft_request copy = req;
        EXPECT(weft_wait(&req, NULL), WEFT_SUCCESS);
        ASSERT(req == WEFT_REQUEST_NULL && w == prev);
        EXPECT(weft_wait(&copy, NULL), WEFT_ERR_REQUEST); /* completed: stale */
        EXPECT(weft_wait(&req, NULL), WEFT_SUCCESS);     /* NULL: immediate success */
        EXPECT(weft_wait(&r2, NULL), WEFT_SUCCESS);
        weft_request two[2] = {copy, WEFT_REQUEST_NULL};
        EXPECT(weft_waitall(2, two, NULL), WEFT_ERR_REQUEST);
        size_t idx = 99;
        EXPECT(weft_waitany(2, two, &idx, NULL), WEFT_ERR_REQUEST);
        ASSERT(idx == 0);
    }

    /* ---- error strings */
    for (int c = WEFT_SUCCESS; c <= WEFT_ERR_INTERNAL; c++) {
        const char *s = weft_error_string(c);
        ASSERT(s != NULL && s[0] != '\0' && strcmp(s, "unknown error code") != 0);
    }
    ASSERT(strcmp(weft_error_string(9999), "unknown error code") == 0);
    ASSERT(strcmp(weft_error_string(-1), "unknown error code") == 0);

    /* ---- still usable: a ring exchange and a barrier */
    {
        uint64_t v = 0xabc000u + (uint64_t)rank, w = 0;
        weft_request reqs[2];
        EXPECT(weft_irecv(&w, sizeof w, prev, 13, world, &reqs[0]), WEFT_SUCCESS);
        EXPECT(weft_isend(&v, sizeof v, next, 13, world, &reqs[1]), WEFT_SUCCESS);
        EXPECT(weft_waitall(2, reqs, NULL), WEFT_SUCCESS);
        ASSERT(w == 0xabc000u + (uint64_t)prev);
        EXPECT(weft_barrier(world), WEFT_SUCCESS);
    }

    if (failures == 0) printf("errors: rank %d ok\n", rank);
    fflush(stdout);
    EXPECT(weft_finalize(), WEFT_SUCCESS);
    EXPECT(weft_comm_world(&world), WEFT_ERR_NOT_INITIALIZED);
    EXPECT(weft_finalize(), WEFT_ERR_NOT_INITIALIZED);
    return failures ? 1 : 0;
}

/* reinit_solver.c: global restart from C (weft_reinit), the C twin of
 * examples/reinit_solver.rs.
 *
 * A 1-D three-point smoothing iteration over size * CELLS cells with a halo exchange and an
 * allreduce per iteration, checkpointed to files every CKPT iterations. The resilient main
 * reloads the newest checkpoint every rank has (an allreduce-min over the versions on disk),
 * whatever weft_reinit_state() says: survivors and respawned ranks read the same files.
 * Every weft error goes back to weft_reinit as the main's return value: WEFT_ERR_REINIT
 * (a rollback) makes weft_reinit call the main again in the new epoch. Rank 0 compares the
 * final field bit for bit with a serial run.
 *
 * Run: weft-run -n N ./reinit_solver DIR ITERS [EPOCH:RANK@ITER ...]
 *      (RANK SIGKILLs itself at iteration ITER of epoch EPOCH)
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#define CELLS 32
#define CKPT 10
#define MAXK 16

static const char *dir;
static uint64_t iters;
static int nkills;
static long kill_epoch[MAXK], kill_rank[MAXK], kill_iter[MAXK];

#define TRY(call)                                                                            \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != WEFT_SUCCESS)                                                             \
            return rc_;                                                                      \
    } while (0)

static double initial(size_t i) { return (double)((i * 7919) % 1000) / 1000.0; }

static void step(const double *u, double *out, size_t n, const double *left, const double *right) {
    for (size_t i = 0; i < n; i++) {
        const double *l = i == 0 ? left : &u[i - 1];
        const double *r = i + 1 == n ? right : &u[i + 1];
        out[i] = (l && r) ? (*l + u[i] + *r) / 3.0 : u[i];
    }
}

static void path(char *buf, size_t len, int rank, uint64_t v) {
    snprintf(buf, len, "%s/c-rank-%d.v%llu", dir, rank, (unsigned long long)v);
}

/* The newest version on disk for this rank (0: none), keeping the last two. */
static uint64_t newest(int rank) {
    for (uint64_t v = iters / CKPT; v > 0; v--) {
        char p[4096];
        path(p, sizeof p, rank, v);
        FILE *f = fopen(p, "rb");
        if (f) {
            fclose(f);
            return v;
        }
    }
    return 0;
}

static int save(int rank, uint64_t v, const double *u) {
    char p[4096], tmp[4200];
    path(p, sizeof p, rank, v);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(u, sizeof(double), CELLS, f) != CELLS || fclose(f) != 0 || rename(tmp, p) != 0) {
        fprintf(stderr, "reinit_solver.c: cannot write %s\n", p);
        return -1;
    }
    if (v > 2) {
        path(p, sizeof p, rank, v - 2);
        remove(p);
    }
    return 0;
}

static int load(int rank, uint64_t v, double *u) {
    char p[4096];
    path(p, sizeof p, rank, v);
    FILE *f = fopen(p, "rb");
    int ok = f && fread(u, sizeof(double), CELLS, f) == CELLS;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

static int resilient_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    weft_comm world;
    int rank, size;
    TRY(weft_comm_world(&world));
    TRY(weft_comm_rank(world, &rank));
    TRY(weft_comm_size(world, &size));
    long epoch = (long)weft_reinit_epoch();
    int state = weft_reinit_state();
    double u[CELLS], next[CELLS];
    uint64_t v = newest(rank), agreed;
    TRY(weft_allreduce(&v, &agreed, 1, WEFT_UINT64, WEFT_OP_MIN, world));
    uint64_t it = 0;
    if (agreed > 0) {
        if (load(rank, agreed, u) != 0) {
            fprintf(stderr, "reinit_solver.c: rank %d: checkpoint %llu missing\n", rank, (unsigned long long)agreed);
            return -1;
        }
        it = agreed * CKPT;
    } else {
        for (size_t i = 0; i < CELLS; i++)
            u[i] = initial((size_t)rank * CELLS + i);
    }
    printf("reinit_solver.c: rank %d epoch %ld state %d resumes at iteration %llu\n", rank, epoch, state,
           (unsigned long long)it);
    fflush(stdout);
    for (; it < iters; it++) {
        for (int k = 0; k < nkills; k++)
            if (kill_epoch[k] == epoch && kill_rank[k] == rank && kill_iter[k] == (long)it)
                raise(SIGKILL);
        double lb = 0, rb = 0;
        weft_request reqs[4];
        size_t n = 0;
        if (rank > 0) {
            TRY(weft_irecv(&lb, sizeof lb, rank - 1, 1, world, &reqs[n++]));
            TRY(weft_isend(&u[0], sizeof(double), rank - 1, 1, world, &reqs[n++]));
        }
        if (rank + 1 < size) {
            TRY(weft_irecv(&rb, sizeof rb, rank + 1, 1, world, &reqs[n++]));
            TRY(weft_isend(&u[CELLS - 1], sizeof(double), rank + 1, 1, world, &reqs[n++]));
        }
        TRY(weft_waitall(n, reqs, NULL));
        step(u, next, CELLS, rank > 0 ? &lb : NULL, rank + 1 < size ? &rb : NULL);
        double change = 0, maxc;
        for (size_t i = 0; i < CELLS; i++) {
            double d = next[i] > u[i] ? next[i] - u[i] : u[i] - next[i];
            change = d > change ? d : change;
        }
        TRY(weft_allreduce(&change, &maxc, 1, WEFT_DOUBLE, WEFT_OP_MAX, world));
        memcpy(u, next, sizeof u);
        if ((it + 1) % CKPT == 0) {
            if (save(rank, (it + 1) / CKPT, u) != 0)
                return -1;
            TRY(weft_barrier(world));
        }
    }
    if (rank != 0)
        return weft_send(u, sizeof u, 0, 2, world);
    double *all = malloc(sizeof(double) * CELLS * (size_t)size);
    double *ref = malloc(sizeof(double) * CELLS * (size_t)size);
    double *tmp = malloc(sizeof(double) * CELLS * (size_t)size);
    if (!all || !ref || !tmp)
        return -1;
    memcpy(all, u, sizeof u);
    for (int r = 1; r < size; r++) {
        int rc = weft_recv(all + (size_t)r * CELLS, sizeof u, r, 2, world, NULL);
        if (rc != WEFT_SUCCESS) {
            free(all), free(ref), free(tmp);
            return rc;
        }
    }
    size_t total = (size_t)size * CELLS;
    for (size_t i = 0; i < total; i++)
        ref[i] = initial(i);
    for (uint64_t k = 0; k < iters; k++) {
        step(ref, tmp, total, NULL, NULL);
        memcpy(ref, tmp, sizeof(double) * total);
    }
    int same = memcmp(all, ref, sizeof(double) * total) == 0;
    printf("reinit_solver.c: answer %s (%d ranks, %llu iterations, final epoch %ld)\n", same ? "OK" : "FAILED", size,
           (unsigned long long)iters, epoch);
    free(all), free(ref), free(tmp);
    return same ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR ITERS [EPOCH:RANK@ITER ...]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    iters = strtoull(argv[2], NULL, 10);
    for (int a = 3; a < argc && nkills < MAXK; a++, nkills++)
        if (sscanf(argv[a], "%ld:%ld@%ld", &kill_epoch[nkills], &kill_rank[nkills], &kill_iter[nkills]) != 3) {
            fprintf(stderr, "bad kill %s\n", argv[a]);
            return 2;
        }
    int rc = weft_reinit(argc, argv, resilient_main);
    if (rc != WEFT_SUCCESS) {
        fprintf(stderr, "reinit_solver.c: weft_reinit: %s (%s)\n", weft_error_string(rc), weft_last_error());
        return 1;
    }
    return 0;
}

/*
 * osu_coll.c — the MPI peer of weft's collective latency benchmarks (`weft-bench --bench
 * allreduce,barrier,bcast`, benches/src/coll.rs; OSU method, keep the two in lock-step):
 * per size, `iters / 10` warm-up calls, then `iters` timed calls of the collective (sizes above
 * 8 KiB: a tenth of both), each allreduce and bcast timed on its own and followed by an untimed
 * barrier, barriers back to back (OSU 7.2's loops); each rank's mean time per call, averaged over ranks (MPI_Reduce of the
 * per-rank average, as osu_allreduce prints "Avg Latency"); repeated `reps` times, the median
 * printed as CSV `benchmark,size,impl,value,us` on rank 0. Sizes: allreduce (float sum,
 * size/4 elements) 4, 8, ..; barrier 0 only; bcast (bytes, root 0) 1, 2, 4, ..; all powers of
 * two in [min, max]. One untimed call afterwards checks the data.
 * usage: osu_coll IMPL [--bench allreduce,barrier,bcast] [--min N] [--max N] [--iters I] [--reps R]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void call(const char *b, size_t size, void *s, void *r) {
    if (!strcmp(b, "allreduce"))
        MPI_Allreduce(s, r, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(b, "barrier"))
        MPI_Barrier(MPI_COMM_WORLD);
    else
        MPI_Bcast(s, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static double once(const char *b, size_t size, int iters, int skip, void *s, void *r) {
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int is_bar = !strcmp(b, "barrier");
    double timed = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t0 = MPI_Wtime();
        call(b, size, s, r);
        double dt = MPI_Wtime() - t0;
        if (!is_bar) MPI_Barrier(MPI_COMM_WORLD);
        if (i >= skip) timed += dt;
    }
    double mine = timed * 1e6 / iters, sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *impl = argc > 1 ? argv[1] : "mpi", *benches = "allreduce,barrier,bcast";
    size_t min = 0, max = 8;
    int iters = 10000, reps = 5, rank, n;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bench")) benches = argv[i + 1];
        else if (!strcmp(argv[i], "--min")) min = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--max")) max = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char *s = calloc(max + 8, 1), *r = calloc(max + 8, 1);
    const char *all[3] = {"allreduce", "barrier", "bcast"};
    int bad = 0;
    for (int b = 0; b < 3; b++) {
        if (!strstr(benches, all[b])) continue;
        int is_ar = !strcmp(all[b], "allreduce"), is_bar = !strcmp(all[b], "barrier");
        for (size_t size = is_bar ? 0 : (is_ar ? 4 : 1); size <= (is_bar ? 0 : max); size = size * 2) {
            if (size < min && !is_bar) continue;
            int it = size > 8192 ? (iters / 10 > 0 ? iters / 10 : 1) : iters;
            double v[64];
            for (size_t i = 0; i < size; i++) ((char *)s)[i] = 0;
            for (int k = 0; k < reps; k++) v[k] = once(all[b], size, it, it / 10, s, r);
            qsort(v, reps, sizeof(double), cmp);
            /* data check: allreduce of 1.0f gives n; bcast delivers the root's bytes */
            if (is_ar) {
                for (size_t i = 0; i < size / 4; i++) ((float *)s)[i] = 1.0f;
                call(all[b], size, s, r);
                for (size_t i = 0; i < size / 4; i++) bad |= ((float *)r)[i] != (float)n;
            } else if (!is_bar) {
                for (size_t i = 0; i < size; i++) ((unsigned char *)s)[i] = rank ? 0 : (unsigned char)(i * 7 + 1);
                call(all[b], size, s, r);
                for (size_t i = 0; i < size; i++) bad |= ((unsigned char *)s)[i] != (unsigned char)(i * 7 + 1);
            }
            double med = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
            if (rank == 0) printf("%s,%zu,%s,%.3f,us\n", all[b], size, impl, med);
            fflush(stdout);
            if (is_bar) break;
        }
    }
    if (bad) fprintf(stderr, "osu_coll: rank %d: data check failed\n", rank);
    if (rank == 0) printf("# osu_coll: measurements done, finalizing\n");
    fflush(stdout);
    MPI_Finalize();
    return bad ? 3 : 0;
}

/*
 * osu_coll.c — the MPI peer of weft's collective latency measurement (OSU method):
 * per size, `skip` warm-up then `iters` timed calls of the collective; each rank's time per
 * call, averaged over ranks (MPI_Reduce of the per-rank average, as osu_allreduce prints
 * "Avg Latency"); repeated `reps` times, the median printed as CSV
 * `benchmark,size,impl,value,us` on rank 0. Benchmarks: allreduce (float sum, size/4
 * elements), barrier (size 0), bcast (bytes, root 0).
 * usage: osu_coll IMPL [--bench allreduce,barrier,bcast] [--max N] [--iters I] [--reps R]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double once(const char *b, size_t size, int iters, int skip, void *s, void *r) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double t0 = 0;
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (!strcmp(b, "allreduce"))
            MPI_Allreduce(s, r, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(b, "barrier"))
            MPI_Barrier(MPI_COMM_WORLD);
        else
            MPI_Bcast(s, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - t0) * 1e6 / iters, sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *impl = argc > 1 ? argv[1] : "mpi", *benches = "allreduce,barrier,bcast";
    size_t max = 8;
    int iters = 10000, reps = 5, rank;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bench")) benches = argv[i + 1];
        else if (!strcmp(argv[i], "--max")) max = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *s = calloc(max + 8, 1), *r = calloc(max + 8, 1);
    const char *all[3] = {"allreduce", "barrier", "bcast"};
    for (int b = 0; b < 3; b++) {
        if (!strstr(benches, all[b])) continue;
        for (size_t size = !strcmp(all[b], "barrier") ? 0 : (!strcmp(all[b], "allreduce") ? 4 : 1); size <= max;
             size = size ? size * 2 : max + 1) {
            double v[64];
            for (int k = 0; k < reps && k < 64; k++) v[k] = once(all[b], size, iters, iters / 10, s, r);
            qsort(v, reps, sizeof(double), cmp);
            if (rank == 0) printf("%s,%zu,%s,%.3f,us\n", all[b], size, impl, v[reps / 2]);
        }
    }
    MPI_Finalize();
    return 0;
}

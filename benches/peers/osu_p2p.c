/*
 * osu_p2p.c — the MPI peer of weft-bench's point-to-point benchmarks.
 *
 * Implements exactly the same four benchmarks as benches/src/pt2pt.rs (sizes and
 * counts in benches/src/counts.rs), with the
 * same sizes, iteration counts, warm-up, window, ack, repetitions and reduction,
 * and prints the same CSV rows (`benchmark,size,impl,value,unit`) on rank 0.
 *
 *   latency  ping-pong rank 0 <-> 1; one-way latency (us) = round trip / 2
 *   bw       window of 64 isend (rank 0) / irecv (rank 1), then a 4-byte ack; MB/s
 *   bibw     both ranks post 64 irecv + 64 isend per window; MB/s (both directions)
 *   mr       the bw pattern, reported as messages per second (sizes <= 8 KiB)
 *
 * Iterations: latency 10000 (<= 8 KiB) / 1000 (OSU defaults); window benchmarks
 * min(1000, max(20, 2^29 / (64 * size))) windows. Warm-up: 100 / 10, and a tenth (>= 2).
 * Noise handling: each size runs its warm-up once, then REPS timed loops of the full
 * iteration count; latency reports the median of the reps, bw/bibw/mr the maximum.
 * After the timed loops one untimed exchange into zeroed buffers checks the data.
 *
 * usage: osu_p2p IMPL [--bench latency,bw,bibw,mr] [--min N] [--max N]
 *                     [--iters-scale F] [--reps R]
 * Build: mpicc -O2 -o osu_p2p osu_p2p.c (weft-bench does this on demand).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC >= 11 misreads MPICH's MPI_STATUSES_IGNORE as a zero-length array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define WINDOW 64
#define LARGE_MESSAGE 8192
#define MR_MAX 8192
#define TAG_DATA 100
#define TAG_ACK 101

/* Iteration counts (must match counts.rs). Latency: the OSU defaults. Window benchmarks:
 * about WIN_BYTES per timed loop, between WIN_ITERS_MIN and WIN_ITERS_MAX windows; warm-up a
 * tenth of that, at least 2. Everything is scaled by --iters-scale. */
#define LAT_ITERS_SMALL 10000
#define LAT_SKIP_SMALL 100
#define LAT_ITERS_LARGE 1000
#define LAT_SKIP_LARGE 10
#define WIN_BYTES (1ull << 29)
#define WIN_ITERS_MIN 20
#define WIN_ITERS_MAX 1000

static int rank, nranks;
static double iters_scale = 1.0;
static int reps = 3;
static const char *impl = "mpi";

static long scaled(long base) {
    long v = (long)(base * iters_scale + 0.5);
    return v < 1 ? 1 : v;
}

static void counts(int latency, size_t size, long *iters, long *skip) {
    if (latency) {
        int small = size <= LARGE_MESSAGE;
        *iters = scaled(small ? LAT_ITERS_SMALL : LAT_ITERS_LARGE);
        *skip = scaled(small ? LAT_SKIP_SMALL : LAT_SKIP_LARGE);
    } else {
        unsigned long long it = WIN_BYTES / ((unsigned long long)WINDOW * size);
        if (it < WIN_ITERS_MIN) it = WIN_ITERS_MIN;
        if (it > WIN_ITERS_MAX) it = WIN_ITERS_MAX;
        *iters = scaled((long)it);
        *skip = scaled(it / 10 < 2 ? 2 : (long)(it / 10));
    }
}

static unsigned char pattern(size_t i, size_t size) {
    return (unsigned char)((i * 7 + size) % 251 + 1);
}

static void fill(unsigned char *buf, size_t size) {
    for (size_t i = 0; i < size; i++) buf[i] = pattern(i, size);
}

static void check(const unsigned char *buf, size_t size, const char *bench) {
    for (size_t i = 0; i < size; i++) {
        if (buf[i] != pattern(i, size)) {
            fprintf(stderr,
                    "osu_p2p[%s rank %d]: %s size %zu: data mismatch at byte %zu "
                    "(got %u, want %u)\n",
                    impl, rank, bench, size, i, buf[i], pattern(i, size));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median for latency (lower better), max for rates */
static double reduce(double *v, int n, int median) {
    qsort(v, n, sizeof(double), cmp_double);
    if (!median) return v[n - 1];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static unsigned char *sbuf, *rbuf;
/* --buffers single: every receive of a window into the same buffer (OSU's -b single) */
static int single_buf;

/* receive buffer of message w of a window */
static unsigned char *rbuf_of(int w, size_t size) { return single_buf ? rbuf : rbuf + (size_t)w * size; }

static void pingpong(size_t size, long n) {
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
}

static double run_latency(size_t size) {
    long iters, skip;
    double res[64];
    counts(1, size, &iters, &skip);
    MPI_Barrier(MPI_COMM_WORLD);
    pingpong(size, skip);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        pingpong(size, iters);
        double t1 = MPI_Wtime();
        res[r] = (t1 - t0) * 1e6 / (2.0 * (double)iters);
    }
    memset(rbuf, 0, size);
    MPI_Barrier(MPI_COMM_WORLD);
    pingpong(size, 1);
    if (rank < 2) check(rbuf, size, "latency");
    return reduce(res, reps, 1);
}

/* one window: rank 0 -> rank 1 (bw, mr), or both ways (bibw) */
static void windows(size_t size, long n, int bidir) {
    MPI_Request reqs[2 * WINDOW];
    char ack[4] = {0};
    for (long i = 0; i < n; i++) {
        if (bidir) {
            if (rank > 1) continue;
            int peer = 1 - rank;
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf_of(w, size), (int)size, MPI_BYTE, peer, TAG_DATA,
                          MPI_COMM_WORLD, &reqs[w]);
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &reqs[WINDOW + w]);
            MPI_Waitall(2 * WINDOW, reqs, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(rbuf_of(w, size), (int)size, MPI_BYTE, 0, TAG_DATA,
                          MPI_COMM_WORLD, &reqs[w]);
            MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
}

/* returns seconds per timed loop, reduced (min time == max rate) */
static double run_window(size_t size, int bidir, const char *bench, long *iters_out) {
    long iters, skip;
    double res[64];
    counts(0, size, &iters, &skip);
    MPI_Barrier(MPI_COMM_WORLD);
    windows(size, skip, bidir);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        windows(size, iters, bidir);
        double t1 = MPI_Wtime();
        res[r] = 1.0 / (t1 - t0); /* loops per second: max = fastest rep */
    }
    if (rank == 1 || (bidir && rank == 0)) memset(rbuf, 0, (size_t)WINDOW * size);
    MPI_Barrier(MPI_COMM_WORLD);
    windows(size, 1, bidir);
    if (rank == 1 || (bidir && rank == 0))
        for (int w = 0; w < (single_buf ? 1 : WINDOW); w++) check(rbuf_of(w, size), size, bench);
    *iters_out = iters;
    return reduce(res, reps, 0);
}

static int selected(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

static void row(const char *bench, size_t size, double value, const char *unit) {
    if (rank != 0) return;
    if (strcmp(unit, "us") == 0)
        printf("%s,%zu,%s,%.3f,%s\n", bench, size, impl, value, unit);
    else
        printf("%s,%zu,%s,%.2f,%s\n", bench, size, impl, value, unit);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *benches = "latency,bw,bibw,mr";
    size_t min = 1, max = 4u << 20;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (i == 1 && a[0] != '-') impl = a;
        else if (!strcmp(a, "--bench") && v) benches = argv[++i];
        else if (!strcmp(a, "--min") && v) min = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--max") && v) max = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--iters-scale") && v) iters_scale = atof(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--buffers") && v && (!strcmp(v, "single") || !strcmp(v, "multiple")))
            single_buf = !strcmp(argv[++i], "single");
        else {
            if (rank == 0) fprintf(stderr, "osu_p2p: bad argument '%s'\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    if (min < 1) min = 1;
    if (nranks < 2) {
        if (rank == 0) fprintf(stderr, "osu_p2p: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (max > (size_t)INT32_MAX / WINDOW) {
        if (rank == 0) fprintf(stderr, "osu_p2p: --max too large\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    if (posix_memalign((void **)&sbuf, 4096, max) ||
        posix_memalign((void **)&rbuf, 4096, (size_t)WINDOW * max)) {
        fprintf(stderr, "osu_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(rbuf, 0, (size_t)WINDOW * max);

    static const char *order[] = {"latency", "bw", "bibw", "mr"};
    for (int b = 0; b < 4; b++) {
        const char *bench = order[b];
        if (!selected(benches, bench)) continue;
        size_t top = b == 3 && max > MR_MAX ? MR_MAX : max;
        for (size_t size = 1; size <= top; size *= 2) {
            if (size < min) continue;
            fill(sbuf, size);
            if (b == 0) {
                row(bench, size, run_latency(size), "us");
            } else {
                long iters;
                double loops_per_s = run_window(size, b == 2, bench, &iters);
                double msgs = (double)iters * WINDOW * (b == 2 ? 2.0 : 1.0);
                if (b == 3)
                    row(bench, size, msgs * loops_per_s, "msg/s");
                else
                    row(bench, size, msgs * (double)size * loops_per_s / 1e6, "MB/s");
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Every row is out: tells the driver that only MPI_Finalize is left (some MPIs over TCP
     * occasionally deadlock in it; the driver then kills the job after a grace period). */
    if (rank == 0) {
        printf("# osu_p2p: measurements done, finalizing\n");
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

/* ft_ulfm.c: the Open MPI 5 + ULFM side of `weft-bench ft` (benches/src/ft/).
 *
 * Usage: mpirun --with-ft ulfm ... ft_ulfm SCENARIO [ITERS_SCALE]
 * SCENARIO: healthy | overhead | overhead-noft | kill-recover | detect-default
 * Rank 0 prints `FTROW,metric,ranks,ompi5-ulfm,value,unit` lines, the same metrics and the
 * same patterns as the weft worker (see ft/scenarios.rs): agree vs allreduce of one word
 * (agree is on an int, MPIX_Comm_agree; allreduce on a uint64 with BAND), iagree, shrink, the
 * plan A / plan B revoke benchmark of "Plan B: Interruption of Ongoing MPI Operations to
 * Support Failure Recovery" (Bouteiller, Bosilca, Dongarra, EuroMPI 2015), kill -> shrunk
 * allreduce, kill -> every survivor knows.
 * Stamps are CLOCK_MONOTONIC (shared by the processes of one host); the victim sends its
 * stamp on a duplicate communicator before SIGKILLing itself. Open MPI 5 has no
 * MPIX_Comm_ishrink. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <fcntl.h>

static const char *IMP = "ompi5-ulfm";
static int me, n;
static double scale = 1.0;

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t scaled(uint64_t base) {
    uint64_t v = (uint64_t)((double)base * scale + 0.5);
    return v ? v : 1;
}

static void emit(const char *metric, double v, const char *unit) {
    printf("FTROW,%s,%d,%s,%.3f,%s\n", metric, n, IMP, v, unit);
    fflush(stdout);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int k) {
    qsort(v, k, sizeof(double), cmp_d);
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

#define CHECK(call)                                                              \
    do {                                                                         \
        int rc_ = (call);                                                        \
        if (rc_ != MPI_SUCCESS) {                                                \
            fprintf(stderr, "ft_ulfm rank %d: %s failed (%d)\n", me, #call, rc_); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                        \
        }                                                                        \
    } while (0)

static const uint64_t WORD = ~(uint64_t)0;

static int allreduce(MPI_Comm c) {
    uint64_t o = 0;
    return MPI_Allreduce(&WORD, &o, 1, MPI_UINT64_T, MPI_BAND, c);
}

static void max_all(MPI_Comm c, uint64_t *v, int k) {
    CHECK(MPI_Allreduce(MPI_IN_PLACE, v, k, MPI_UINT64_T, MPI_MAX, c));
}

#define REPS 7
#define MAXCYC 1000

static void healthy(MPI_Comm c) {
    uint64_t iters = scaled(2000);
    double ar[REPS], ag[REPS], iag[REPS], ratio[REPS], sh[REPS];
    for (uint64_t i = 0; i < scaled(200); i++) {
        int f = 1;
        CHECK(allreduce(c));
        CHECK(MPIX_Comm_agree(c, &f));
    }
    for (int r = 0; r < REPS; r++) {
        uint64_t t, d[3];
        MPI_Barrier(c);
        t = mono_ns();
        for (uint64_t i = 0; i < iters; i++) CHECK(allreduce(c));
        d[0] = mono_ns() - t;
        MPI_Barrier(c);
        t = mono_ns();
        for (uint64_t i = 0; i < iters; i++) {
            int f = ~0;
            CHECK(MPIX_Comm_agree(c, &f));
        }
        d[1] = mono_ns() - t;
        MPI_Barrier(c);
        t = mono_ns();
        for (uint64_t i = 0; i < iters; i++) {
            int f = ~0;
            MPI_Request q;
            CHECK(MPIX_Comm_iagree(c, &f, &q));
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        }
        d[2] = mono_ns() - t;
        max_all(c, d, 3);
        ar[r] = d[0] / (double)iters / 1e3;
        ag[r] = d[1] / (double)iters / 1e3;
        iag[r] = d[2] / (double)iters / 1e3;
        ratio[r] = (double)d[1] / (double)d[0];
    }
    uint64_t k = scaled(200);
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(c);
        uint64_t t = mono_ns();
        for (uint64_t i = 0; i < k; i++) {
            MPI_Comm s;
            CHECK(MPIX_Comm_shrink(c, &s));
            MPI_Comm_free(&s);
        }
        uint64_t d = mono_ns() - t;
        max_all(c, &d, 1);
        sh[r] = d / (double)k / 1e3;
    }
    int cycles = (int)scaled(60);
    if (cycles > MAXCYC) cycles = MAXCYC;
    static double prop[MAXCYC], base[MAXCYC], p1[MAXCYC], p2[MAXCYC], p3[MAXCYC], rs[MAXCYC], ns[MAXCYC], rsr[MAXCYC];
    static double p1l[MAXCYC], skew[MAXCYC], p1r[MAXCYC], p1lr[MAXCYC];
    for (int y = 0; y < cycles; y++) {
        MPI_Comm h, a, b, s;
        CHECK(MPI_Comm_dup(c, &h));
        MPI_Comm_set_errhandler(h, MPI_ERRORS_RETURN);
        MPI_Barrier(c);
        uint64_t t0h = mono_ns();
        CHECK(MPIX_Comm_shrink(h, &s));
        uint64_t t_h = mono_ns();
        MPI_Comm_free(&s);
        MPI_Comm_free(&h);

        CHECK(MPI_Comm_dup(c, &a));
        CHECK(MPI_Comm_dup(c, &b));
        MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN);
        MPI_Barrier(b);
        uint64_t t = mono_ns();
        for (int i = 0; i < 20; i++) CHECK(allreduce(b));
        uint64_t d_base = (mono_ns() - t) / 20;
        for (int i = 0; i < 5; i++) CHECK(allreduce(a));
        MPI_Barrier(b); /* every rank finished plan A's earlier iterations */
        uint64_t t0 = 0, t_obs;
        if (me == 0) {
            t0 = mono_ns();
            CHECK(MPIX_Comm_revoke(a));
            t_obs = mono_ns();
        } else {
            for (;;) {
                int rc = allreduce(a), cls = 0;
                if (rc == MPI_SUCCESS) continue;
                MPI_Error_class(rc, &cls);
                if (cls == MPIX_ERR_REVOKED) break;
                fprintf(stderr, "ft_ulfm rank %d: plan A allreduce: error class %d\n", me, cls);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            t_obs = mono_ns();
        }
        uint64_t post[3], t_enter = 0, t_done1 = 0;
        for (int i = 0; i < 3; i++) {
            uint64_t tt = mono_ns();
            CHECK(allreduce(b));
            uint64_t d = mono_ns();
            post[i] = d - tt;
            if (i == 0) {
                t_enter = tt;
                t_done1 = d;
            }
        }
        CHECK(MPIX_Comm_shrink(a, &s));
        uint64_t t_sh = mono_ns();
        MPI_Comm_free(&s);
        MPI_Comm_free(&a);
        /* m[9] is the last entry into plan B, UINT64_MAX - m[10] the first. */
        uint64_t m[12] = {t0,      t_obs, t_sh, d_base, post[0], post[1], post[2], me == 0 ? t0h : 0, t_h,
                          t_enter, UINT64_MAX - t_enter, t_done1};
        max_all(b, m, 12);
        MPI_Comm_free(&b);
        prop[y] = (m[1] - m[0]) / 1e3;
        rs[y] = (m[2] - m[0]) / 1e3;
        base[y] = m[3] / 1e3;
        p1[y] = m[4] / 1e3;
        p2[y] = m[5] / 1e3;
        p3[y] = m[6] / 1e3;
        p1l[y] = (m[11] - m[9]) / 1e3;
        skew[y] = (m[9] - (UINT64_MAX - m[10])) / 1e3;
        p1r[y] = (double)m[4] / (double)(m[3] ? m[3] : 1);
        p1lr[y] = (double)(m[11] - m[9]) / (double)(m[3] ? m[3] : 1);
        ns[y] = (m[8] - m[7]) / 1e3;
        rsr[y] = (double)(m[2] - m[0]) / (double)(m[8] - m[7] ? m[8] - m[7] : 1);
    }
    if (me == 0) {
        emit("allreduce_us", median(ar, REPS), "us");
        emit("agree_us", median(ag, REPS), "us");
        emit("agree/allreduce", median(ratio, REPS), "ratio");
        emit("iagree_us", median(iag, REPS), "us");
        emit("shrink_us", median(sh, REPS), "us");
        emit("revoke_prop_us", median(prop, cycles), "us");
        emit("planB_base_us", median(base, cycles), "us");
        emit("planB_post1_us", median(p1, cycles), "us");
        emit("planB_post1/base", median(p1r, cycles), "ratio");
        emit("planB_skew_us", median(skew, cycles), "us");
        emit("planB_post1_last_us", median(p1l, cycles), "us");
        emit("planB_post1_last/base", median(p1lr, cycles), "ratio");
        emit("planB_post2_us", median(p2, cycles), "us");
        emit("planB_post3_us", median(p3, cycles), "us");
        emit("revoke_shrink_us", median(rs, cycles), "us");
        emit("shrink_norevoke_us", median(ns, cycles), "us");
        emit("revoke_shrink/norevoke", median(rsr, cycles), "ratio");
    }
    MPI_Barrier(c);
}

static double pingpong(MPI_Comm c, uint64_t iters) {
    char b[8] = {0};
    MPI_Barrier(c);
    uint64_t t = mono_ns();
    if (me < 2) {
        for (uint64_t i = 0; i < iters; i++) {
            if (me == 0) {
                MPI_Send(b, 8, MPI_BYTE, 1, 1, c);
                MPI_Recv(b, 8, MPI_BYTE, 1, 1, c, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 8, MPI_BYTE, 0, 1, c, MPI_STATUS_IGNORE);
                MPI_Send(b, 8, MPI_BYTE, 0, 1, c);
            }
        }
    }
    return (mono_ns() - t) / (double)iters / 2e3;
}

static double coll_lat(MPI_Comm c, uint64_t iters) {
    MPI_Barrier(c);
    uint64_t t = mono_ns();
    for (uint64_t i = 0; i < iters; i++) CHECK(allreduce(c));
    uint64_t d = mono_ns() - t;
    max_all(c, &d, 1);
    return d / (double)iters / 1e3;
}

static void overhead(MPI_Comm c, const char *label) {
    uint64_t pp = scaled(20000), ar = scaled(5000);
    double p[REPS], a[REPS];
    pingpong(c, scaled(2000));
    coll_lat(c, scaled(1000));
    for (int r = 0; r < REPS; r++) {
        p[r] = pingpong(c, pp);
        a[r] = coll_lat(c, ar);
    }
    if (me == 0) {
        char m[64];
        snprintf(m, sizeof m, "p2p_lat_%s_us", label);
        emit(m, median(p, REPS), "us");
        snprintf(m, sizeof m, "coll_lat_%s_us", label);
        emit(m, median(a, REPS), "us");
    }
    MPI_Barrier(c);
}

/* The kill stamp goes through a file in /dev/shm named after rank 0's pid (broadcast at the
 * start): Open MPI completes a receive from a process it knows failed with an error even when
 * the message had been sent before the death, so a message cannot carry it. */
static char stamp_path[128];

static void stamp_setup(MPI_Comm c) {
    int pid0 = (int)getpid();
    MPI_Bcast(&pid0, 1, MPI_INT, 0, c);
    snprintf(stamp_path, sizeof stamp_path, "/dev/shm/ft_ulfm_stamp.%d", pid0);
}

static void victim(MPI_Comm st) {
    (void)st;
    int fd = open(stamp_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    uint64_t t = mono_ns();
    if (fd >= 0 && write(fd, &t, sizeof t) != (ssize_t)sizeof t) t = 0;
    raise(SIGKILL);
    for (;;) pause();
}

static uint64_t stamp_of(MPI_Comm st, int v) {
    (void)st;
    (void)v;
    uint64_t t = 0;
    FILE *f = fopen(stamp_path, "r");
    if (!f || fread(&t, sizeof t, 1, f) != 1) {
        fprintf(stderr, "ft_ulfm rank %d: no kill stamp in %s\n", me, stamp_path);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    fclose(f);
    return t;
}

static void kill_recover(MPI_Comm c) {
    int v = n - 1;
    MPI_Comm st, s;
    CHECK(MPI_Comm_dup(c, &st));
    MPI_Comm_set_errhandler(st, MPI_ERRORS_RETURN);
    stamp_setup(c);
    for (int i = 0; i < 50; i++) CHECK(allreduce(c));
    MPI_Barrier(c);
    if (me == v) victim(st);
    int rc = allreduce(c);
    uint64_t t_err = mono_ns();
    if (rc == MPI_SUCCESS) fprintf(stderr, "ft_ulfm rank %d: allreduce with the victim succeeded?\n", me);
    MPIX_Comm_revoke(c);
    uint64_t t_sh0 = mono_ns();
    CHECK(MPIX_Comm_shrink(c, &s));
    uint64_t t_sh1 = mono_ns();
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    CHECK(allreduce(s));
    uint64_t t_done = mono_ns();
    uint64_t t_kill = stamp_of(st, v);
    uint64_t m[3] = {t_err - t_kill, t_sh1 - t_sh0, t_done - t_kill};
    max_all(s, m, 3);
    if (me == 0) {
        emit("detect_in_op_us", m[0] / 1e3, "us");
        emit("shrink_after_failure_us", m[1] / 1e3, "us");
        emit("kill_to_shrunk_allreduce_us", m[2] / 1e3, "us");
    }
    MPI_Barrier(s);
    MPI_Comm_free(&s);
}

/* Kill -> this survivor's view of the world has the victim among the failed (polled with
 * MPIX_Comm_get_failed, progressing with MPI_Iprobe in between). */
static void detect(MPI_Comm c) {
    int v = n - 1;
    MPI_Comm st;
    CHECK(MPI_Comm_dup(c, &st));
    MPI_Comm_set_errhandler(st, MPI_ERRORS_RETURN);
    stamp_setup(c);
    MPI_Barrier(c);
    if (me == v) victim(st);
    uint64_t limit = mono_ns() + 5000000000ull, t_det = 0;
    int ok = 0;
    while (mono_ns() < limit) {
        int flag, sz = 0;
        MPI_Group g;
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, c, &flag, MPI_STATUS_IGNORE);
        if (MPIX_Comm_get_failed(c, &g) == MPI_SUCCESS) {
            MPI_Group_size(g, &sz);
            MPI_Group_free(&g);
        }
        if (sz > 0) {
            ok = 1;
            break;
        }
        if (n > 2) sched_yield();
    }
    t_det = mono_ns();
    uint64_t t_kill = stamp_of(st, v);
    uint64_t det = ok ? t_det - t_kill : UINT64_MAX;
    if (me == 0) {
        uint64_t mx = det, mn = det;
        for (int r = 1; r < v; r++) {
            uint64_t d;
            CHECK(MPI_Recv(&d, 1, MPI_UINT64_T, r, 98, st, MPI_STATUS_IGNORE));
            if (d > mx) mx = d;
            if (d < mn) mn = d;
        }
        if (mx == UINT64_MAX) {
            fprintf(stderr, "ft_ulfm: some survivor did not detect the failure in 5 s\n");
        } else {
            emit("detect_default_us", mx / 1e3, "us");
            emit("detect_default_first_us", mn / 1e3, "us");
        }
    } else {
        CHECK(MPI_Send(&det, 1, MPI_UINT64_T, 0, 98, st));
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *sc = argc > 1 ? argv[1] : "healthy";
    if (argc > 2) scale = atof(argv[2]);
    if (scale <= 0) scale = 1.0;
    if (!strcmp(sc, "healthy")) healthy(MPI_COMM_WORLD);
    else if (!strcmp(sc, "overhead")) overhead(MPI_COMM_WORLD, "ft");
    else if (!strcmp(sc, "overhead-noft")) overhead(MPI_COMM_WORLD, "noft");
    else if (!strcmp(sc, "kill-recover")) kill_recover(MPI_COMM_WORLD);
    else if (!strcmp(sc, "detect-default")) detect(MPI_COMM_WORLD);
    else {
        if (me == 0) fprintf(stderr, "ft_ulfm: unknown scenario %s\n", sc);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (me == 0 && stamp_path[0]) unlink(stamp_path);
    if (me == 0) {
        printf("# ft: done, finalizing\n");
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}

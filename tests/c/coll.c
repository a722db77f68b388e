/* coll.c: every collective through the C ABI, blocking and non-blocking, with each result
 * compared against a value computed here from the same generators; user-defined operations
 * (a non-commutative one, two commutative ones); several non-blocking collectives outstanding
 * at once, completed in reverse order; argument errors. Run under weft-run with any number of
 * ranks; prints "coll: rank R of N ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "weft.h"

static int rank = -1, size = -1, failures = 0;
static weft_comm world;

/* A call that must succeed: anything else ends the job (the ranks would fall out of step). */
#define CHECK(call)                                                                          \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != WEFT_SUCCESS) {                                                           \
            fprintf(stderr, "coll: rank %d: line %d: %s: %s (%s)\n", rank, __LINE__, #call,  \
                    weft_error_string(rc_), weft_last_error());                              \
            weft_abort(1, "coll failed");                                                    \
        }                                                                                    \
    } while (0)

/* `call` must return `code`; a failure must leave a non-empty weft_last_error(). */
#define EXPECT(call, code)                                                                   \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        const char *le_ = weft_last_error();                                                 \
        if (rc_ != (code)) {                                                                 \
            fprintf(stderr, "coll: rank %d: line %d: %s returned %d (%s: %s), expected %s\n", \
                    rank, __LINE__, #call, rc_, weft_error_string(rc_), le_, #code);         \
            failures++;                                                                      \
        } else if ((code) != WEFT_SUCCESS && (le_ == NULL || le_[0] == '\0')) {              \
            fprintf(stderr, "coll: rank %d: line %d: %s: empty weft_last_error()\n", rank,   \
                    __LINE__, #call);                                                        \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* A checked result: reported, counted, and the test goes on (the ranks stay in step). */
#define ASSERT(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "coll: rank %d: line %d: %s: ", rank, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define LAST_HAS(s) ASSERT(strstr(weft_last_error(), (s)) != NULL, "last error: %s", weft_last_error())

/* Run a collective blocking (nb == 0) or non-blocking + weft_wait (nb != 0). The non-blocking
 * call is the blocking one's name with an `i` and a trailing request argument. */
#define RUN(nb, fn, ...)                                                                     \
    do {                                                                                     \
        if (nb) {                                                                            \
            weft_request r_ = WEFT_REQUEST_NULL;                                             \
            CHECK(weft_i##fn(__VA_ARGS__, &r_));                                             \
            ASSERT(r_ != WEFT_REQUEST_NULL, "no request");                                   \
            CHECK(weft_wait(&r_, NULL));                                                     \
            ASSERT(r_ == WEFT_REQUEST_NULL, "request not cleared");                          \
        } else {                                                                             \
            CHECK(weft_##fn(__VA_ARGS__));                                                   \
        }                                                                                    \
    } while (0)

typedef struct { int32_t value, index; } int2;
typedef struct { float value; int32_t index; } float_int;
typedef struct { double value; int32_t index, pad; } double_int;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---------------------------------------------------------------- typed element access */

static size_t dsize(int dt) {
    size_t s = 0;
    CHECK(weft_datatype_size(dt, &s));
    return s;
}

static int is_signed(int dt) {
    return dt == WEFT_INT8 || dt == WEFT_INT16 || dt == WEFT_INT32 || dt == WEFT_INT64;
}

/* Element i of an integer (or byte) buffer, widened. */
static int64_t iload(int dt, const void *b, size_t i) {
    const char *p = (const char *)b + i * dsize(dt);
    switch (dt) {
    case WEFT_UINT8: case WEFT_BYTE: { uint8_t v; memcpy(&v, p, 1); return v; }
    case WEFT_INT8: { int8_t v; memcpy(&v, p, 1); return v; }
    case WEFT_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case WEFT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case WEFT_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case WEFT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case WEFT_UINT64: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* Store v truncated to the type (two's complement wrap, as the integer reductions do). */
static void istore(int dt, void *b, size_t i, int64_t v) {
    char *p = (char *)b + i * dsize(dt);
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case WEFT_UINT8: case WEFT_INT8: case WEFT_BYTE: { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); break; }
    case WEFT_UINT16: case WEFT_INT16: { uint16_t x = (uint16_t)u; memcpy(p, &x, 2); break; }
    case WEFT_UINT32: case WEFT_INT32: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
    default: memcpy(p, &u, 8); break;
    }
}

/* v as the type holds it. */
static int64_t inorm(int dt, int64_t v) {
    char b[8];
    istore(dt, b, 0, v);
    return iload(dt, b, 0);
}

static int64_t igen(int dt, int p, int k) {
    int64_t v = (p * 37 + k * 11 + 5) % 97;
    if (is_signed(dt)) v -= 40;
    return (p + k) % 5 == 0 ? 0 : v; /* zeros for the logical operations */
}

static int64_t ifold(weft_op op, int64_t a, int64_t b) {
    switch (op) {
    case WEFT_OP_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
    case WEFT_OP_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
    case WEFT_OP_MIN: return a < b ? a : b;
    case WEFT_OP_MAX: return a > b ? a : b;
    case WEFT_OP_BAND: return a & b;
    case WEFT_OP_BOR: return a | b;
    case WEFT_OP_BXOR: return a ^ b;
    case WEFT_OP_LAND: return a != 0 && b != 0;
    case WEFT_OP_LOR: return a != 0 || b != 0;
    }
    return 0x7eadbeef;
}

/* Float values in {±0.5, ±1, ±1.5, ±2}: sums and products of a few are exact in any order. */
static double fgen(int p, int k) {
    double v = (double)((p * 3 + k) % 4 + 1) * 0.5;
    return (p + k) % 3 == 0 ? -v : v;
}

static double ffold(weft_op op, double a, double b) {
    switch (op) {
    case WEFT_OP_SUM: return a + b;
    case WEFT_OP_PROD: return a * b;
    case WEFT_OP_MIN: return a < b ? a : b;
    case WEFT_OP_MAX: return a > b ? a : b;
    }
    return 1e300;
}

/* Values with ties across ranks, for MINLOC / MAXLOC. */
static int32_t locv(int p, int k) { return (p * 5 + k * 3 + k * p) % 4; }

static const char *opname(weft_op op) {
    static const char *n[] = {"null", "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"};
    return op <= WEFT_OP_LOR ? n[op] : "?";
}

/* ----------------------------------------------------------------------- user operations */

static int user_bad_dtype = 0;
static long user_calls = 0;

/* Affine maps x -> a*x + b (mod 2^32) packed as a << 32 | b, composed: (L o R)(x) = L(R(x)).
 * Associative, not commutative. */
static uint64_t affine(uint64_t l, uint64_t r) {
    uint32_t la = (uint32_t)(l >> 32), lb = (uint32_t)l, ra = (uint32_t)(r >> 32), rb = (uint32_t)r;
    uint32_t a = la * ra, b = la * rb + lb;
    return (uint64_t)a << 32 | b;
}

static void affine_fn(const void *in, void *inout, size_t count, weft_datatype dt) {
    user_calls++;
    if (dt != WEFT_UINT64) user_bad_dtype++;
    for (size_t i = 0; i < count; i++) {
        uint64_t x, y;
        memcpy(&x, (const char *)in + 8 * i, 8);
        memcpy(&y, (char *)inout + 8 * i, 8);
        y = affine(x, y); /* input is the left operand (lower ranks) */
        memcpy((char *)inout + 8 * i, &y, 8);
    }
}

static uint64_t agen(int p, int k) {
    uint64_t a = 2u * (uint64_t)(p * 7 + k) + 3u, b = (uint64_t)(p * 13 + k * 5 + 1);
    return a << 32 | b;
}

/* Keep the value of largest magnitude (commutative when magnitudes differ, as here). */
static double dabs(double x) { return x < 0 ? -x : x; }

static void absmax_fn(const void *in, void *inout, size_t count, weft_datatype dt) {
    user_calls++;
    if (dt != WEFT_DOUBLE) user_bad_dtype++;
    for (size_t i = 0; i < count; i++) {
        double x, y;
        memcpy(&x, (const char *)in + 8 * i, 8);
        memcpy(&y, (char *)inout + 8 * i, 8);
        if (dabs(x) > dabs(y)) memcpy((char *)inout + 8 * i, &x, 8);
    }
}

/* |value| = (p+1)(k+1)/2: distinct over ranks for each k. */
static double mgen(int p, int k) {
    double v = (double)((p + 1) * (k + 1)) * 0.5;
    return (p + k) % 2 ? -v : v;
}

/* Gaussian integers (re, im) in a WEFT_2INT element, multiplied (commutative). */
static void cmul_fn(const void *in, void *inout, size_t count, weft_datatype dt) {
    user_calls++;
    if (dt != WEFT_2INT) user_bad_dtype++;
    for (size_t i = 0; i < count; i++) {
        int2 x, y, z;
        memcpy(&x, (const char *)in + 8 * i, 8);
        memcpy(&y, (char *)inout + 8 * i, 8);
        z.value = x.value * y.value - x.index * y.index;
        z.index = x.value * y.index + x.index * y.value;
        memcpy((char *)inout + 8 * i, &z, 8);
    }
}

static int2 cgen(int p, int k) {
    int2 z = {p % 3 + 1 + k, (p + k) % 2 ? 1 : -1};
    return z;
}

/* ------------------------------------------------------------------------------- tests */

static void test_barrier(int nb) {
    int last = size - 1;
    double entered = 0;
    if (rank == last) {
        sleep_ms(150);
        entered = now();
    }
    if (nb) {
        weft_request r;
        CHECK(weft_ibarrier(world, &r));
        CHECK(weft_wait(&r, NULL));
        ASSERT(r == WEFT_REQUEST_NULL, "request not cleared");
    } else {
        CHECK(weft_barrier(world));
    }
    double left = now();
    CHECK(weft_bcast(&entered, 1, WEFT_DOUBLE, last, world));
    ASSERT(entered > 0 && left >= entered, "%s left at %.6f before rank %d entered at %.6f",
           nb ? "ibarrier" : "barrier", left, last, entered);
}

static void test_bcast(int nb) {
    int roots[2] = {0, size - 1};
    for (int i = 0; i < 2; i++) {
        int root = roots[i];
        int64_t b[5];
        for (int k = 0; k < 5; k++) b[k] = rank == root ? 1000 * root + 7 * k + 1 : -1;
        RUN(nb, bcast, b, 5, WEFT_INT64, root, world);
        for (int k = 0; k < 5; k++) ASSERT(b[k] == 1000 * root + 7 * k + 1, "bcast root %d [%d] = %lld", root, k, (long long)b[k]);
    }
    /* larger than the eager limit: rendezvous */
    int root = 1 % size, n = 5000;
    double *d = malloc(n * sizeof *d);
    for (int k = 0; k < n; k++) d[k] = rank == root ? root * 0.5 + k : -1;
    RUN(nb, bcast, d, n, WEFT_DOUBLE, root, world);
    for (int k = 0; k < n; k++) ASSERT(d[k] == root * 0.5 + k, "large bcast [%d] = %g", k, d[k]);
    free(d);
}

static void test_reduce(int nb) {
    int roots[2] = {0, size - 1};
    for (int i = 0; i < 2; i++) {
        int root = roots[i];
        int32_t s[3], r[3] = {-7, -7, -7};
        for (int k = 0; k < 3; k++) s[k] = rank * 10 + k;
        /* off the root the receive buffer is unused: NULL on the second round */
        int32_t *rp = (rank != root && i == 1) ? NULL : r;
        RUN(nb, reduce, s, rp, 3, WEFT_INT32, WEFT_OP_SUM, root, world);
        for (int k = 0; k < 3; k++) {
            int32_t want = 0;
            for (int p = 0; p < size; p++) want += p * 10 + k;
            if (rank == root) ASSERT(r[k] == want, "reduce root %d [%d] = %d, want %d", root, k, r[k], want);
            else ASSERT(r[k] == -7, "reduce wrote off the root: %d", r[k]);
        }
    }
    /* double max at a non-zero root */
    double s[4], r[4], want[4];
    for (int k = 0; k < 4; k++) {
        s[k] = fgen(rank, k);
        want[k] = fgen(0, k);
        for (int p = 1; p < size; p++) want[k] = ffold(WEFT_OP_MAX, want[k], fgen(p, k));
    }
    RUN(nb, reduce, s, r, 4, WEFT_DOUBLE, WEFT_OP_MAX, size - 1, world);
    if (rank == size - 1)
        for (int k = 0; k < 4; k++) ASSERT(r[k] == want[k], "reduce max [%d] = %g, want %g", k, r[k], want[k]);
}

static void test_allreduce(int nb) {
    /* int32 sum */
    {
        int32_t s[4], r[4];
        for (int k = 0; k < 4; k++) s[k] = (rank + 1) * (k + 3);
        RUN(nb, allreduce, s, r, 4, WEFT_INT32, WEFT_OP_SUM, world);
        for (int k = 0; k < 4; k++) ASSERT(r[k] == size * (size + 1) / 2 * (k + 3), "allreduce sum [%d] = %d", k, r[k]);
    }
    /* double max */
    {
        double s[3], r[3];
        for (int k = 0; k < 3; k++) s[k] = rank * 1.5 - k * (rank % 2) - (rank == size - 1 && k == 2 ? 100 : 0);
        RUN(nb, allreduce, s, r, 3, WEFT_DOUBLE, WEFT_OP_MAX, world);
        for (int k = 0; k < 3; k++) {
            double want = -1e300;
            for (int p = 0; p < size; p++) {
                double v = p * 1.5 - k * (p % 2) - (p == size - 1 && k == 2 ? 100 : 0);
                if (v > want) want = v;
            }
            ASSERT(r[k] == want, "allreduce max [%d] = %g, want %g", k, r[k], want);
        }
    }
    /* MINLOC / MAXLOC over (int, int) pairs, with ties across ranks (smaller index wins) */
    {
        int2 s[4], mn[4], mx[4];
        for (int k = 0; k < 4; k++) s[k] = (int2){locv(rank, k), rank};
        RUN(nb, allreduce, s, mn, 4, WEFT_2INT, WEFT_OP_MINLOC, world);
        RUN(nb, allreduce, s, mx, 4, WEFT_2INT, WEFT_OP_MAXLOC, world);
        for (int k = 0; k < 4; k++) {
            int2 a = {locv(0, k), 0}, b = a;
            for (int p = 1; p < size; p++) {
                int v = locv(p, k);
                if (v < a.value) a = (int2){v, p};
                if (v > b.value) b = (int2){v, p};
            }
            ASSERT(mn[k].value == a.value && mn[k].index == a.index, "minloc [%d] = (%d,%d), want (%d,%d)", k,
                   mn[k].value, mn[k].index, a.value, a.index);
            ASSERT(mx[k].value == b.value && mx[k].index == b.index, "maxloc [%d] = (%d,%d), want (%d,%d)", k,
                   mx[k].value, mx[k].index, b.value, b.index);
        }
    }
    /* MINLOC over (double, int), MAXLOC over (float, int) */
    {
        double_int s[3], r[3];
        float_int fs[3], fr[3];
        ASSERT(dsize(WEFT_DOUBLE_INT) == sizeof(double_int) && dsize(WEFT_FLOAT_INT) == sizeof(float_int) &&
                   dsize(WEFT_2INT) == sizeof(int2), "pair sizes");
        for (int k = 0; k < 3; k++) {
            s[k] = (double_int){fgen(rank, k), 10 * rank + k, 0};
            fs[k] = (float_int){(float)fgen(rank, k + 1), 10 * rank + k};
        }
        RUN(nb, allreduce, s, r, 3, WEFT_DOUBLE_INT, WEFT_OP_MINLOC, world);
        RUN(nb, allreduce, fs, fr, 3, WEFT_FLOAT_INT, WEFT_OP_MAXLOC, world);
        for (int k = 0; k < 3; k++) {
            double_int a = {fgen(0, k), k, 0};
            float_int b = {(float)fgen(0, k + 1), k};
            for (int p = 1; p < size; p++) {
                if (fgen(p, k) < a.value) a = (double_int){fgen(p, k), 10 * p + k, 0};
                if ((float)fgen(p, k + 1) > b.value) b = (float_int){(float)fgen(p, k + 1), 10 * p + k};
            }
            ASSERT(r[k].value == a.value && r[k].index == a.index, "double minloc [%d] = (%g,%d), want (%g,%d)", k,
                   r[k].value, r[k].index, a.value, a.index);
            ASSERT(fr[k].value == b.value && fr[k].index == b.index, "float maxloc [%d] = (%g,%d), want (%g,%d)", k,
                   (double)fr[k].value, fr[k].index, (double)b.value, b.index);
        }
    }
    /* in place (send == recv) */
    {
        int64_t b[3];
        for (int k = 0; k < 3; k++) b[k] = (int64_t)rank << (8 * k);
        RUN(nb, allreduce, b, b, 3, WEFT_INT64, WEFT_OP_SUM, world);
        for (int k = 0; k < 3; k++)
            ASSERT(b[k] == ((int64_t)size * (size - 1) / 2) << (8 * k), "in-place allreduce [%d] = %lld", k, (long long)b[k]);
    }
    /* beyond the eager limit (ring / Rabenseifner / rendezvous) */
    {
        int n = 20000;
        int32_t *s = malloc(n * sizeof *s), *r = malloc(n * sizeof *r);
        for (int k = 0; k < n; k++) s[k] = rank + k;
        RUN(nb, allreduce, s, r, n, WEFT_INT32, WEFT_OP_SUM, world);
        int bad = 0;
        for (int k = 0; k < n; k++) bad += r[k] != size * k + size * (size - 1) / 2;
        ASSERT(bad == 0, "large allreduce: %d wrong elements", bad);
        free(s);
        free(r);
    }
}

/* Every predefined operation on every type it applies to (allreduce, 5 elements). */
static void test_op_matrix(void) {
    static const int ints[] = {WEFT_UINT8, WEFT_INT8, WEFT_UINT16, WEFT_INT16,
                               WEFT_UINT32, WEFT_INT32, WEFT_UINT64, WEFT_INT64};
    enum { N = 5 };
    char s[N * 8], r[N * 8];
    for (size_t t = 0; t < sizeof ints / sizeof ints[0]; t++) {
        int dt = ints[t];
        for (weft_op op = WEFT_OP_SUM; op <= WEFT_OP_LOR; op++) {
            for (int k = 0; k < N; k++) istore(dt, s, k, igen(dt, rank, k));
            memset(r, 0x5a, sizeof r);
            CHECK(weft_allreduce(s, r, N, dt, op, world));
            for (int k = 0; k < N; k++) {
                int64_t want = inorm(dt, igen(dt, 0, k));
                for (int p = 1; p < size; p++) want = inorm(dt, ifold(op, want, inorm(dt, igen(dt, p, k))));
                ASSERT(iload(dt, r, k) == want, "type %d op %s [%d] = %lld, want %lld", dt, opname(op), k,
                       (long long)iload(dt, r, k), (long long)want);
            }
        }
    }
    for (weft_op op = WEFT_OP_BAND; op <= WEFT_OP_BXOR; op++) {
        for (int k = 0; k < N; k++) istore(WEFT_BYTE, s, k, igen(WEFT_BYTE, rank, k) * 3);
        CHECK(weft_allreduce(s, r, N, WEFT_BYTE, op, world));
        for (int k = 0; k < N; k++) {
            int64_t want = inorm(WEFT_BYTE, igen(WEFT_BYTE, 0, k) * 3);
            for (int p = 1; p < size; p++) want = ifold(op, want, inorm(WEFT_BYTE, igen(WEFT_BYTE, p, k) * 3));
            ASSERT(iload(WEFT_BYTE, r, k) == want, "byte op %s [%d]", opname(op), k);
        }
    }
    for (weft_op op = WEFT_OP_SUM; op <= WEFT_OP_MAX; op++) {
        float fs[N], fr[N];
        double ds[N], dr[N];
        for (int k = 0; k < N; k++) fs[k] = (float)(ds[k] = fgen(rank, k));
        CHECK(weft_allreduce(fs, fr, N, WEFT_FLOAT, op, world));
        CHECK(weft_allreduce(ds, dr, N, WEFT_DOUBLE, op, world));
        for (int k = 0; k < N; k++) {
            double want = fgen(0, k);
            for (int p = 1; p < size; p++) want = ffold(op, want, fgen(p, k));
            ASSERT(fr[k] == (float)want, "float op %s [%d] = %g, want %g", opname(op), k, (double)fr[k], want);
            ASSERT(dr[k] == want, "double op %s [%d] = %g, want %g", opname(op), k, dr[k], want);
        }
    }
}

static void test_gather(int nb) {
    int root = size - 1;
    int32_t s[2] = {100 * rank, 100 * rank + 1};
    int32_t *r = malloc(2 * size * sizeof *r);
    for (int i = 0; i < 2 * size; i++) r[i] = -1;
    RUN(nb, gather, s, rank == root ? r : NULL, 2, WEFT_INT32, root, world);
    if (rank == root)
        for (int p = 0; p < size; p++)
            for (int k = 0; k < 2; k++) ASSERT(r[2 * p + k] == 100 * p + k, "gather [%d][%d] = %d", p, k, r[2 * p + k]);
    free(r);

    /* gatherv to rank 0: rank p sends p+1 elements; one-element gaps stay untouched */
    size_t *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs), total = 0;
    for (int p = 0; p < size; p++) {
        counts[p] = p + 1;
        displs[p] = total;
        total += counts[p] + 1;
    }
    int16_t *sv = malloc((rank + 1) * sizeof *sv), *rv = malloc(total * sizeof *rv);
    for (int j = 0; j <= rank; j++) sv[j] = (int16_t)(100 * rank + j);
    for (size_t i = 0; i < total; i++) rv[i] = -1;
    RUN(nb, gatherv, sv, rank + 1, rv, counts, displs, WEFT_INT16, 0, world);
    if (rank == 0) {
        for (int p = 0; p < size; p++) {
            for (int j = 0; j <= p; j++)
                ASSERT(rv[displs[p] + j] == 100 * p + j, "gatherv [%d][%d] = %d", p, j, rv[displs[p] + j]);
            ASSERT(rv[displs[p] + p + 1] == -1, "gatherv wrote into the gap after block %d", p);
        }
    }
    free(counts);
    free(displs);
    free(sv);
    free(rv);
}

static void test_scatter(int nb) {
    int32_t *s = malloc(3 * size * sizeof *s), r[3] = {-1, -1, -1};
    for (int p = 0; p < size; p++)
        for (int k = 0; k < 3; k++) s[3 * p + k] = rank == 0 ? 10 * p + k : -5;
    RUN(nb, scatter, rank == 0 ? s : NULL, r, 3, WEFT_INT32, 0, world);
    for (int k = 0; k < 3; k++) ASSERT(r[k] == 10 * rank + k, "scatter [%d] = %d", k, r[k]);
    free(s);

    /* scatterv from the last rank, blocks in reverse rank order */
    int root = size - 1;
    size_t *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs), total = 0;
    for (int p = size - 1; p >= 0; p--) {
        counts[p] = p % 3 + 1;
        displs[p] = total;
        total += counts[p];
    }
    uint32_t *sv = malloc(total * sizeof *sv), rv[4] = {0, 0, 0, 0xffff};
    for (int p = 0; p < size; p++)
        for (size_t j = 0; j < counts[p]; j++) sv[displs[p] + j] = 1000u * p + j;
    RUN(nb, scatterv, sv, counts, displs, rv, rank % 3 + 1, WEFT_UINT32, root, world);
    for (int j = 0; j < rank % 3 + 1; j++) ASSERT(rv[j] == 1000u * rank + j, "scatterv [%d] = %u", j, rv[j]);
    ASSERT(rv[3] == 0xffff, "scatterv wrote past its count");
    free(counts);
    free(displs);
    free(sv);
}

static void test_allgather(int nb) {
    double s[2] = {rank, rank + 0.25}, *r = malloc(2 * size * sizeof *r);
    RUN(nb, allgather, s, r, 2, WEFT_DOUBLE, world);
    for (int p = 0; p < size; p++)
        for (int k = 0; k < 2; k++) ASSERT(r[2 * p + k] == p + 0.25 * k, "allgather [%d][%d] = %g", p, k, r[2 * p + k]);
    free(r);

    /* allgatherv: rank p contributes p+1 elements, blocks in reverse order with gaps */
    size_t *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs), total = 0;
    for (int p = size - 1; p >= 0; p--) {
        counts[p] = p + 1;
        displs[p] = total;
        total += counts[p] + 2;
    }
    uint16_t *sv = malloc((rank + 1) * sizeof *sv), *rv = malloc(total * sizeof *rv);
    for (int j = 0; j <= rank; j++) sv[j] = (uint16_t)(1000 * rank + j);
    for (size_t i = 0; i < total; i++) rv[i] = 0xeeee;
    RUN(nb, allgatherv, sv, rank + 1, rv, counts, displs, WEFT_UINT16, world);
    for (int p = 0; p < size; p++) {
        for (int j = 0; j <= p; j++)
            ASSERT(rv[displs[p] + j] == 1000 * p + j, "allgatherv [%d][%d] = %u", p, j, rv[displs[p] + j]);
        ASSERT(rv[displs[p] + p + 1] == 0xeeee && rv[displs[p] + p + 2] == 0xeeee, "allgatherv wrote into a gap");
    }
    free(counts);
    free(displs);
    free(sv);
    free(rv);
}

static void test_alltoall(int nb) {
    int32_t *s = malloc(2 * size * sizeof *s), *r = malloc(2 * size * sizeof *r);
    for (int d = 0; d < size; d++)
        for (int j = 0; j < 2; j++) s[2 * d + j] = 1000 * rank + 10 * d + j;
    RUN(nb, alltoall, s, r, 2, WEFT_INT32, world);
    for (int p = 0; p < size; p++)
        for (int j = 0; j < 2; j++)
            ASSERT(r[2 * p + j] == 1000 * p + 10 * rank + j, "alltoall from %d [%d] = %d", p, j, r[2 * p + j]);
    free(s);
    free(r);

    /* alltoallv: s sends (s + d) % 3 + 1 elements to d; receive blocks have one-element gaps */
    size_t *sc = malloc(size * sizeof *sc), *sd = malloc(size * sizeof *sd);
    size_t *rc = malloc(size * sizeof *rc), *rd = malloc(size * sizeof *rd), st = 0, rt = 0;
    for (int p = 0; p < size; p++) {
        sc[p] = (rank + p) % 3 + 1;
        sd[p] = st;
        st += sc[p];
        rc[p] = (p + rank) % 3 + 1;
        rd[p] = rt;
        rt += rc[p] + 1;
    }
    int64_t *sv = malloc(st * sizeof *sv), *rv = malloc(rt * sizeof *rv);
    for (int d = 0; d < size; d++)
        for (size_t j = 0; j < sc[d]; j++) sv[sd[d] + j] = 10000 * rank + 100 * d + (int64_t)j;
    for (size_t i = 0; i < rt; i++) rv[i] = -1;
    RUN(nb, alltoallv, sv, sc, sd, rv, rc, rd, WEFT_INT64, world);
    for (int p = 0; p < size; p++) {
        for (size_t j = 0; j < rc[p]; j++)
            ASSERT(rv[rd[p] + j] == 10000 * p + 100 * rank + (int64_t)j, "alltoallv from %d [%zu] = %lld", p, j,
                   (long long)rv[rd[p] + j]);
        ASSERT(rv[rd[p] + rc[p]] == -1, "alltoallv wrote into a gap");
    }
    free(sc); free(sd); free(rc); free(rd); free(sv); free(rv);
}

static void test_reduce_scatter(int nb) {
    int64_t *s = malloc(2 * size * sizeof *s), r[2];
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 2; k++) s[2 * i + k] = rank * 100 + i * 10 + k;
    RUN(nb, reduce_scatter_block, s, r, 2, WEFT_INT64, WEFT_OP_SUM, world);
    for (int k = 0; k < 2; k++) {
        int64_t want = 0;
        for (int p = 0; p < size; p++) want += p * 100 + rank * 10 + k;
        ASSERT(r[k] == want, "reduce_scatter_block [%d] = %lld, want %lld", k, (long long)r[k], (long long)want);
    }
    free(s);

    /* reduce_scatter: block i has i+1 elements */
    size_t *counts = malloc(size * sizeof *counts), total = 0;
    for (int i = 0; i < size; i++) total += counts[i] = i + 1;
    int32_t *sv = malloc(total * sizeof *sv), *rv = malloc((rank + 1) * sizeof *rv);
    for (int i = 0, o = 0; i < size; i++)
        for (int j = 0; j <= i; j++) sv[o++] = rank * 1000 + i * 10 + j;
    RUN(nb, reduce_scatter, sv, rv, counts, WEFT_INT32, WEFT_OP_MAX, world);
    for (int j = 0; j <= rank; j++)
        ASSERT(rv[j] == (size - 1) * 1000 + rank * 10 + j, "reduce_scatter [%d] = %d", j, rv[j]);
    free(counts);
    free(sv);
    free(rv);
}

static void test_scan(int nb) {
    int32_t s[2] = {rank + 1, 10 * (rank + 1)}, r[2] = {-9, -9}, x[2] = {-9, -9};
    RUN(nb, scan, s, r, 2, WEFT_INT32, WEFT_OP_SUM, world);
    RUN(nb, exscan, s, x, 2, WEFT_INT32, WEFT_OP_SUM, world);
    int32_t incl = (rank + 1) * (rank + 2) / 2, excl = rank * (rank + 1) / 2;
    ASSERT(r[0] == incl && r[1] == 10 * incl, "scan = (%d, %d), want %d", r[0], r[1], incl);
    if (rank == 0) ASSERT(x[0] == -9 && x[1] == -9, "exscan wrote at rank 0");
    else ASSERT(x[0] == excl && x[1] == 10 * excl, "exscan = (%d, %d), want %d", x[0], x[1], excl);
    /* double min */
    double d = fgen(rank, 1), dm = 0, want = fgen(0, 1);
    for (int p = 1; p <= rank; p++) want = ffold(WEFT_OP_MIN, want, fgen(p, 1));
    RUN(nb, scan, &d, &dm, 1, WEFT_DOUBLE, WEFT_OP_MIN, world);
    ASSERT(dm == want, "scan min = %g, want %g", dm, want);
}

static void test_user_ops(void) {
    weft_op aff = WEFT_OP_NULL, amax = WEFT_OP_NULL, cmul = WEFT_OP_NULL;
    CHECK(weft_op_create(affine_fn, 0, &aff));
    CHECK(weft_op_create(absmax_fn, 1, &amax));
    CHECK(weft_op_create(cmul_fn, 1, &cmul));
    ASSERT(aff != WEFT_OP_NULL && amax != WEFT_OP_NULL && aff != amax && amax != cmul, "op handles");
    enum { N = 5 };
    uint64_t as[N], ar[N], all[N], pre[N];
    for (int k = 0; k < N; k++) {
        as[k] = agen(rank, k);
        all[k] = agen(0, k);
        for (int p = 1; p < size; p++) all[k] = affine(all[k], agen(p, k));
        pre[k] = agen(0, k);
        for (int p = 1; p <= rank; p++) pre[k] = affine(pre[k], agen(p, k));
    }
    if (size > 1) ASSERT(affine(agen(0, 0), agen(1, 0)) != affine(agen(1, 0), agen(0, 0)), "affine commutes");
    long calls_before = user_calls;

    for (int nb = 0; nb < 2; nb++) {
        /* non-commutative: allreduce, reduce to the last rank, scan, exscan */
        memset(ar, 0, sizeof ar);
        RUN(nb, allreduce, as, ar, N, WEFT_UINT64, aff, world);
        for (int k = 0; k < N; k++) ASSERT(ar[k] == all[k], "affine allreduce [%d]: %llx, want %llx", k,
                                           (unsigned long long)ar[k], (unsigned long long)all[k]);
        memset(ar, 0, sizeof ar);
        RUN(nb, reduce, as, ar, N, WEFT_UINT64, aff, size - 1, world);
        if (rank == size - 1)
            for (int k = 0; k < N; k++) ASSERT(ar[k] == all[k], "affine reduce [%d]", k);
        memset(ar, 0, sizeof ar);
        RUN(nb, scan, as, ar, N, WEFT_UINT64, aff, world);
        for (int k = 0; k < N; k++) ASSERT(ar[k] == pre[k], "affine scan [%d]", k);
        memset(ar, 0, sizeof ar);
        RUN(nb, exscan, as, ar, N, WEFT_UINT64, aff, world);
        if (rank > 0)
            for (int k = 0; k < N; k++) {
                uint64_t want = agen(0, k);
                for (int p = 1; p < rank; p++) want = affine(want, agen(p, k));
                ASSERT(ar[k] == want, "affine exscan [%d]", k);
            }
        /* non-commutative reduce_scatter: block i has 2 elements */
        {
            size_t *counts = malloc(size * sizeof *counts);
            uint64_t *s = malloc(2 * size * sizeof *s), r[2] = {0, 0};
            for (int i = 0; i < size; i++) {
                counts[i] = 2;
                for (int k = 0; k < 2; k++) s[2 * i + k] = agen(rank, i + k);
            }
            RUN(nb, reduce_scatter, s, r, counts, WEFT_UINT64, aff, world);
            for (int k = 0; k < 2; k++) {
                uint64_t want = agen(0, rank + k);
                for (int p = 1; p < size; p++) want = affine(want, agen(p, rank + k));
                ASSERT(r[k] == want, "affine reduce_scatter [%d]", k);
            }
            free(counts);
            free(s);
        }

        /* commutative: |max| on doubles, small and beyond the eager limit */
        int sizes[2] = {7, 5000};
        for (int t = 0; t < 2; t++) {
            int n = sizes[t];
            double *s = malloc(n * sizeof *s), *r = malloc(n * sizeof *r);
            for (int k = 0; k < n; k++) s[k] = mgen(rank, k % 50);
            RUN(nb, allreduce, s, r, n, WEFT_DOUBLE, amax, world);
            int bad = 0;
            for (int k = 0; k < n; k++) {
                double want = mgen(0, k % 50);
                for (int p = 1; p < size; p++)
                    if (dabs(mgen(p, k % 50)) > dabs(want)) want = mgen(p, k % 50);
                bad += r[k] != want;
            }
            ASSERT(bad == 0, "absmax allreduce of %d: %d wrong", n, bad);
            free(s);
            free(r);
        }
        {
            double *s = malloc(3 * size * sizeof *s), r[3];
            for (int i = 0; i < size; i++)
                for (int k = 0; k < 3; k++) s[3 * i + k] = mgen(rank, i + k);
            RUN(nb, reduce_scatter_block, s, r, 3, WEFT_DOUBLE, amax, world);
            for (int k = 0; k < 3; k++) {
                double want = mgen(0, rank + k);
                for (int p = 1; p < size; p++)
                    if (dabs(mgen(p, rank + k)) > dabs(want)) want = mgen(p, rank + k);
                ASSERT(r[k] == want, "absmax reduce_scatter_block [%d] = %g, want %g", k, r[k], want);
            }
            free(s);
        }
        /* Gaussian integers on WEFT_2INT */
        {
            int2 s[3], r[3];
            for (int k = 0; k < 3; k++) s[k] = cgen(rank, k);
            RUN(nb, allreduce, s, r, 3, WEFT_2INT, cmul, world);
            for (int k = 0; k < 3; k++) {
                int2 w = cgen(0, k);
                for (int p = 1; p < size; p++) {
                    int2 x = cgen(p, k), z = {w.value * x.value - w.index * x.index, w.value * x.index + w.index * x.value};
                    w = z;
                }
                ASSERT(r[k].value == w.value && r[k].index == w.index, "cmul [%d] = %d%+di, want %d%+di", k,
                       r[k].value, r[k].index, w.value, w.index);
            }
        }
    }
    if (size > 1) ASSERT(user_calls > calls_before, "the user functions were never called");
    ASSERT(user_bad_dtype == 0, "user functions got a wrong datatype %d times", user_bad_dtype);

    /* freed: the handle is cleared and the old value is rejected */
    weft_op stale = aff;
    CHECK(weft_op_free(&aff));
    ASSERT(aff == WEFT_OP_NULL, "weft_op_free did not clear the handle");
    EXPECT(weft_allreduce(as, ar, N, WEFT_UINT64, stale, world), WEFT_ERR_OP);
    LAST_HAS("invalid operation");
    EXPECT(weft_op_free(&stale), WEFT_ERR_OP);
    CHECK(weft_op_free(&amax));
    CHECK(weft_op_free(&cmul));
}

/* Nine non-blocking collectives in flight together, completed in reverse order; then eight
 * more completed by weft_test / weft_testall polling. */
static void test_outstanding(void) {
    enum { K = 9 };
    weft_request rq[K];
    int32_t ars[3] = {rank, 2 * rank, 3 * rank}, arr[3] = {0};
    int64_t bc[4];
    int32_t gs = 7 * rank + 1, *gr = malloc(size * sizeof *gr);
    int16_t *as = malloc(size * sizeof *as), *ar = malloc(size * sizeof *ar);
    double sc = rank + 0.5, scr = 0;
    uint64_t xs = agen(rank, 3), xr = 0;
    size_t *ac = malloc(size * sizeof *ac), *ad = malloc(size * sizeof *ad);
    uint8_t agv_s[2] = {(uint8_t)rank, (uint8_t)(rank + 100)}, *agv_r = malloc(2 * size);
    int64_t *rsb_s = malloc(size * sizeof *rsb_s), rsb_r = 0;
    int32_t ex_s = rank + 1, ex_r = -3;
    weft_op aff;
    CHECK(weft_op_create(affine_fn, 0, &aff));

    for (int k = 0; k < 4; k++) bc[k] = rank == 0 ? 42 + k : 0;
    for (int p = 0; p < size; p++) {
        as[p] = (int16_t)(100 * rank + p);
        ac[p] = 2;
        ad[p] = 2 * p;
        rsb_s[p] = rank + 10 * p;
    }
    CHECK(weft_iallreduce(ars, arr, 3, WEFT_INT32, WEFT_OP_SUM, world, &rq[0]));
    CHECK(weft_ibcast(bc, 4, WEFT_INT64, 0, world, &rq[1]));
    CHECK(weft_igather(&gs, gr, 1, WEFT_INT32, size - 1, world, &rq[2]));
    CHECK(weft_ialltoall(as, ar, 1, WEFT_INT16, world, &rq[3]));
    CHECK(weft_iscan(&sc, &scr, 1, WEFT_DOUBLE, WEFT_OP_SUM, world, &rq[4]));
    CHECK(weft_ibarrier(world, &rq[5]));
    CHECK(weft_iallreduce(&xs, &xr, 1, WEFT_UINT64, aff, world, &rq[6]));
    CHECK(weft_iallgatherv(agv_s, 2, agv_r, ac, ad, WEFT_UINT8, world, &rq[7]));
    CHECK(weft_ireduce_scatter_block(rsb_s, &rsb_r, 1, WEFT_INT64, WEFT_OP_SUM, world, &rq[8]));
    CHECK(weft_op_free(&aff)); /* started collectives keep their operation */
    for (int i = K - 1; i >= 0; i--) {
        weft_status st;
        CHECK(weft_wait(&rq[i], &st));
        ASSERT(rq[i] == WEFT_REQUEST_NULL && st.error == 0, "request %d", i);
    }
    for (int k = 0; k < 3; k++) ASSERT(arr[k] == (k + 1) * size * (size - 1) / 2, "iallreduce [%d] = %d", k, arr[k]);
    for (int k = 0; k < 4; k++) ASSERT(bc[k] == 42 + k, "ibcast [%d] = %lld", k, (long long)bc[k]);
    if (rank == size - 1)
        for (int p = 0; p < size; p++) ASSERT(gr[p] == 7 * p + 1, "igather [%d] = %d", p, gr[p]);
    for (int p = 0; p < size; p++) ASSERT(ar[p] == 100 * p + rank, "ialltoall [%d] = %d", p, ar[p]);
    ASSERT(scr == rank * (rank + 1) / 2 + (rank + 1) * 0.5, "iscan = %g", scr); /* sum_{p<=rank} (p + 0.5) */
    {
        uint64_t want = agen(0, 3);
        for (int p = 1; p < size; p++) want = affine(want, agen(p, 3));
        ASSERT(xr == want, "iallreduce with a user op freed while in flight");
    }
    for (int p = 0; p < size; p++)
        ASSERT(agv_r[2 * p] == p && agv_r[2 * p + 1] == p + 100, "iallgatherv [%d] = (%u, %u)", p, agv_r[2 * p],
               agv_r[2 * p + 1]);
    {
        int64_t want = 0;
        for (int p = 0; p < size; p++) want += p + 10 * rank;
        ASSERT(rsb_r == want, "ireduce_scatter_block = %lld, want %lld", (long long)rsb_r, (long long)want);
    }

    /* second batch: the remaining non-blocking variants, polled */
    enum { L = 8 };
    weft_request pq[L];
    int32_t rd_s[2] = {rank, -rank}, rd_r[2] = {0, 0};
    int32_t *sct_s = malloc(size * sizeof *sct_s), sct_r = -1;
    size_t *one = malloc(size * sizeof *one), *idx = malloc(size * sizeof *idx);
    int32_t *gv_r = malloc(size * sizeof *gv_r), gv_s = 3 * rank, scv_r = -1;
    int32_t *ag_r = malloc(size * sizeof *ag_r), ag_s = rank * rank;
    int32_t *a2v_s = malloc(size * sizeof *a2v_s), *a2v_r = malloc(size * sizeof *a2v_r);
    int32_t *rs_s = malloc(size * sizeof *rs_s), rs_r = -1;
    for (int p = 0; p < size; p++) {
        sct_s[p] = 11 * p;
        one[p] = 1;
        idx[p] = p;
        a2v_s[p] = 100 * rank + p;
        rs_s[p] = rank * p;
    }
    CHECK(weft_ireduce(rd_s, rd_r, 2, WEFT_INT32, WEFT_OP_MIN, 0, world, &pq[0]));
    CHECK(weft_iscatter(sct_s, &sct_r, 1, WEFT_INT32, 0, world, &pq[1]));
    CHECK(weft_igatherv(&gv_s, 1, gv_r, one, idx, WEFT_INT32, 0, world, &pq[2]));
    CHECK(weft_iscatterv(sct_s, one, idx, &scv_r, 1, WEFT_INT32, size - 1, world, &pq[3]));
    CHECK(weft_iallgather(&ag_s, ag_r, 1, WEFT_INT32, world, &pq[4]));
    CHECK(weft_ialltoallv(a2v_s, one, idx, a2v_r, one, idx, WEFT_INT32, world, &pq[5]));
    CHECK(weft_ireduce_scatter(rs_s, &rs_r, one, WEFT_INT32, WEFT_OP_SUM, world, &pq[6]));
    CHECK(weft_iexscan(&ex_s, &ex_r, 1, WEFT_INT32, WEFT_OP_PROD, world, &pq[7]));
    int flag = 0;
    CHECK(weft_test(&pq[7], &flag, NULL));
    if (flag) ASSERT(pq[7] == WEFT_REQUEST_NULL, "completed request not cleared");
    flag = 0;
    for (long spins = 0; !flag; spins++) {
        CHECK(weft_testall(L, pq, &flag, NULL));
        if (spins > 2000000) {
            ASSERT(0, "testall never completed");
            break;
        }
    }
    for (int i = 0; i < L; i++) ASSERT(pq[i] == WEFT_REQUEST_NULL, "testall left request %d", i);
    if (rank == 0) ASSERT(rd_r[0] == 0 && rd_r[1] == -(size - 1), "ireduce min = (%d, %d)", rd_r[0], rd_r[1]);
    ASSERT(sct_r == 11 * rank, "iscatter = %d", sct_r);
    if (rank == 0)
        for (int p = 0; p < size; p++) ASSERT(gv_r[p] == 3 * p, "igatherv [%d] = %d", p, gv_r[p]);
    ASSERT(scv_r == 11 * rank, "iscatterv = %d", scv_r);
    for (int p = 0; p < size; p++) ASSERT(ag_r[p] == p * p, "iallgather [%d] = %d", p, ag_r[p]);
    for (int p = 0; p < size; p++) ASSERT(a2v_r[p] == 100 * p + rank, "ialltoallv [%d] = %d", p, a2v_r[p]);
    ASSERT(rs_r == rank * size * (size - 1) / 2, "ireduce_scatter = %d", rs_r);
    {
        int32_t want = 1;
        for (int p = 0; p < rank; p++) want *= p + 1;
        if (rank > 0) ASSERT(ex_r == want, "iexscan prod = %d, want %d", ex_r, want);
        else ASSERT(ex_r == -3, "iexscan wrote at rank 0");
    }
    free(gr); free(as); free(ar); free(ac); free(ad); free(agv_r); free(rsb_s);
    free(sct_s); free(one); free(idx); free(gv_r); free(ag_r); free(a2v_s); free(a2v_r); free(rs_s);
}

/* Bad arguments: every rank passes the same one, so every rank fails before sending and the
 * communicator stays in step (checked at the end). */
static void test_errors(void) {
    int32_t s[4] = {1, 2, 3, 4}, r[4];
    double d[2] = {1, 2}, dr[2];
    size_t sz = 0, *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
    for (int p = 0; p < size; p++) {
        counts[p] = 1;
        displs[p] = p;
    }
    int32_t *big = malloc(4 * size * sizeof *big);
    weft_request req = 777;
    weft_op op = WEFT_OP_NULL;

    /* invalid roots */
    EXPECT(weft_bcast(r, 2, WEFT_INT32, size, world), WEFT_ERR_RANK);
    LAST_HAS("invalid rank");
    EXPECT(weft_bcast(r, 2, WEFT_INT32, -1, world), WEFT_ERR_RANK);
    EXPECT(weft_reduce(s, r, 2, WEFT_INT32, WEFT_OP_SUM, size + 5, world), WEFT_ERR_RANK);
    EXPECT(weft_gather(s, big, 1, WEFT_INT32, -3, world), WEFT_ERR_RANK);
    EXPECT(weft_scatterv(big, counts, displs, r, 1, WEFT_INT32, size, world), WEFT_ERR_RANK);
    EXPECT(weft_igather(s, big, 1, WEFT_INT32, -3, world, &req), WEFT_ERR_RANK);
    ASSERT(req == 777, "a failed call wrote its request");
    EXPECT(weft_ireduce(s, r, 1, WEFT_INT32, WEFT_OP_MAX, size, world, &req), WEFT_ERR_RANK);

    /* NULL buffers with nonzero counts */
    EXPECT(weft_allreduce(NULL, r, 4, WEFT_INT32, WEFT_OP_SUM, world), WEFT_ERR_ARG);
    LAST_HAS("`send` is NULL");
    EXPECT(weft_allreduce(s, NULL, 4, WEFT_INT32, WEFT_OP_SUM, world), WEFT_ERR_ARG);
    LAST_HAS("`recv` is NULL");
    EXPECT(weft_bcast(NULL, 3, WEFT_INT32, 0, world), WEFT_ERR_ARG);
    LAST_HAS("`buf` is NULL");
    EXPECT(weft_allgather(s, NULL, 1, WEFT_INT32, world), WEFT_ERR_ARG);
    EXPECT(weft_alltoall(NULL, big, 1, WEFT_INT32, world), WEFT_ERR_ARG);
    EXPECT(weft_scan(s, NULL, 2, WEFT_INT32, WEFT_OP_SUM, world), WEFT_ERR_ARG);
    EXPECT(weft_iallgather(NULL, big, 1, WEFT_INT32, world, &req), WEFT_ERR_ARG);
    EXPECT(weft_reduce(s, NULL, 1, WEFT_INT32, WEFT_OP_SUM, rank, world), WEFT_ERR_ARG); /* own root: NULL recv */
    ASSERT(req == 777, "a failed call wrote its request");
    /* NULL request, NULL count arrays */
    EXPECT(weft_iallreduce(s, r, 1, WEFT_INT32, WEFT_OP_SUM, world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_ibarrier(world, NULL), WEFT_ERR_ARG);
    EXPECT(weft_allgatherv(s, 1, big, NULL, displs, WEFT_INT32, world), WEFT_ERR_ARG);
    LAST_HAS("recvcounts");
    EXPECT(weft_alltoallv(s, counts, NULL, big, counts, displs, WEFT_INT32, world), WEFT_ERR_ARG);
    LAST_HAS("sdispls");
    EXPECT(weft_reduce_scatter(big, r, NULL, WEFT_INT32, WEFT_OP_SUM, world), WEFT_ERR_ARG);
    /* zero counts may pass NULL */
    EXPECT(weft_allreduce(NULL, NULL, 0, WEFT_INT32, WEFT_OP_SUM, world), WEFT_SUCCESS);
    EXPECT(weft_bcast(NULL, 0, WEFT_DOUBLE, 0, world), WEFT_SUCCESS);
    EXPECT(weft_gather(NULL, NULL, 0, WEFT_INT32, 0, world), WEFT_SUCCESS);

    /* invalid datatypes */
    EXPECT(weft_allreduce(s, r, 1, 0, WEFT_OP_SUM, world), WEFT_ERR_DATATYPE);
    LAST_HAS("invalid datatype");
    EXPECT(weft_allreduce(s, r, 1, 99, WEFT_OP_SUM, world), WEFT_ERR_DATATYPE);
    EXPECT(weft_bcast(r, 1, -1, 0, world), WEFT_ERR_DATATYPE);
    EXPECT(weft_ialltoall(s, big, 1, WEFT_DOUBLE_INT + 1, world, &req), WEFT_ERR_DATATYPE);
    EXPECT(weft_datatype_size(1234, &sz), WEFT_ERR_DATATYPE);
    EXPECT(weft_datatype_size(WEFT_INT16, NULL), WEFT_ERR_ARG);

    /* invalid operations */
    EXPECT(weft_allreduce(s, r, 1, WEFT_INT32, WEFT_OP_NULL, world), WEFT_ERR_OP);
    LAST_HAS("WEFT_OP_NULL");
    EXPECT(weft_allreduce(s, r, 1, WEFT_INT32, WEFT_OP_MAXLOC + 1, world), WEFT_ERR_OP);
    EXPECT(weft_reduce(s, r, 1, WEFT_INT32, 0xdead00000001ULL, 0, world), WEFT_ERR_OP);
    LAST_HAS("invalid operation handle");
    EXPECT(weft_allreduce(d, dr, 2, WEFT_DOUBLE, WEFT_OP_BAND, world), WEFT_ERR_OP);
    LAST_HAS("does not apply");
    EXPECT(weft_allreduce(s, r, 2, WEFT_INT32, WEFT_OP_MINLOC, world), WEFT_ERR_OP);
    EXPECT(weft_allreduce(s, r, 2, WEFT_BYTE, WEFT_OP_SUM, world), WEFT_ERR_OP);
    EXPECT(weft_scan(d, dr, 2, WEFT_FLOAT, WEFT_OP_LOR, world), WEFT_ERR_OP);
    EXPECT(weft_iexscan(s, r, 1, WEFT_INT32, 77, world, &req), WEFT_ERR_OP);
    EXPECT(weft_op_create(NULL, 1, &op), WEFT_ERR_ARG);
    EXPECT(weft_op_create(affine_fn, 1, NULL), WEFT_ERR_ARG);
    EXPECT(weft_op_free(NULL), WEFT_ERR_ARG);
    op = WEFT_OP_SUM;
    EXPECT(weft_op_free(&op), WEFT_ERR_OP);
    ASSERT(op == WEFT_OP_SUM, "a failed free changed the handle");
    op = WEFT_OP_NULL;
    EXPECT(weft_op_free(&op), WEFT_ERR_OP);
    ASSERT(req == 777, "a failed call wrote its request");

    /* count mismatch found locally: the send count differs from recvcounts[rank] */
    EXPECT(weft_allgatherv(s, 2, big, counts, displs, WEFT_INT32, world), WEFT_ERR_ARG);
    LAST_HAS("recvcounts");
    /* in place only for allreduce */
    EXPECT(weft_scan(s, s, 2, WEFT_INT32, WEFT_OP_SUM, world), WEFT_ERR_ARG);
    LAST_HAS("same");
    /* bad communicators */
    EXPECT(weft_allreduce(s, r, 1, WEFT_INT32, WEFT_OP_SUM, WEFT_COMM_NULL), WEFT_ERR_COMM);
    EXPECT(weft_ibarrier(0x7777777700000001ULL, &req), WEFT_ERR_COMM);
    ASSERT(req == 777, "a failed call wrote its request");

    /* count mismatch between ranks: the root sends 2 int64, the others expect 4 int32 (the
     * same bytes); the element size in the collective's header gives it away */
    if (size > 1) {
        int64_t b64[2] = {1, 2};
        int32_t b32[4] = {0};
        if (rank == 0) {
            EXPECT(weft_bcast(b64, 2, WEFT_INT64, 0, world), WEFT_SUCCESS);
        } else {
            EXPECT(weft_bcast(b32, 4, WEFT_INT32, 0, world), WEFT_ERR_ARG);
            LAST_HAS("mismatch");
        }
    }

    /* still in step and usable */
    int32_t one = 1, n = 0;
    CHECK(weft_allreduce(&one, &n, 1, WEFT_INT32, WEFT_OP_SUM, world));
    ASSERT(n == size, "allreduce after the errors = %d", n);
    CHECK(weft_barrier(world));
    free(counts);
    free(displs);
    free(big);
}

int main(void) {
    CHECK(weft_init());
    CHECK(weft_comm_world(&world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));

    for (int nb = 0; nb < 2; nb++) {
        test_barrier(nb);
        test_bcast(nb);
        test_reduce(nb);
        test_allreduce(nb);
        test_gather(nb);
        test_scatter(nb);
        test_allgather(nb);
        test_alltoall(nb);
        test_reduce_scatter(nb);
        test_scan(nb);
    }
    test_op_matrix();
    test_user_ops();
    test_outstanding();
    test_errors();

    /* a duplicated communicator works the same */
    {
        weft_comm dup;
        int32_t v = rank, w = -1;
        CHECK(weft_comm_dup(world, &dup));
        CHECK(weft_allreduce(&v, &w, 1, WEFT_INT32, WEFT_OP_MAX, dup));
        ASSERT(w == size - 1, "allreduce on a dup = %d", w);
        CHECK(weft_comm_free(&dup));
    }

    /* every rank's verdict, so a failure anywhere fails everywhere */
    int32_t mine = failures, total = -1;
    CHECK(weft_allreduce(&mine, &total, 1, WEFT_INT32, WEFT_OP_SUM, world));
    if (total == 0) printf("coll: rank %d of %d ok\n", rank, size);
    else fprintf(stderr, "coll: rank %d: %d failures here, %d in all\n", rank, failures, total);
    fflush(stdout);
    CHECK(weft_finalize());
    return total == 0 ? 0 : 1;
}

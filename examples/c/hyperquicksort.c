/* hyperquicksort.c: the reconfigurable HyperQuickSort of examples/hyperquicksort/ on the C API
 * ("Running resilient MPI applications on a Dynamic Group of Recommended Processes",
 * Algorithms 2-4), with crashes recovered by revoke + agree + shrink.
 *
 * The world's ranks are the slots (vertices) of a virtual hypercube. Every step runs on the
 * members of a view; a slot whose process left is done by the first member of c(i,1), c(i,2),
 * ... (Algorithm 4), which makes the owner of slot i xor 2^(s-1) the partner of slot i in the
 * round of dimension s (Algorithm 3). Each step's lists are committed on two members (the
 * owner, and a copy on the next member of the view), so a replacement takes a failed owner's
 * lists from the copy. Steps: 0 generation + local sort, 1..dim sorting rounds, dim+1
 * verification (sorted, last <= next first, and the input's multiset by order-independent
 * checksums: count, sum, xor, sum of squares mod 2^64).
 *
 * Build: cc -O2 -I include examples/c/hyperquicksort.c -L target/release -lweft -Wl,-rpath,target/release
 * Run:   weft-run -n 8 ./hyperquicksort [KEYS [SEED [W@STEP.ATTEMPT ...]]]
 *        (each W@STEP.ATTEMPT makes world rank W SIGKILL itself in the middle of STEP on its
 *        attempt ATTEMPT). Every survivor prints "hyperquicksort.c: rank W OK ...".
 * Exit status: 0 verified, 1 wrong output, 2 bad arguments, 3 cannot go on (list lost).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft.h"

enum { PIVOT = 1, EXCHANGE = 2, CHECKPOINT = 3, MOVE_PRIMARY = 4, MOVE_BACKUP = 5 };
#define TAG(kind, slot) (((kind) << 24) | (int)(slot))
#define MAX_KILLS 64
#define MAX_ATTEMPTS 64

typedef struct { uint64_t *k; size_t n; int held; } list;
typedef struct { int dst; int tag; const uint64_t *k; size_t n; } out_msg;
typedef struct { int src; int tag; list got; } in_msg;

static int me, nslots, dim;
static uint64_t nkeys, seed;
static int kills[MAX_KILLS][3], nkills;
/* The view: sorted member world ranks; communicator rank k is members[k]. */
static int members[1 << 16], nmem;
static weft_comm comm;

static void die_if(int bad, int code, const char *msg) {
    if (bad) {
        printf("hyperquicksort.c: FAILED: rank %d: %s\n", me, msg);
        fflush(stdout);
        weft_finalize();
        exit(code);
    }
}

static int is_member(int w) {
    for (int k = 0; k < nmem; k++)
        if (members[k] == w) return 1;
    return 0;
}

static int rank_in(int w) {
    for (int k = 0; k < nmem; k++)
        if (members[k] == w) return k;
    return -1;
}

/* c(i,s) into out (2^(s-1) entries), nearest first. */
static int cluster(int i, int s, int *out) {
    int j = i ^ (1 << (s - 1)), n = 0;
    out[n++] = j;
    for (int t = 1; t < s; t++) n += cluster(j, t, out + n);
    return n;
}

/* Algorithm 4: the member doing slot i's work. */
static int owner(int i) {
    static int c[1 << 15];
    if (is_member(i)) return i;
    for (int s = 1; s <= dim; s++) {
        int n = cluster(i, s, c);
        for (int k = 0; k < n; k++)
            if (is_member(c[k])) return c[k];
    }
    return -1;
}

/* The next member of the view (keeps the copies of w's lists); -1 when alone. */
static int buddy(int w) {
    int k = rank_in(w);
    return (k < 0 || nmem < 2) ? -1 : members[(k + 1) % nmem];
}

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Slot s's input, the same keys as the Rust example's. */
static list generate(int s) {
    uint64_t q = nkeys / nslots, r = nkeys % nslots, base = mix(seed ^ mix((uint64_t)s + 1));
    list l = {NULL, q + ((uint64_t)s < r), 1};
    l.k = malloc((l.n ? l.n : 1) * 8);
    die_if(!l.k, 3, "out of memory");
    for (size_t i = 0; i < l.n; i++) l.k[i] = mix(base + i);
    return l;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static list copy_of(const list *l) {
    list c = {malloc((l->n ? l->n : 1) * 8), l->n, 1};
    die_if(!c.k, 3, "out of memory");
    memcpy(c.k, l->k, l->n * 8);
    return c;
}

static void drop(list *l) {
    if (l->held) free(l->k);
    l->k = NULL, l->n = 0, l->held = 0;
}

/* Send every out, receive every in: lengths first, then the lists. On error the view's
 * communicator is revoked so that no member waits for a peer that gave up. */
static int transfer(out_msg *outs, int no, in_msg *ins, int ni) {
    weft_request *rq = calloc((size_t)(no + ni) + 1, sizeof *rq);
    uint64_t *lo = calloc((size_t)no + 1, 8), *li = calloc((size_t)ni + 1, 8);
    die_if(!rq || !lo || !li, 3, "out of memory");
    int rc = WEFT_SUCCESS, n = 0;
    for (int i = 0; i < ni && !rc; i++) rc = weft_irecv(&li[i], 8, rank_in(ins[i].src), ins[i].tag, comm, &rq[n++]);
    for (int i = 0; i < no && !rc; i++) {
        lo[i] = outs[i].n;
        rc = weft_isend(&lo[i], 8, rank_in(outs[i].dst), outs[i].tag, comm, &rq[n++]);
    }
    if (!rc) rc = weft_waitall((size_t)n, rq, NULL);
    for (int i = 0; i < ni && !rc; i++) {
        ins[i].got = (list){malloc((li[i] ? li[i] : 1) * 8), li[i], 1};
        die_if(!ins[i].got.k, 3, "out of memory");
    }
    n = 0;
    for (int i = 0; i < ni && !rc; i++)
        rc = weft_irecv(ins[i].got.k, ins[i].got.n * 8, rank_in(ins[i].src), ins[i].tag, comm, &rq[n++]);
    for (int i = 0; i < no && !rc; i++)
        rc = weft_isend(outs[i].k, outs[i].n * 8, rank_in(outs[i].dst), outs[i].tag, comm, &rq[n++]);
    if (!rc) rc = weft_waitall((size_t)n, rq, NULL);
    if (rc) {
        weft_comm_revoke(comm);
        weft_waitall((size_t)n, rq, NULL);
        for (int i = 0; i < ni; i++) drop(&ins[i].got);
    }
    free(rq), free(lo), free(li);
    return rc;
}

/* Committed placement: holder[s], backup[s] (-1: none); initial = lists not generated yet. */
static int *holder, *backup_of, initial = 1;
/* This member's committed lists (prim: as owner, bak: copies) and a step's new ones. */
static list *prim, *bak, *nprim, *nbak;

static void clear(list *ls) {
    for (int s = 0; s < nslots; s++) drop(&ls[s]);
}

/* Checkpoint the new lists (nprim) on the buddy; receive the copies this member keeps. */
static int checkpoint(const int *own) {
    out_msg *o = calloc((size_t)nslots, sizeof *o);
    in_msg *in = calloc((size_t)nslots, sizeof *in);
    int no = 0, ni = 0, b = buddy(me);
    for (int s = 0; s < nslots; s++) {
        if (nprim[s].held && b >= 0) o[no++] = (out_msg){b, TAG(CHECKPOINT, s), nprim[s].k, nprim[s].n};
        if (buddy(own[s]) == me) in[ni++] = (in_msg){own[s], TAG(CHECKPOINT, s), {0}};
    }
    int rc = transfer(o, no, in, ni);
    for (int i = 0; i < ni && !rc; i++) nbak[in[i].tag & 0xffffff] = in[i].got;
    free(o), free(in);
    return rc;
}

static void maybe_kill(int step, int attempt) {
    for (int i = 0; i < nkills; i++)
        if (kills[i][0] == me && kills[i][1] == step && kills[i][2] == attempt) {
            printf("hyperquicksort.c: rank %d crashes in step %d attempt %d\n", me, step, attempt);
            fflush(stdout);
            kill(getpid(), SIGKILL);
        }
}

static int generate_step(const int *own, int attempt) {
    for (int s = 0; s < nslots; s++)
        if (own[s] == me) {
            nprim[s] = generate(s);
            qsort(nprim[s].k, nprim[s].n, 8, cmp_u64);
        }
    maybe_kill(0, attempt);
    return checkpoint(own);
}

static uint64_t median(const list *l) { return l->n ? l->k[l->n / 2] : UINT64_MAX; }

static size_t split_at(const list *l, uint64_t pivot) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->k[mid] <= pivot) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Slot i's kept and given parts in the round of bit `bit`. */
static void halves(int i, int bit, uint64_t pivot, const uint64_t **keep, size_t *nk, const uint64_t **give, size_t *ng) {
    size_t at = split_at(&prim[i], pivot);
    const uint64_t *lo = prim[i].k, *hi = prim[i].k + at;
    size_t nlo = at, nhi = prim[i].n - at;
    if (!(i & bit)) *keep = lo, *nk = nlo, *give = hi, *ng = nhi;
    else *keep = hi, *nk = nhi, *give = lo, *ng = nlo;
}

static list merge(const uint64_t *a, size_t na, const uint64_t *b, size_t nb) {
    list o = {malloc((na + nb ? na + nb : 1) * 8), na + nb, 1};
    die_if(!o.k, 3, "out of memory");
    size_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) o.k[n++] = a[i] <= b[j] ? a[i++] : b[j++];
    while (i < na) o.k[n++] = a[i++];
    while (j < nb) o.k[n++] = b[j++];
    return o;
}

static int sort_round(const int *own, int round, int attempt) {
    int s = dim - round + 1, bit = 1 << (s - 1), rc;
    uint64_t *pivot = calloc((size_t)nslots, 8);
    out_msg *o = calloc((size_t)nslots * 2 + 1, sizeof *o);
    in_msg *in = calloc((size_t)nslots + 1, sizeof *in);
    int no = 0, ni = 0;
    /* Pivots: each cluster root's owner sends the median of the root's list to the cluster's
     * other owners (once per owner). */
    for (int r = 0; r < nslots; r += 1 << s) {
        if (own[r] == me) {
            pivot[r] = median(&prim[r]);
            for (int i = r; i < r + (1 << s); i++) {
                int dup = own[i] == me;
                for (int j = r; j < i && !dup; j++) dup = own[j] == own[i];
                if (!dup) o[no++] = (out_msg){own[i], TAG(PIVOT, r), &pivot[r], 1};
            }
        } else {
            int mine = 0;
            for (int i = r; i < r + (1 << s); i++) mine |= own[i] == me;
            if (mine) in[ni++] = (in_msg){own[r], TAG(PIVOT, r), {0}};
        }
    }
    rc = transfer(o, no, in, ni);
    for (int i = 0; i < ni && !rc; i++) {
        int r = in[i].tag & 0xffffff;
        pivot[r] = in[i].got.n ? in[i].got.k[0] : UINT64_MAX;
        drop(&in[i].got);
    }
    maybe_kill(round, attempt); /* also after a failed pivot exchange: kills stay deterministic */
    no = ni = 0;
    for (int i = 0; i < nslots && !rc; i++) {
        int j = i ^ bit;
        if (own[i] != me || own[j] == me) continue;
        const uint64_t *keep, *give;
        size_t nk, ng;
        halves(i, bit, pivot[(i >> s) << s], &keep, &nk, &give, &ng);
        o[no++] = (out_msg){own[j], TAG(EXCHANGE, j), give, ng};
        in[ni++] = (in_msg){own[j], TAG(EXCHANGE, i), {0}};
    }
    if (!rc) rc = transfer(o, no, in, ni);
    for (int i = 0, k = 0; i < nslots && !rc; i++) {
        int j = i ^ bit;
        if (own[i] != me) continue;
        const uint64_t *keep, *give, *pk, *pg;
        size_t nk, ng, npk, npg;
        halves(i, bit, pivot[(i >> s) << s], &keep, &nk, &give, &ng);
        if (own[j] == me) {
            halves(j, bit, pivot[(j >> s) << s], &pk, &npk, &pg, &npg);
            nprim[i] = merge(keep, nk, pg, npg);
        } else {
            nprim[i] = merge(keep, nk, in[k].got.k, in[k].got.n);
            drop(&in[k++].got);
        }
    }
    free(pivot), free(o), free(in);
    return rc ? rc : checkpoint(own);
}

/* Verification: per slot [present, unsorted, len, first, last] and the checksums, summed over
 * the view (each slot is owned by one member). Returns the weft error, or sets *good. */
static int verify(const int *own, int attempt, int *good, char *line, size_t cap) {
    uint64_t *t = calloc((size_t)nslots * 5, 8), *all = calloc((size_t)nslots * 5, 8);
    uint64_t sums[6] = {0}, x[2] = {0}, S[6], X[2];
    for (int s = 0; s < nslots; s++) {
        if (own[s] != me) continue;
        list *l = &prim[s], in = generate(s);
        uint64_t *e = &t[5 * s];
        e[0] = 1, e[2] = l->n, e[3] = l->n ? l->k[0] : 0, e[4] = l->n ? l->k[l->n - 1] : 0;
        for (size_t i = 0; i < l->n; i++) {
            if (i && l->k[i - 1] > l->k[i]) e[1] = 1;
            sums[1] += l->k[i], sums[2] += l->k[i] * l->k[i], x[0] ^= l->k[i];
        }
        for (size_t i = 0; i < in.n; i++) sums[4] += in.k[i], sums[5] += in.k[i] * in.k[i], x[1] ^= in.k[i];
        sums[0] += l->n, sums[3] += in.n;
        drop(&in);
    }
    maybe_kill(dim + 1, attempt);
    int rc = weft_allreduce(t, all, (size_t)nslots * 5, WEFT_UINT64, WEFT_OP_SUM, comm);
    if (!rc) rc = weft_allreduce(sums, S, 6, WEFT_UINT64, WEFT_OP_SUM, comm);
    if (!rc) rc = weft_allreduce(x, X, 2, WEFT_UINT64, WEFT_OP_BXOR, comm);
    if (rc) {
        weft_comm_revoke(comm);
    } else {
        uint64_t bad = 0, inv = 0, last = 0;
        int any = 0;
        for (int s = 0; s < nslots; s++) {
            uint64_t *e = &all[5 * s];
            bad += e[1] + (e[0] != 1);
            if (e[2]) {
                if (any && last > e[3]) inv++;
                last = e[4], any = 1;
            }
        }
        *good = !bad && !inv && S[0] == nkeys && S[0] == S[3] && S[1] == S[4] && S[2] == S[5] && X[0] == X[1];
        snprintf(line, cap, "keys=%llu unsorted=%llu inversions=%llu checksum_sum=%#llx checksum_xor=%#llx checksum_squares=%#llx",
                 (unsigned long long)S[0], (unsigned long long)bad, (unsigned long long)inv, (unsigned long long)S[1],
                 (unsigned long long)X[0], (unsigned long long)S[2]);
    }
    free(t), free(all);
    return rc;
}

/* Learn the view of `comm` (members' world ranks, in rank order). */
static int learn_view(void) {
    int n;
    int rc = weft_comm_size(comm, &n);
    if (!rc) rc = weft_allgather(&me, members, 1, WEFT_INT32, comm);
    if (!rc) nmem = n;
    return rc;
}

static int view_changes;

/* End of a step: agree on the outcome; when not every member succeeded, revoke, shrink and
 * learn the new view. Returns 1 when the step is committed. */
static int end_step(int ok) {
    if (!ok) weft_comm_revoke(comm);
    uint64_t flag = (uint64_t)ok;
    if (weft_comm_agree(comm, &flag) == WEFT_SUCCESS && flag == 1) return 1;
    for (int i = 0; i < MAX_ATTEMPTS; i++) {
        weft_comm next;
        weft_comm_revoke(comm);
        die_if(weft_comm_shrink(comm, &next) != WEFT_SUCCESS, 3, "shrink failed");
        comm = next;
        if (learn_view() == WEFT_SUCCESS) {
            view_changes++;
            return 0;
        }
    }
    die_if(1, 3, "no stable view");
    return 0;
}

/* Move the committed lists to the placement the view wants (owner + the owner's buddy) into
 * nprim / nbak. Returns 1 when committed (*moved = 0: nothing had to move). */
static int move_lists(const int *own, int *moved) {
    *moved = 0;
    for (int s = 0; s < nslots; s++) *moved |= own[s] != holder[s] || buddy(own[s]) != backup_of[s];
    if (initial || !*moved) return (*moved = 0, 1);
    out_msg *o = calloc((size_t)nslots * 2 + 1, sizeof *o);
    in_msg *in = calloc((size_t)nslots * 2 + 1, sizeof *in);
    int no = 0, ni = 0;
    for (int s = 0; s < nslots; s++) {
        int h = holder[s], b = backup_of[s], src = is_member(h) ? h : (b >= 0 && is_member(b)) ? b : -1;
        if (src < 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "slot %d's list is lost: its holder %d and its backup %d both left the view", s, h, b);
            die_if(1, 3, msg);
        }
        const list *have = prim[s].held ? &prim[s] : &bak[s];
        int nb = buddy(own[s]);
        if (own[s] != h && own[s] != src) {
            if (src == me) o[no++] = (out_msg){own[s], TAG(MOVE_PRIMARY, s), have->k, have->n};
            if (own[s] == me) in[ni++] = (in_msg){src, TAG(MOVE_PRIMARY, s), {0}};
        }
        if (nb >= 0 && nb != b && nb != h && nb != src) {
            if (src == me) o[no++] = (out_msg){nb, TAG(MOVE_BACKUP, s), have->k, have->n};
            if (nb == me) in[ni++] = (in_msg){src, TAG(MOVE_BACKUP, s), {0}};
        }
    }
    int rc = transfer(o, no, in, ni);
    if (!rc) {
        for (int i = 0; i < ni; i++) {
            int s = in[i].tag & 0xffffff;
            if (in[i].tag >> 24 == MOVE_PRIMARY) nprim[s] = in[i].got; else nbak[s] = in[i].got;
        }
        for (int s = 0; s < nslots; s++) {
            const list *have = prim[s].held ? &prim[s] : &bak[s];
            if (own[s] == me && !nprim[s].held) nprim[s] = copy_of(have);
            if (buddy(own[s]) == me && !nbak[s].held) nbak[s] = copy_of(have);
        }
    }
    free(o), free(in);
    return end_step(rc == WEFT_SUCCESS);
}

/* Install the step's new lists and the placement of the view. */
static void commit(const int *own) {
    clear(prim), clear(bak);
    list *t = prim; prim = nprim, nprim = t;
    t = bak, bak = nbak, nbak = t;
    for (int s = 0; s < nslots; s++) holder[s] = own[s], backup_of[s] = buddy(own[s]);
    initial = 0;
}

int main(int argc, char **argv) {
    char *end;
    nkeys = argc > 1 ? strtoull(argv[1], &end, 10) : 1u << 20;
    int bad_args = argc > 1 && *end;
    seed = argc > 2 ? strtoull(argv[2], &end, 10) : 1;
    bad_args |= argc > 2 && *end;
    for (int i = 3; i < argc && nkills < MAX_KILLS; i++, nkills++)
        bad_args |= sscanf(argv[i], "%d@%d.%d", &kills[nkills][0], &kills[nkills][1], &kills[nkills][2]) != 3;
    if (weft_init() != WEFT_SUCCESS) return 3;
    weft_comm world;
    weft_comm_world(&world);
    weft_comm_rank(world, &me);
    weft_comm_size(world, &nslots);
    die_if(bad_args, 2, "usage: hyperquicksort [KEYS [SEED [W@STEP.ATTEMPT ...]]]");
    die_if(nslots & (nslots - 1) || nslots > 1 << 16, 2, "the hypercube needs a power of two ranks up to 65536");
    while ((1 << dim) < nslots) dim++;
    die_if(weft_comm_dup(world, &comm) != WEFT_SUCCESS || learn_view() != WEFT_SUCCESS, 3, "no first view");
    holder = calloc((size_t)nslots, sizeof *holder), backup_of = calloc((size_t)nslots, sizeof *backup_of);
    prim = calloc((size_t)nslots, sizeof *prim), bak = calloc((size_t)nslots, sizeof *bak);
    nprim = calloc((size_t)nslots, sizeof *nprim), nbak = calloc((size_t)nslots, sizeof *nbak);
    int *own = calloc((size_t)nslots, sizeof *own), good = 0;
    die_if(!holder || !backup_of || !prim || !bak || !nprim || !nbak || !own, 3, "out of memory");
    char line[512] = "";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int step = 0; step <= dim + 1; step++) {
        for (int attempt = 0;; attempt++) {
            die_if(attempt >= MAX_ATTEMPTS, 3, "too many attempts");
            int moved, rc;
            for (int s = 0; s < nslots; s++) own[s] = owner(s);
            if (!move_lists(own, &moved)) {
                clear(nprim), clear(nbak);
                continue;
            }
            if (moved) commit(own);
            if (step == 0) rc = generate_step(own, attempt);
            else if (step <= dim) rc = sort_round(own, step, attempt);
            else rc = verify(own, attempt, &good, line, sizeof line);
            if (end_step(rc == WEFT_SUCCESS)) {
                if (step <= dim) commit(own);
                break;
            }
            clear(nprim), clear(nbak);
        }
        if (step == dim) clock_gettime(CLOCK_MONOTONIC, &t1);
    }
    double sort_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    die_if(!good, 1, line);
    printf("hyperquicksort.c: rank %d OK members=%d view_changes=%d sort_s=%.3f %s\n", me, nmem, view_changes, sort_s, line);
    weft_finalize();
    return 0;
}

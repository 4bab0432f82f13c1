/* The interference model: construction from events, Eq. 2/Eq. 4 fitness with
 * full and incremental evaluation, alignments at the current point, and the
 * search-problem glue. */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int optimizer_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

optimizer_options optimizer_options_default(void)
{
    optimizer_options o = {.include_reads = 0, .granule = 1};
    return o;
}

/* ---- construction ----------------------------------------------------------- */

/* Who touches an address: enough to tell whether another thread writes or
 * accesses it. */
typedef struct sharing {
    uint32_t writer, accessor; /* first seen, UINT32_MAX = none */
    uint8_t many_writers, many_accessors;
} sharing;

static void note_thread(uint32_t *first, uint8_t *many, uint32_t th)
{
    if (*first == UINT32_MAX)
        *first = th;
    else if (*first != th)
        *many = 1;
}

static int kept(const sharing *s, const optimizer_options *o, uint32_t th, int is_write)
{
    if (is_write)
        return o->include_reads ? s->many_accessors : s->many_writers;
    if (!o->include_reads)
        return 0;
    return s->many_writers || (s->writer != UINT32_MAX && s->writer != th);
}

static int is_access(uint8_t kind)
{
    return kind == WEFT_EV_READ || kind == WEFT_EV_WRITE || kind == WEFT_EV_RMW;
}

static int alloc_state(optimizer_model *m)
{
    size_t n = m->nev ? m->nev : 1, na = m->naddr ? m->naddr : 1;
    m->leaves = 1;
    while (m->leaves < na)
        m->leaves *= 2;
    m->ent = calloc(n, sizeof *m->ent);
    m->base_ev = calloc(n, sizeof *m->base_ev);
    m->cur = calloc(n, sizeof *m->cur);
    m->tau = calloc(n, sizeof *m->tau);
    m->asum = calloc(na, sizeof *m->asum);
    m->azero = calloc(na, sizeof *m->azero);
    m->tree = calloc(2 * m->leaves, sizeof *m->tree);
    m->mark = calloc(na, sizeof *m->mark);
    m->touched = calloc(na, sizeof *m->touched);
    size_t mp = m->max_per_addr ? m->max_per_addr : 1;
    m->moved = calloc(mp, sizeof *m->moved);
    m->still = calloc(mp, sizeof *m->still);
    m->runs = calloc(mp + 1, sizeof *m->runs);
    m->undo_ent = calloc(n, sizeof *m->undo_ent);
    m->undo_sum = calloc(na, sizeof *m->undo_sum);
    m->undo_zero = calloc(na, sizeof *m->undo_zero);
    return m->ent && m->base_ev && m->runs && m->cur && m->tau && m->asum && m->azero && m->tree &&
                   m->mark && m->touched && m->moved && m->still && m->undo_ent && m->undo_sum &&
                   m->undo_zero
               ? 0
               : -1;
}

/* Keep the accesses at shared addresses, in (thread, seq) order (input order
 * on ties). Ordering and address numbering use stable radix sorts: this is
 * the bulk of building a model from 10^5 events. */
static int build_events(optimizer_model *m, const weft_event *ev, size_t n, char *err,
                        size_t errlen)
{
    size_t na = 0;
    for (size_t i = 0; i < n; i++)
        na += is_access(ev[i].kind);
    size_t cap = na ? na : 1;
    radix_rec *a = malloc(cap * sizeof *a), *tmp = malloc(cap * sizeof *tmp);
    size_t *order = malloc(cap * sizeof *order);
    uint32_t *kid = malloc(cap * sizeof *kid);
    sharing *sh = NULL;
    size_t *newid = NULL;
    int rc = -1;
    if (!a || !tmp || !order || !kid)
        goto done;
    for (size_t i = 0, k = 0; i < n; i++)
        if (is_access(ev[i].kind))
            a[k++] = (radix_rec){ev[i].seq, i};
    radix_rec *r = optimizer_radix_sort(a, tmp, na), *other = r == a ? tmp : a;
    for (size_t j = 0; j < na; j++)
        r[j].key = ev[r[j].val].thread;
    r = optimizer_radix_sort(r, other, na), other = r == a ? tmp : a;
    uint64_t g = m->opt.granule;
    for (size_t j = 0; j < na; j++) {
        order[j] = r[j].val;
        r[j] = (radix_rec){ev[order[j]].addr - ev[order[j]].addr % g, j};
    }
    r = optimizer_radix_sort(r, other, na);
    size_t nk = 0;
    for (size_t j = 0; j < na; j++) {
        if (j > 0 && r[j].key != r[j - 1].key)
            nk++;
        kid[r[j].val] = (uint32_t)nk;
    }
    nk += na > 0;
    sh = malloc((nk ? nk : 1) * sizeof *sh);
    newid = malloc((nk ? nk : 1) * sizeof *newid);
    m->ev = calloc(cap, sizeof *m->ev);
    if (!sh || !newid || !m->ev)
        goto done;
    for (size_t k = 0; k < nk; k++) {
        sh[k] = (sharing){UINT32_MAX, UINT32_MAX, 0, 0};
        newid[k] = SIZE_MAX;
    }
    for (size_t j = 0; j < na; j++) {
        const weft_event *e = &ev[order[j]];
        note_thread(&sh[kid[j]].accessor, &sh[kid[j]].many_accessors, e->thread);
        if (e->kind != WEFT_EV_READ)
            note_thread(&sh[kid[j]].writer, &sh[kid[j]].many_writers, e->thread);
    }
    for (size_t j = 0; j < na; j++) {
        const weft_event *e = &ev[order[j]];
        size_t k = kid[j];
        int w = e->kind != WEFT_EV_READ;
        if (!kept(&sh[k], &m->opt, e->thread, w))
            continue;
        if (newid[k] == SIZE_MAX)
            newid[k] = m->naddr++;
        m->ev[m->nev++] = (model_event){.t = e->time,
                                        .seq = e->seq,
                                        .pc = e->pc,
                                        .addr = e->addr,
                                        .thread = e->thread,
                                        .addr_id = (uint32_t)newid[k],
                                        .is_write = (uint8_t)w};
    }
    rc = 0;
done:
    free(a), free(tmp), free(order), free(kid), free(sh), free(newid);
    if (rc < 0)
        optimizer_fail(err, errlen, "optimizer: out of memory");
    return rc;
}

static int build_layout(optimizer_model *m)
{
    size_t nt = m->nthreads ? m->nthreads : 1;
    m->thread_begin = calloc(nt, sizeof *m->thread_begin);
    m->thread_end = calloc(nt, sizeof *m->thread_end);
    m->addr_begin = calloc(m->naddr + 1, sizeof *m->addr_begin);
    if (!m->thread_begin || !m->thread_end || !m->addr_begin)
        return -1;
    for (size_t i = m->nev; i-- > 0;)
        m->thread_begin[m->ev[i].thread] = i;
    for (size_t i = 0; i < m->nev; i++) {
        m->thread_end[m->ev[i].thread] = i + 1;
        m->addr_begin[m->ev[i].addr_id + 1]++;
    }
    for (size_t a = 0; a < m->naddr; a++) {
        size_t n = m->addr_begin[a + 1];
        if (n > m->max_per_addr)
            m->max_per_addr = n;
        m->addr_begin[a + 1] += m->addr_begin[a];
    }
    if (alloc_state(m) < 0)
        return -1;
    size_t *fill = calloc(m->naddr ? m->naddr : 1, sizeof *fill);
    if (!fill)
        return -1;
    for (size_t i = 0; i < m->nev; i++) {
        const model_event *e = &m->ev[i];
        size_t a = e->addr_id, k = m->addr_begin[a] + fill[a]++;
        m->ent[k] = (model_entry){
            .tau = e->t, .ev = (uint32_t)i, .thread = e->thread, .is_write = e->is_write};
        m->base_ev[k] = (uint32_t)i;
    }
    free(fill);
    return 0;
}

optimizer_model *optimizer_model_from_events(const weft_event *ev, size_t n,
                                             const optimizer_options *opt, char *err, size_t errlen)
{
    optimizer_options o = opt ? *opt : optimizer_options_default();
    if (o.granule == 0) {
        optimizer_fail(err, errlen, "optimizer: granule must be at least 1 byte");
        return NULL;
    }
    optimizer_model *m = calloc(1, sizeof *m);
    if (!m) {
        optimizer_fail(err, errlen, "optimizer: out of memory");
        return NULL;
    }
    m->opt = o;
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].thread >= m->nthreads)
            m->nthreads = ev[i].thread + 1;
        na += is_access(ev[i].kind);
    }
    if (na >= UINT32_MAX || m->nthreads >= UINT32_MAX) {
        free(m);
        optimizer_fail(err, errlen, "optimizer: more than 2^32 accesses or threads");
        return NULL;
    }
    if (build_events(m, ev, n, err, errlen) < 0) {
        optimizer_model_free(m);
        return NULL;
    }
    if (build_layout(m) < 0) {
        optimizer_model_free(m);
        optimizer_fail(err, errlen, "optimizer: out of memory");
        return NULL;
    }
    optimizer_fitness(m, m->cur);
    return m;
}

void optimizer_model_free(optimizer_model *m)
{
    if (!m)
        return;
    free(m->ev), free(m->thread_begin), free(m->thread_end), free(m->addr_begin);
    free(m->ent), free(m->base_ev), free(m->runs), free(m->cur), free(m->tau), free(m->asum),
        free(m->azero);
    free(m->tree), free(m->mark), free(m->touched), free(m->moved), free(m->still);
    free(m->undo_ent), free(m->undo_sum), free(m->undo_zero);
    free(m);
}

size_t optimizer_model_dim(const optimizer_model *m)
{
    return m->nev;
}

uint32_t optimizer_model_threads(const optimizer_model *m)
{
    return m->nthreads;
}

size_t optimizer_model_addresses(const optimizer_model *m)
{
    return m->naddr;
}

int optimizer_model_var(const optimizer_model *m, size_t v, optimizer_var *out)
{
    if (v >= m->nev)
        return -1;
    const model_event *e = &m->ev[v];
    *out = (optimizer_var){.thread = e->thread,
                           .seq = e->seq,
                           .pc = e->pc,
                           .addr = e->addr,
                           .time = e->t,
                           .tau = m->tau[v],
                           .is_write = e->is_write};
    return 0;
}

/* ---- Eq. 4 on one address ------------------------------------------------------ */

/* The two earliest events seen so far that belong to different threads.
 * Entries arrive in non-increasing tau, so the newest is always the earliest:
 * (t1, th1) is the overall earliest and t2 the earliest of any other thread. */
typedef struct tracker {
    uint64_t t1, t2;
    uint32_t th1, e1, e2;
    int has1, has2;
} tracker;

static inline void tracker_add(tracker *k, const model_entry *x)
{
    if (k->has1 && k->th1 != x->thread) {
        k->t2 = k->t1;
        k->e2 = k->e1;
        k->has2 = 1;
    }
    k->t1 = x->tau;
    k->e1 = x->ev;
    k->th1 = x->thread;
    k->has1 = 1;
}

static inline int tracker_query(const tracker *k, uint32_t th, uint64_t *t, uint32_t *e)
{
    if (k->has1 && k->th1 != th) {
        *t = k->t1;
        *e = k->e1;
        return 1;
    }
    if (k->has2) {
        *t = k->t2;
        *e = k->e2;
        return 1;
    }
    return 0;
}

typedef struct align_sink {
    const optimizer_model *m;
    optimizer_pair *out;
    size_t max, count;
} align_sink;

/* Sum of the address's Eq. 4 terms, by one backwards sweep over its sorted
 * entries. Events at equal tau are added before any of them is queried, since
 * "later" includes "at the same time". */
static double scan_address(const model_entry *e, size_t n, size_t *zeros, align_sink *sink)
{
    tracker any = {0}, wr = {0};
    double sum = 0;
    size_t z = 0;
    size_t i = n;
    while (i > 0) {
        size_t j = i - 1;
        while (j > 0 && e[j - 1].tau == e[i - 1].tau)
            j--;
        for (size_t k = i; k-- > j;) {
            tracker_add(&any, &e[k]);
            if (e[k].is_write)
                tracker_add(&wr, &e[k]);
        }
        for (size_t k = i; k-- > j;) {
            uint64_t t;
            uint32_t partner;
            if (!tracker_query(e[k].is_write ? &any : &wr, e[k].thread, &t, &partner))
                continue;
            uint64_t d = t - e[k].tau;
            sum += 1.0 - 1.0 / (1.0 + (double)d);
            if (d == 0) {
                z++;
                if (sink && sink->count++ < sink->max) {
                    optimizer_pair *p = &sink->out[sink->count - 1];
                    optimizer_pair_fill(sink->m, e[k].ev, partner, p);
                    p->delay = 0;
                    p->aligned_time = e[k].tau;
                }
            }
        }
        i = j;
    }
    *zeros = z;
    return sum;
}

static void tree_update(optimizer_model *m, size_t a)
{
    size_t k = m->leaves + a;
    m->tree[k] = m->asum[a];
    for (k /= 2; k >= 1; k /= 2)
        m->tree[k] = m->tree[2 * k] + m->tree[2 * k + 1];
}

static void rescan(optimizer_model *m, size_t a)
{
    size_t b = m->addr_begin[a], n = m->addr_begin[a + 1] - b;
    size_t z;
    m->asum[a] = scan_address(m->ent + b, n, &z, NULL);
    m->zeros = m->zeros - m->azero[a] + z;
    m->azero[a] = z;
}

double optimizer_fitness(optimizer_model *m, const uint64_t *delta)
{
    m->undo_valid = 0;
    if (m->nev && delta != m->cur)
        memcpy(m->cur, delta, m->nev * sizeof *m->cur);
    for (uint32_t th = 0; th < m->nthreads; th++) {
        uint64_t cum = 0;
        for (size_t i = m->thread_begin[th]; i < m->thread_end[th]; i++) {
            cum += m->cur[i];
            m->tau[i] = m->ev[i].t + cum;
        }
    }
    for (size_t a = 0; a < m->naddr; a++) {
        optimizer_sort_address(m, a);
        rescan(m, a);
        m->tree[m->leaves + a] = m->asum[a];
    }
    for (size_t k = m->leaves; k-- > 1;)
        m->tree[k] = m->tree[2 * k] + m->tree[2 * k + 1];
    return m->tree[1];
}

/* Shift the events of `th` at or after v by d (mod 2^64, so negative shifts
 * work) in address a, then restore the order by merging the shifted run with
 * the unshifted one: both stay sorted, since a shift preserves their order. */
static void shift_address(optimizer_model *m, size_t a, uint32_t th, size_t v, uint64_t d)
{
    model_entry *e = m->ent + m->addr_begin[a];
    size_t n = m->addr_begin[a + 1] - m->addr_begin[a];
    size_t nm = 0, ns = 0;
    for (size_t k = 0; k < n; k++) {
        if (e[k].thread == th && e[k].ev >= v) {
            m->moved[nm] = e[k];
            m->moved[nm++].tau += d;
        } else {
            m->still[ns++] = e[k];
        }
    }
    size_t i = 0, j = 0, k = 0;
    while (i < nm && j < ns)
        e[k++] = entry_before(&m->moved[i], &m->still[j]) ? m->moved[i++] : m->still[j++];
    while (i < nm)
        e[k++] = m->moved[i++];
    while (j < ns)
        e[k++] = m->still[j++];
}

static void shift_thread(optimizer_model *m, size_t v, uint64_t d)
{
    for (size_t i = v; i < m->thread_end[m->ev[v].thread]; i++)
        m->tau[i] += d;
}

/* The exact inverse of the last move: put back the saved addresses. The
 * tree is recomputed from the restored leaves, so the result is bit for bit
 * the value before the move. */
static double undo_last_move(optimizer_model *m)
{
    size_t v = m->undo_v;
    shift_thread(m, v, m->undo_from - m->undo_to);
    m->cur[v] = m->undo_from;
    size_t off = 0;
    for (size_t k = 0; k < m->ntouched; k++) {
        size_t a = m->touched[k], b = m->addr_begin[a], n = m->addr_begin[a + 1] - b;
        memcpy(m->ent + b, m->undo_ent + off, n * sizeof *m->ent);
        off += n;
        m->zeros = m->zeros - m->azero[a] + m->undo_zero[k];
        m->azero[a] = m->undo_zero[k];
        m->asum[a] = m->undo_sum[k];
        tree_update(m, a);
    }
    m->undo_valid = 0;
    return m->tree[1];
}

double optimizer_fitness_move(optimizer_model *m, size_t v, uint64_t to)
{
    if (v >= m->nev || m->cur[v] == to)
        return m->tree[1];
    if (m->undo_valid && v == m->undo_v && to == m->undo_from && m->cur[v] == m->undo_to)
        return undo_last_move(m);
    uint64_t d = to - m->cur[v];
    m->undo_valid = 1;
    m->undo_v = v;
    m->undo_from = m->cur[v];
    m->undo_to = to;
    m->cur[v] = to;
    uint32_t th = m->ev[v].thread;
    if (++m->stamp == 0) {
        memset(m->mark, 0, m->naddr * sizeof *m->mark);
        m->stamp = 1;
    }
    shift_thread(m, v, d);
    size_t nt = 0;
    for (size_t i = v; i < m->thread_end[th]; i++) {
        uint32_t a = m->ev[i].addr_id;
        if (m->mark[a] != m->stamp) {
            m->mark[a] = m->stamp;
            m->touched[nt++] = a;
        }
    }
    m->ntouched = nt;
    size_t off = 0;
    for (size_t k = 0; k < nt; k++) {
        size_t a = m->touched[k], b = m->addr_begin[a], n = m->addr_begin[a + 1] - b;
        memcpy(m->undo_ent + off, m->ent + b, n * sizeof *m->ent);
        off += n;
        m->undo_sum[k] = m->asum[a];
        m->undo_zero[k] = m->azero[a];
        shift_address(m, a, th, v, d);
        rescan(m, a);
        tree_update(m, a);
    }
    return m->tree[1];
}

size_t optimizer_aligned(const optimizer_model *m)
{
    return m->zeros;
}

size_t optimizer_alignments(const optimizer_model *m, optimizer_pair *out, size_t max)
{
    align_sink sink = {.m = m, .out = out, .max = out ? max : 0};
    for (size_t a = 0; a < m->naddr; a++) {
        if (!m->azero[a])
            continue;
        size_t b = m->addr_begin[a], n = m->addr_begin[a + 1] - b, z;
        scan_address(m->ent + b, n, &z, &sink);
    }
    return sink.count;
}

void optimizer_pair_fill(const optimizer_model *m, size_t va, size_t vb, optimizer_pair *p)
{
    const model_event *a = &m->ev[va], *b = &m->ev[vb];
    *p = (optimizer_pair){.va = va,
                          .vb = vb,
                          .thread_a = a->thread,
                          .thread_b = b->thread,
                          .seq_a = a->seq,
                          .seq_b = b->seq,
                          .addr = a->addr,
                          .time_a = a->t,
                          .time_b = b->t,
                          .delay = b->t >= a->t ? b->t - a->t : 0};
}

/* ---- search glue ---------------------------------------------------------------- */

static double problem_fitness(void *ctx, const uint64_t *x)
{
    return optimizer_fitness(ctx, x);
}

static double problem_move(void *ctx, size_t i, uint64_t from, uint64_t to)
{
    (void)from;
    return optimizer_fitness_move(ctx, i, to);
}

static int problem_target(void *ctx, const uint64_t *x, double f)
{
    (void)x, (void)f;
    return optimizer_aligned(ctx) > 0;
}

search_problem optimizer_search_problem(optimizer_model *m)
{
    search_problem p = {.dim = m->nev,
                        .ctx = m,
                        .fitness = problem_fitness,
                        .move = problem_move,
                        .target = problem_target};
    return p;
}

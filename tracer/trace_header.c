/* The header (shared by traces and spools, only the magic differs), the
 * trace's meta data and the footer. Layout: docs/trace-format.md. */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- header ---- */

typedef struct growbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} growbuf;

static uint8_t *gb_room(growbuf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return NULL;
        }
        b->p = q;
        b->cap = cap;
    }
    uint8_t *r = b->p + b->n;
    b->n += n;
    return r;
}

static void gb_u32(growbuf *b, uint32_t v)
{
    uint8_t *p = gb_room(b, 4);
    if (p)
        put_u32(p, v);
}

static void gb_u64(growbuf *b, uint64_t v)
{
    uint8_t *p = gb_room(b, 8);
    if (p)
        put_u64(p, v);
}

static void gb_bytes(growbuf *b, const void *s, size_t n)
{
    uint8_t *p = gb_room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

static void gb_str(growbuf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    gb_u32(b, (uint32_t)n);
    gb_bytes(b, s, n);
}

int trc_zstd_level(void)
{
    const char *e = getenv("WEFT_TRACE_ZSTD_LEVEL");
    char *end;
    long l = e && *e ? strtol(e, &end, 10) : -1;
    return l >= 0 && l <= 19 && *end == 0 ? (int)l : TRC_ZSTD_LEVEL_DEFAULT;
}

bool trc_frames_wanted(void)
{
    const char *e = getenv("WEFT_TRACE_FRAMES");
    return e && strcmp(e, "1") == 0;
}

size_t trc_header_encode(const weft_trace_meta *m, const char magic[8], uint32_t version,
                         uint32_t zstd_level, size_t pad_to, uint8_t **out)
{
    growbuf b = {0};
    const weft_trace_settings *s = &m->settings;
    gb_bytes(&b, magic, 8);
    gb_u32(&b, version);
    gb_u32(&b, 0); /* header_len, patched below */
    gb_u32(&b, s->mode);
    gb_u32(&b, s->cpi);
    gb_u64(&b, s->ps_per_cycle);
    gb_u64(&b, s->quantum);
    gb_u32(&b, s->filter);
    uint32_t nr = s->nranges > WEFT_TRACE_MAX_RANGES ? WEFT_TRACE_MAX_RANGES : s->nranges;
    gb_u32(&b, nr);
    for (uint32_t i = 0; i < nr; i++) {
        gb_u64(&b, s->range_lo[i]);
        gb_u64(&b, s->range_hi[i]);
    }
    /* Zero-pad the policy after its NUL so equal names give equal bytes. */
    char policy[32] = {0};
    memcpy(policy, s->policy, strnlen(s->policy, sizeof policy - 1));
    gb_bytes(&b, policy, sizeof policy);
    gb_u64(&b, s->seed);
    gb_str(&b, m->binary_path);
    uint32_t bl = m->build_id_len > sizeof m->build_id ? sizeof m->build_id : m->build_id_len;
    gb_u32(&b, bl);
    gb_bytes(&b, m->build_id, bl);
    gb_u32(&b, m->argc);
    for (uint32_t i = 0; i < m->argc; i++)
        gb_str(&b, m->argv ? m->argv[i] : NULL);
    if (version >= 2) {
        gb_u32(&b, s->record & WEFT_RECORD_ALL ? s->record & WEFT_RECORD_FLAGS : WEFT_RECORD_ALL);
        gb_u32(&b, zstd_level);
        gb_u64(&b, m->start_code);
        uint32_t no = m->nobjects > WEFT_TRACE_MAX_OBJECTS ? WEFT_TRACE_MAX_OBJECTS : m->nobjects;
        gb_u32(&b, no);
        for (uint32_t i = 0; i < no; i++) {
            gb_u64(&b, m->objects[i].lo);
            gb_u64(&b, m->objects[i].hi);
            gb_u64(&b, m->objects[i].offset);
            gb_str(&b, m->objects[i].path);
        }
        /* A spool's header keeps room to be rewritten in place with more
         * objects (weft_trace_writer_set_loaded): zeros to pad_to bytes. */
        size_t fixed = b.n + 4 + 4; /* this length field and the CRC */
        uint32_t pad = pad_to > fixed ? (uint32_t)(pad_to - fixed) : 0;
        gb_u32(&b, pad);
        uint8_t *z = gb_room(&b, pad);
        if (z)
            memset(z, 0, pad);
    }
    uint8_t *crcp = gb_room(&b, 4);
    if (b.oom || b.n > UINT32_MAX || !crcp) {
        free(b.p);
        return 0;
    }
    put_u32(b.p + 12, (uint32_t)b.n);
    put_u32(b.p + b.n - 4, trc_crc32(0, b.p, b.n - 4));
    *out = b.p;
    return b.n;
}

typedef struct cursor {
    const uint8_t *p, *end;
    bool bad;
} cursor;

static const uint8_t *cur_take(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return NULL;
    }
    const uint8_t *r = c->p;
    c->p += n;
    return r;
}

static uint32_t cur_u32(cursor *c)
{
    const uint8_t *p = cur_take(c, 4);
    return p ? get_u32(p) : 0;
}

static uint64_t cur_u64(cursor *c)
{
    const uint8_t *p = cur_take(c, 8);
    return p ? get_u64(p) : 0;
}

static char *cur_str(cursor *c)
{
    uint32_t n = cur_u32(c);
    const uint8_t *p = cur_take(c, n);
    if (!p)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        c->bad = true;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* The shared objects and the padding after them. */
static int parse_objects(cursor *c, weft_trace_meta *m)
{
    uint32_t n = cur_u32(c);
    if (c->bad || n > WEFT_TRACE_MAX_OBJECTS)
        return -1;
    if (n && !(m->objects = calloc(n, sizeof *m->objects)))
        return -1;
    for (uint32_t i = 0; i < n && !c->bad; i++) {
        weft_trace_object *o = &m->objects[i];
        o->lo = cur_u64(c);
        o->hi = cur_u64(c);
        o->offset = cur_u64(c);
        o->path = cur_str(c);
        m->nobjects = i + 1;
        if (o->hi <= o->lo)
            c->bad = true;
    }
    uint32_t pad = cur_u32(c);
    const uint8_t *z = cur_take(c, pad);
    for (uint32_t i = 0; z && i < pad; i++)
        if (z[i])
            c->bad = true;
    return c->bad ? -1 : 0;
}

int trc_header_parse(const uint8_t *buf, size_t len, weft_trace_meta *m, char *why, size_t whylen)
{
    memset(m, 0, sizeof *m);
    if (len < 20 || trc_crc32(0, buf, len - 4) != get_u32(buf + len - 4)) {
        trc_seterr(why, whylen, "corrupt header (checksum mismatch)");
        return -1;
    }
    cursor c = {buf + 16, buf + len - 4, false};
    weft_trace_settings *s = &m->settings;
    s->mode = cur_u32(&c);
    s->cpi = cur_u32(&c);
    s->ps_per_cycle = cur_u64(&c);
    s->quantum = cur_u64(&c);
    s->filter = cur_u32(&c);
    s->nranges = cur_u32(&c);
    if (s->nranges > WEFT_TRACE_MAX_RANGES) {
        trc_seterr(why, whylen, "corrupt header (%u address ranges, at most %d)", s->nranges,
                   WEFT_TRACE_MAX_RANGES);
        return -1;
    }
    for (uint32_t i = 0; i < s->nranges; i++) {
        s->range_lo[i] = cur_u64(&c);
        s->range_hi[i] = cur_u64(&c);
    }
    const uint8_t *pol = cur_take(&c, sizeof s->policy);
    if (pol) {
        memcpy(s->policy, pol, sizeof s->policy);
        s->policy[sizeof s->policy - 1] = 0;
    }
    s->seed = cur_u64(&c);
    m->binary_path = cur_str(&c);
    m->build_id_len = cur_u32(&c);
    if (m->build_id_len > sizeof m->build_id) {
        trc_seterr(why, whylen, "corrupt header (build-id of %u bytes)", m->build_id_len);
        trc_meta_free(m);
        return -1;
    }
    const uint8_t *bid = cur_take(&c, m->build_id_len);
    if (bid)
        memcpy(m->build_id, bid, m->build_id_len);
    uint32_t argc = cur_u32(&c);
    /* Each argument takes at least its 4-byte length, so this bounds argc by
     * the header size before anything is allocated. */
    if (!c.bad && argc > (size_t)(c.end - c.p) / 4)
        c.bad = true;
    if (!c.bad) {
        m->argv = calloc((size_t)argc + 1, sizeof *m->argv);
        if (!m->argv)
            c.bad = true;
    }
    for (uint32_t i = 0; i < argc && !c.bad; i++) {
        m->argv[i] = cur_str(&c);
        m->argc = i + 1;
    }
    m->version = get_u32(buf + 8);
    s->record = WEFT_RECORD_ALL;
    if (m->version >= 2) {
        s->record = cur_u32(&c);
        m->zstd_level = cur_u32(&c);
        /* Traces before start_code end here, and those before the objects
         * after it. */
        if (c.p != c.end)
            m->start_code = cur_u64(&c);
        if (c.p != c.end && parse_objects(&c, m) < 0) {
            trc_seterr(why, whylen, "corrupt header (shared objects)");
            trc_meta_free(m);
            return -1;
        }
        if (!c.bad && (!(s->record & WEFT_RECORD_ALL) || s->record & ~WEFT_RECORD_FLAGS)) {
            trc_seterr(why, whylen, "corrupt header (recorded events 0x%x)", s->record);
            trc_meta_free(m);
            return -1;
        }
    }
    if (c.bad || c.p != c.end) {
        trc_seterr(why, whylen, "corrupt header (fields do not match its length)");
        trc_meta_free(m);
        return -1;
    }
    return 0;
}

static char *dupstr(const char *s)
{
    return strdup(s ? s : "");
}

int trc_meta_copy(weft_trace_meta *dst, const weft_trace_meta *src)
{
    *dst = *src;
    dst->binary_path = dupstr(src->binary_path);
    dst->argv = calloc((size_t)src->argc + 1, sizeof *dst->argv);
    if (!dst->binary_path || !dst->argv) {
        dst->argc = 0;
        trc_meta_free(dst);
        return -1;
    }
    for (uint32_t i = 0; i < src->argc; i++) {
        if (!(dst->argv[i] = dupstr(src->argv ? src->argv[i] : NULL))) {
            dst->argc = i;
            trc_meta_free(dst);
            return -1;
        }
    }
    dst->objects = NULL;
    dst->nobjects = 0;
    if (trc_meta_set_objects(dst, src->objects, src->nobjects) < 0) {
        trc_meta_free(dst);
        return -1;
    }
    if (dst->build_id_len > sizeof dst->build_id)
        dst->build_id_len = sizeof dst->build_id;
    if (dst->settings.nranges > WEFT_TRACE_MAX_RANGES)
        dst->settings.nranges = WEFT_TRACE_MAX_RANGES;
    dst->settings.policy[sizeof dst->settings.policy - 1] = 0;
    return 0;
}

int trc_meta_set_objects(weft_trace_meta *m, const weft_trace_object *o, uint32_t n)
{
    if (n > WEFT_TRACE_MAX_OBJECTS)
        n = WEFT_TRACE_MAX_OBJECTS;
    weft_trace_object *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = o[i];
        if (!(v[i].path = dupstr(o[i].path))) {
            for (uint32_t j = 0; j < i; j++)
                free(v[j].path);
            free(v);
            return -1;
        }
    }
    for (uint32_t i = 0; i < m->nobjects; i++)
        free(m->objects[i].path);
    free(m->objects);
    m->objects = v;
    m->nobjects = n;
    return 0;
}

void trc_meta_free(weft_trace_meta *m)
{
    for (uint32_t i = 0; i < m->nobjects; i++)
        free(m->objects[i].path);
    free(m->objects);
    m->objects = NULL;
    m->nobjects = 0;
    free(m->binary_path);
    if (m->argv)
        for (uint32_t i = 0; i < m->argc; i++)
            free(m->argv[i]);
    free(m->argv);
    m->binary_path = NULL;
    m->argv = NULL;
    m->argc = 0;
}

/* ---- footer ---- */

size_t trc_footer_encode(const weft_trace_summary *s, uint64_t nevents, uint64_t nblocks,
                         uint8_t **out)
{
    size_t table = (size_t)s->nthreads * FOOTER_THREAD;
    size_t kinds = s->has_kinds ? trc_footer_kinds_len(s->nthreads) : 0;
    size_t len = FOOTER_FIXED + table + kinds;
    uint8_t *b = calloc(1, len);
    if (!b)
        return 0;
    memcpy(b, FOOTER_MAGIC, 8);
    put_u32(b + 8, s->flags);
    put_u32(b + 12, (uint32_t)s->exit_status);
    put_u64(b + 16, s->stall_escapes);
    put_u64(b + 24, s->makespan);
    put_u64(b + 32, nevents);
    put_u64(b + 40, nblocks);
    put_u32(b + 48, s->nthreads);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const weft_trace_thread *t = &s->threads[i];
        uint8_t *p = b + 52 + (size_t)i * FOOTER_THREAD;
        put_u32(p, t->id);
        put_u32(p + 4, t->parent);
        put_u64(p + 8, t->tid);
        put_u64(p + 16, t->start_time);
        put_u64(p + 24, t->end_time);
        put_u64(p + 32, t->events);
        put_u64(p + 40, t->insns);
        put_u32(p + 48, t->exited);
        put_u32(p + 52, (uint32_t)t->exit_code);
    }
    if (kinds) {
        uint8_t *p = b + 52 + table;
        put_u32(p, WEFT_EV_KIND_COUNT);
        p += 4;
        for (uint32_t i = 0; i < s->nthreads; i++)
            for (int k = 0; k < WEFT_EV_KIND_COUNT; k++, p += 8)
                put_u64(p, s->threads[i].kinds[k]);
    }
    put_u32(b + len - 4, trc_crc32(0, b, len - 4));
    *out = b;
    return len;
}

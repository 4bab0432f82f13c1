/* libFuzzer harness for everything that reads a trace file: weft_trace_open,
 * iteration over all events, weft_trace_print_info, weft_trace_set_outcome,
 * and the optimizer's model, exact pairs and fitness built from the trace.
 *
 * Each input is tried as is and, when that changes it, again with its CRCs
 * (header, every block or frame, footer) recomputed, so mutations reach the
 * decoder instead of stopping at a checksum; a version 2 to 5 input is tried a
 * third time with its frames' or segments' payloads compressed
 * (fuzz_frames.h), so that mutations of the raw streams and chunks reach
 * their decoders. Checks beyond "no crash": errors are
 * one line naming the file, a trace that opens and iterates to its end
 * delivers exactly the footer's event count in canonical order with
 * per-thread seq 0, 1, 2..., set_outcome keeps the trace readable, and the
 * exact solver's fast candidate list equals the brute-force one. */
#include "fuzz_common.h"
#include "fuzz_frames.h"

#include "weft/optimizer.h"
#include "weft/trace.h"

static FILE *devnull;

/* A version 4 or 5 segment's payload in raw form is its chunks: their CRCs
 * (28-byte header, payload length at 12, CRC at 24) fixed too, so that
 * mutations reach the chunk decoder. */
static void fix_chunks(uint8_t *p, size_t n)
{
    size_t q = 0;
    while (q + 28 <= n && (fz_u32(p + q) == 0x354b4357u || fz_u32(p + q) == 0x324b4357u)) {
        uint32_t len = fz_u32(p + q + 12);
        if (len > n - q - 28)
            break;
        uint32_t c = (uint32_t)crc32(0, p + q, 24);
        fz_put_u32(p + q + 24, (uint32_t)crc32(c, p + q + 28, len));
        q += 28 + (size_t)len;
    }
}

/* Recompute every CRC the reader checks; the file is walked as the reader
 * does and left alone where it does not fit. Version 1 blocks: 24-byte
 * header, length at 8, CRC at 20; version 2 and 3 frames: 28, 12 and 24;
 * version 4 and 5 segments: 36, 20 and 32. */
static void fix_checksums(uint8_t *d, size_t n)
{
    size_t hl = fz_fix_header(d, n);
    if (!hl || n < hl + 16 + 56)
        return;
    uint64_t foff = fz_u64(d + n - 16);
    if (foff < hl || foff > n - 16 - 56)
        return;
    int v2 = fz_u32(d + 8) >= 2, v4 = fz_u32(d + 8) >= 4;
    size_t hsize = v4   ? FZ_SEG_HDR
                   : v2 ? FZ_FRAME_HDR
                        : 24,
           lenat = v4   ? 20
                   : v2 ? 12
                        : 8,
           crcat = v4   ? 32
                   : v2 ? 24
                        : 20;
    uint64_t off = hl;
    while (off + hsize <= foff) {
        uint32_t len = fz_u32(d + off + lenat);
        if (off + hsize + (uint64_t)len > foff)
            break;
        if (v4)
            fix_chunks(d + off + hsize, len);
        uint32_t c = (uint32_t)crc32(0, d + off, (uInt)crcat);
        c = (uint32_t)crc32(c, d + off + hsize, len);
        fz_put_u32(d + off + crcat, c);
        off += hsize + (uint64_t)len;
    }
    size_t flen = (size_t)(n - 16 - foff);
    fz_put_u32(d + foff + flen - 4, fz_crc(d + foff, flen - 4));
}

static void check_model(weft_trace *t)
{
    char err[512] = "";
    optimizer_options opt = optimizer_options_default();
    opt.include_reads = 1;
    optimizer_model *m = optimizer_model_from_trace(t, &opt, err, sizeof err);
    if (!m) {
        FUZZ_ONE_LINE(err);
        return;
    }
    size_t dim = optimizer_model_dim(m);
    uint64_t *delta = calloc(dim ? dim : 1, sizeof *delta);
    FUZZ_CHECK(delta, "out of memory");
    double f = optimizer_fitness(m, delta);
    FUZZ_CHECK(f >= 0, "negative fitness %g", f);
    if (dim) {
        double g = optimizer_fitness_move(m, dim / 2, 1000);
        delta[dim / 2] = 1000;
        double h = optimizer_fitness(m, delta);
        FUZZ_CHECK(g == h, "fitness_move %.17g != fitness %.17g", g, h);
    }
    optimizer_candidate *fast = NULL, *slow = NULL;
    size_t nf = 0, ns = 0;
    if (optimizer_exact_pairs(m, &fast, &nf, err, sizeof err) == 0) {
        if (dim <= 500 && optimizer_exact_pairs_bruteforce(m, &slow, &ns, err, sizeof err) == 0) {
            FUZZ_CHECK(nf == ns, "exact pairs: %zu fast, %zu brute force", nf, ns);
            for (size_t i = 0; i < nf; i++)
                FUZZ_CHECK(fast[i].va == slow[i].va && fast[i].vb == slow[i].vb &&
                               fast[i].delay == slow[i].delay,
                           "exact pairs differ at %zu", i);
        }
        uint64_t *sel = calloc(dim ? dim : 1, sizeof *sel);
        optimizer_pair *chosen = NULL;
        size_t nchosen = 0;
        FUZZ_CHECK(sel, "out of memory");
        if (optimizer_exact_select(m, fast, nf, 0, sel, &chosen, &nchosen, err, sizeof err) != 0)
            FUZZ_ONE_LINE(err);
        free(chosen);
        free(sel);
    } else {
        FUZZ_ONE_LINE(err);
    }
    free(fast);
    free(slow);
    free(delta);
    optimizer_model_free(m);
}

static void run_one(const uint8_t *data, size_t size)
{
    const char *path = fz_memfile(data, size);
    char err[512] = "";
    weft_trace *t = weft_trace_open(path, err, sizeof err);
    if (!t) {
        FUZZ_ONE_LINE(err);
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0, "error does not name the file: %s", err);
        return;
    }
    const weft_trace_summary *s = weft_trace_get_summary(t);
    uint32_t nthreads = s->nthreads;
    uint64_t *seq = calloc(nthreads ? nthreads : 1, sizeof *seq);
    FUZZ_CHECK(seq, "out of memory");
    weft_event ev, prev = {0};
    uint64_t n = 0;
    int rc;
    while ((rc = weft_trace_next(t, &ev)) == 1) {
        FUZZ_CHECK(ev.thread < nthreads, "thread %u >= %u", ev.thread, nthreads);
        FUZZ_CHECK(ev.kind < WEFT_EV_KIND_COUNT, "kind %u", ev.kind);
        FUZZ_CHECK(ev.size <= 64, "size %u", ev.size);
        FUZZ_CHECK(ev.seq == seq[ev.thread]++, "seq %llu", (unsigned long long)ev.seq);
        FUZZ_CHECK(!n || ev.time > prev.time || (ev.time == prev.time && ev.thread >= prev.thread),
                   "events out of canonical order");
        prev = ev;
        n++;
    }
    if (rc == 0) {
        FUZZ_CHECK(n == weft_trace_event_count(t), "read %llu events, footer says %llu",
                   (unsigned long long)n, (unsigned long long)weft_trace_event_count(t));
        for (uint32_t i = 0; i < nthreads; i++)
            FUZZ_CHECK(seq[i] == s->threads[i].events, "thread %u: %llu events, table says %llu", i,
                       (unsigned long long)seq[i], (unsigned long long)s->threads[i].events);
    } else {
        FUZZ_ONE_LINE(weft_trace_error(t));
    }
    free(seq);
    weft_trace_rewind(t);
    if (weft_trace_print_info(t, NULL, 1, devnull) != 0)
        FUZZ_ONE_LINE(weft_trace_error(t));
    check_model(t);
    weft_trace_close(t);

    /* Recording an outcome rewrites the footer in place; the trace must stay
     * readable and carry it. */
    if (weft_trace_set_outcome(path, WEFT_TRACE_TIMED_OUT, -9, err, sizeof err) != 0) {
        FUZZ_ONE_LINE(err);
        return;
    }
    t = weft_trace_open(path, err, sizeof err);
    FUZZ_CHECK(t, "unreadable after set_outcome: %s", err);
    FUZZ_CHECK((weft_trace_get_summary(t)->flags & WEFT_TRACE_TIMED_OUT) &&
                   weft_trace_get_summary(t)->exit_status == -9,
               "outcome not recorded");
    weft_trace_close(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    run_one(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    FUZZ_CHECK(fixed, "out of memory");
    memcpy(fixed, data, size);
    fix_checksums(fixed, size);
    if (memcmp(fixed, data, size) != 0)
        run_one(fixed, size);
    /* Versions 2 to 4: the payloads compressed, as if they were the raw
     * streams or chunks (see fuzz_frames.h), so their decoders get them. */
    size_t plen;
    uint8_t *packed = fz_frames_map(fixed, size, 1, &plen);
    if (packed) {
        fix_checksums(packed, plen);
        run_one(packed, plen);
        free(packed);
    }
    free(fixed);
    return 0;
}

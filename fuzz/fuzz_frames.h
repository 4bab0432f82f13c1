/* Version 2 to 5 traces with their frames' (versions 4, 5: segments') payloads
 * stored uncompressed (the "raw form"), so that libFuzzer's byte mutations
 * reach the stream and chunk decoders (tracer/trace_frame.c,
 * tracer/trace_codec.c): mutated zstd bytes almost never decompress, so
 * without this only the frame headers and the zstd library would be
 * fuzzed. fuzz_make_seeds writes seeds in raw form (fz_frames_unpack);
 * fuzz_trace compresses every input's frames (fz_frames_pack) and reads
 * the result too. Layout: docs/trace-format.md, "Frames (version 2)". */
#ifndef WEFT_FUZZ_FRAMES_H
#define WEFT_FUZZ_FRAMES_H

#include <zstd.h>

#include "fuzz_common.h"

#define FZ_FRAME_HDR 28
#define FZ_SEG_HDR 36

/* Rewrite every frame of the version 2 or 3 trace d[0..n) (their frames are
 * the same; version 3's footer only counts more) that fits between the
 * header and the footer with `raw` (1: compress the payload as it is, which
 * becomes raw_len; 0: decompress it to the header's raw_len, which becomes
 * comp_len too), fixing each frame's lengths and CRC and the trailer's
 * footer offset. Bytes that do not form a frame are copied as they are.
 * Returns the new trace (malloc'd, *outn bytes), or NULL if d is not a
 * version 2 or 3 trace with a plausible header and trailer, or a payload does
 * not decompress. */
static inline uint8_t *fz_frames_map(const uint8_t *d, size_t n, int raw, size_t *outn)
{
    if (n < 16 + 16 || memcmp(d, "WEFTTRC", 8) != 0 || fz_u32(d + 8) < 2 || fz_u32(d + 8) > 5)
        return NULL;
    /* A frame header: magic, count, raw_len, comp_len, base_time, crc; a
     * segment's: magic, thread, chunks, events, raw_len, comp_len,
     * first_time, crc. The crc covers the header before it and the payload. */
    int seg = fz_u32(d + 8) >= 4;
    size_t hsz = seg ? FZ_SEG_HDR : FZ_FRAME_HDR, at_raw = seg ? 16 : 8, at_len = seg ? 20 : 12,
           at_crc = seg ? 32 : 24;
    uint64_t hl = fz_u32(d + 12), foff = fz_u64(d + n - 16);
    if (hl < 20 || hl > foff || foff > n - 16)
        return NULL;
    /* Worst case: every frame grows to its compress bound (or raw_len). */
    size_t cap = n + 4096, len = 0;
    uint8_t *out = malloc(cap);
    FUZZ_CHECK(out, "out of memory");
    memcpy(out, d, hl);
    len = hl;
    uint64_t off = hl;
    while (off + hsz <= foff) {
        uint32_t plen = fz_u32(d + off + at_len);
        if (off + hsz + (uint64_t)plen > foff)
            break;
        const uint8_t *p = d + off + hsz;
        size_t need = raw ? ZSTD_compressBound(plen) : fz_u32(d + off + at_raw);
        if (need > ((size_t)1 << 26)) {
            free(out);
            return NULL;
        }
        if (len + hsz + need + (n - off) > cap) {
            cap = len + hsz + need + (n - off);
            uint8_t *m = realloc(out, cap);
            FUZZ_CHECK(m, "out of memory");
            out = m;
        }
        uint8_t *h = out + len;
        memcpy(h, d + off, hsz);
        size_t got = raw ? ZSTD_compress(h + hsz, need, p, plen, 1)
                         : ZSTD_decompress(h + hsz, need, p, plen);
        if (ZSTD_isError(got) || (!raw && got != need)) {
            free(out);
            return NULL;
        }
        fz_put_u32(h + at_raw, raw ? plen : (uint32_t)got);
        fz_put_u32(h + at_len, (uint32_t)got);
        uint32_t c = (uint32_t)crc32(0, h, (uInt)at_crc);
        fz_put_u32(h + at_crc, (uint32_t)crc32(c, h + hsz, (uInt)got));
        len += hsz + got;
        off += hsz + (uint64_t)plen;
    }
    uint64_t new_foff = len + (foff - off);
    memcpy(out + len, d + off, n - off);
    len += n - off;
    for (int i = 0; i < 8; i++)
        out[len - 16 + i] = (uint8_t)(new_foff >> (8 * i));
    *outn = len;
    return out;
}

#endif

/* A growing string (strbuf.c), the report's only output buffer. */
#ifndef WEFT_REPORT_STRBUF_H
#define WEFT_REPORT_STRBUF_H

#include <stddef.h>

typedef struct rbuf {
    char *s;
    size_t len, cap;
    int oom;
} rbuf;

void rb_add(rbuf *b, const char *s, size_t n);
void rb_puts(rbuf *b, const char *s);
void rb_printf(rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' escaped for HTML text and attributes. */
void rb_esc(rbuf *b, const char *s);
void rb_free(rbuf *b);

#endif

/* A growing string for building the page: appends never fail loudly; the
 * first allocation failure sets `oom` and later appends do nothing, so the
 * page is built without a check per call and refused once at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void rb_add(rbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void rb_puts(rbuf *b, const char *s)
{
    rb_add(b, s, strlen(s));
}

void rb_printf(rbuf *b, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        rb_add(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rb_add(b, big, (size_t)n);
    free(big);
}

void rb_esc(rbuf *b, const char *s)
{
    for (const char *p = s ? s : ""; *p; p++) {
        switch (*p) {
        case '&':
            rb_puts(b, "&amp;");
            break;
        case '<':
            rb_puts(b, "&lt;");
            break;
        case '>':
            rb_puts(b, "&gt;");
            break;
        case '"':
            rb_puts(b, "&quot;");
            break;
        case '\'':
            rb_puts(b, "&#39;");
            break;
        default:
            rb_add(b, p, 1);
        }
    }
}

void rb_free(rbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

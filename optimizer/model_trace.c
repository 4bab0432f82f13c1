/* Building the model from a trace file. Kept apart from model.c so the model
 * and its tests build without the trace reader library. */
#include "model_internal.h"

#include <stdlib.h>

optimizer_model *optimizer_model_from_trace(weft_trace *t, const optimizer_options *opt, char *err,
                                            size_t errlen)
{
    size_t cap = 4096, n = 0;
    weft_event *ev = malloc(cap * sizeof *ev);
    if (!ev) {
        optimizer_fail(err, errlen, "optimizer: out of memory");
        return NULL;
    }
    weft_trace_rewind(t);
    weft_event e;
    int rc;
    while ((rc = weft_trace_next(t, &e)) == 1) {
        /* Only accesses matter, plus thread starts so that threads without
         * accesses still count; the rest would only cost memory. */
        if (e.kind != WEFT_EV_READ && e.kind != WEFT_EV_WRITE && e.kind != WEFT_EV_RMW &&
            e.kind != WEFT_EV_THREAD_START)
            continue;
        if (n == cap) {
            weft_event *p = realloc(ev, 2 * cap * sizeof *ev);
            if (!p) {
                free(ev);
                optimizer_fail(err, errlen, "optimizer: out of memory");
                return NULL;
            }
            ev = p, cap *= 2;
        }
        ev[n++] = e;
    }
    if (rc < 0) {
        optimizer_fail(err, errlen, "%s", weft_trace_error(t));
        free(ev);
        return NULL;
    }
    optimizer_model *m = optimizer_model_from_events(ev, n, opt, err, errlen);
    free(ev);
    return m;
}

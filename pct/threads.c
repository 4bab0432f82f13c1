/* What every strategy of the policy uses: finding a thread in the table,
 * and listing a decision's threads. */
#include "policy_internal.h"

/* Ids of exited threads may be reused: the newest live one counts. */
struct thread *pct_find(const pct_policy *p, pct_tid tid)
{
    for (size_t i = p->nthreads; i-- > 0;) {
        if (p->threads[i].tid == tid && p->threads[i].state != PCT_THREAD_EXITED)
            return &p->threads[i];
    }
    return NULL;
}

size_t pct_emit(pct_tid *out, size_t cap, size_t n, pct_tid tid)
{
    if (n < cap)
        out[n] = tid;
    return n + 1;
}

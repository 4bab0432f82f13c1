/* Stable LSD radix sort on 64-bit keys. The exact solver sorts a few hundred
 * thousand candidates and the model a few hundred thousand events; qsort's
 * indirect comparisons made that the bulk of the solver's time. */
#include "model_internal.h"

#include <string.h>

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

radix_rec *optimizer_radix_sort(radix_rec *a, radix_rec *tmp, size_t n)
{
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max |= a[i].key;
    size_t count[RADIX_SIZE];
    /* Passes stop at the highest set bit: small keys (thread ids, address
     * ids) cost one or two passes, not six. */
    for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(a[i].key >> shift) & (RADIX_SIZE - 1)]++;
        size_t sum = 0;
        for (size_t d = 0; d < RADIX_SIZE; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i].key >> shift) & (RADIX_SIZE - 1)]++] = a[i];
        radix_rec *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

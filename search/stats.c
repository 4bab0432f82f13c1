/* Statistics over repeated search or replay runs: hit-rate intervals and
 * quartiles for box plots (Bhattacharya et al. Fig. 5–8 report evaluations to first
 * alignment over 100 runs). */
#include "weft/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* Bisection on the regularized incomplete beta: slower than the inverse but
 * cannot fail, for the (a, b) where gsl_cdf_beta_Pinv gives NaN. */
static double beta_quantile_bisect(double p, double a, double b)
{
    double lo = 0, hi = 1;
    for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
        double mid = 0.5 * (lo + hi);
        if (gsl_cdf_beta_P(mid, a, b) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

static double beta_quantile(double p, double a, double b)
{
    double q = gsl_cdf_beta_Pinv(p, a, b);
    if (!isfinite(q) || q < 0 || q > 1)
        q = beta_quantile_bisect(p, a, b);
    return q;
}

int search_clopper_pearson(uint64_t k, uint64_t n, double confidence, double *lo, double *hi)
{
    if (n == 0 || k > n || !(confidence > 0 && confidence < 1))
        return -1;
    /* GSL's default handler aborts; a NaN is handled by the fallback above. */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    double alpha = 1 - confidence;
    double dn = (double)n, dk = (double)k;
    /* The ends have closed forms, and gsl_cdf_beta_Pinv loops forever on a
     * zero shape parameter. */
    if (k == 0)
        *lo = 0;
    else if (k == n)
        *lo = pow(alpha / 2, 1 / dn);
    else
        *lo = beta_quantile(alpha / 2, dk, dn - dk + 1);
    if (k == n)
        *hi = 1;
    else if (k == 0)
        *hi = 1 - pow(alpha / 2, 1 / dn);
    else
        *hi = beta_quantile(1 - alpha / 2, dk + 1, dn - dk);
    gsl_set_error_handler(old);
    return 0;
}

int search_quartiles(const double *x, size_t n, double *q1, double *median, double *q3)
{
    if (n == 0)
        return -1;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, x, n * sizeof *s);
    gsl_sort(s, 1, n);
    *q1 = gsl_stats_quantile_from_sorted_data(s, 1, n, 0.25);
    *median = gsl_stats_median_from_sorted_data(s, 1, n);
    *q3 = gsl_stats_quantile_from_sorted_data(s, 1, n, 0.75);
    free(s);
    return 0;
}

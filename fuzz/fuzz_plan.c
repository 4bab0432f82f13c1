/* libFuzzer harness for the injection-plan parser (optimizer_plan_parse),
 * without and with trace limits, and the build-id check. A plan the parser
 * accepts must survive a round trip: optimizer_plan_write, then
 * optimizer_plan_read gives the same plan field by field. Errors must be one
 * line starting with the plan's name. */
#include "fuzz_common.h"

#include "weft/optimizer.h"

static char plan_path[300];

static void cleanup(void)
{
    unlink(plan_path);
    rmdir(fz_scratch());
}

static int str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_equal(const optimizer_plan *a, const optimizer_plan *b)
{
    FUZZ_CHECK(str_eq(a->program, b->program) && str_eq(a->build_id, b->build_id) &&
                   str_eq(a->mode, b->mode) && str_eq(a->algorithm, b->algorithm),
               "round trip changed a string");
    FUZZ_CHECK(a->argc == b->argc && a->cpi == b->cpi && a->ps_per_cycle == b->ps_per_cycle &&
                   a->seed == b->seed && a->dmax == b->dmax && a->evaluations == b->evaluations &&
                   a->ninjections == b->ninjections,
               "round trip changed a number");
    for (uint32_t i = 0; i < a->argc; i++)
        FUZZ_CHECK(str_eq(a->argv[i], b->argv[i]), "round trip changed argv[%u]", i);
    for (size_t i = 0; i < a->ninjections; i++) {
        const optimizer_injection *x = &a->injections[i], *y = &b->injections[i];
        FUZZ_CHECK(x->thread == y->thread && x->seq == y->seq && x->pc == y->pc &&
                       x->line == y->line && x->offset == y->offset && x->delay_ns == y->delay_ns &&
                       x->delay_insns == y->delay_insns && x->has_predicted == y->has_predicted,
                   "round trip changed injections[%zu]", i);
        FUZZ_CHECK(str_eq(x->function, y->function) && str_eq(x->file, y->file) &&
                       str_eq(x->variable, y->variable),
                   "round trip changed a string of injections[%zu]", i);
        if (x->has_predicted)
            FUZZ_CHECK(x->predicted.thread_a == y->predicted.thread_a &&
                           x->predicted.thread_b == y->predicted.thread_b &&
                           x->predicted.seq_a == y->predicted.seq_a &&
                           x->predicted.seq_b == y->predicted.seq_b &&
                           x->predicted.address == y->predicted.address &&
                           x->predicted.time == y->predicted.time,
                       "round trip changed injections[%zu].predicted", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!plan_path[0]) {
        snprintf(plan_path, sizeof plan_path, "%s/plan.json", fz_scratch());
        atexit(cleanup);
    }
    char *text = malloc(size + 1);
    FUZZ_CHECK(text, "out of memory");
    memcpy(text, data, size);
    text[size] = 0;

    char err[512] = "";
    optimizer_plan p, q;
    if (optimizer_plan_parse(text, "fuzz.json", NULL, &p, err, sizeof err) != 0) {
        FUZZ_ONE_LINE(err);
        FUZZ_CHECK(!strncmp(err, "fuzz.json: ", 11), "error does not name the plan: %s", err);
        FUZZ_CHECK(p.ninjections == 0 && !p.program && !p.injections, "failed parse left data");
    } else {
        static const uint8_t id[20] = {0xde, 0xad, 0x0b, 0x1e};
        if (optimizer_plan_check_build_id(&p, "prog", id, sizeof id, err, sizeof err) != 0)
            FUZZ_ONE_LINE(err);
        if (optimizer_plan_write(&p, plan_path, err, sizeof err) == 0) {
            FUZZ_CHECK(optimizer_plan_read(plan_path, NULL, &q, err, sizeof err) == 0,
                       "plan written by optimizer_plan_write does not read back: %s", err);
            check_equal(&p, &q);
            optimizer_plan_free(&q);
        } else {
            FUZZ_ONE_LINE(err);
        }
        optimizer_plan_free(&p);
    }

    /* With the limits of a 3-thread trace. */
    static const uint64_t events[3] = {5, 0, 100};
    optimizer_plan_limits lim = {.nthreads = 3, .events = events};
    if (optimizer_plan_parse(text, "fuzz.json", &lim, &p, err, sizeof err) == 0) {
        for (size_t i = 0; i < p.ninjections; i++)
            FUZZ_CHECK(p.injections[i].thread < 3 &&
                           p.injections[i].seq < events[p.injections[i].thread],
                       "limits not enforced");
        optimizer_plan_free(&p);
    } else {
        FUZZ_ONE_LINE(err);
    }
    free(text);
    return 0;
}

#!/usr/bin/env bash
# Bhattacharya et al.'s two research questions (does the fitness guide the
# search; which search aligns soonest) re-done on weft's traces: fitness
# evaluations to the first alignment of RND, SHC and SA (R runs each, seeds 1..R, budget 10^6, the
# paper's settings, search/include/weft/search.h) on the fixtures analogous to
# the paper's programs plus lost_update, for D_max in {10^3, 10^4, 10^6, 10^7},
# with the exact solver's candidate count as a reference.
#
# Every cell is one `weft optimize --runs R --stats-json` process (the runs
# are done in C); two cells run at a time (2 cores). Outputs:
#   results/optimizer-rq.md           success table (Clopper-Pearson 95%) and
#                                     medians with 95% order-statistic CIs
#   results/optimizer-rq-dmax*.png    box plots, one per D_max (as Bhattacharya et al. plot them)
#   results/optimizer-rq/*.json       every run's evaluations and time
# Usage: results/optimizer-rq.sh [RUNS]   (default 100)
# The paper_* fixtures are traced with slot argument 0: their worker sections
# are then only the ~1.1 us clone spacing apart, so that alignments are within
# reach at every D_max (at the default slot of 2048 iterations, ~21 us, no
# delay <= 10^4 reaches them, and RQ2's small spaces would have no solution).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
if [ -n "${WEFT_NO_BUILD:-}" ]; then :; elif [ -f "$build/CMakeCache.txt" ]; then cmake --build "$build" --target weft >/dev/null; else "$here/scripts/build" >/dev/null; fi
weft="$build/cli/weft"
runs="${1:-100}"
out="$here/results/optimizer-rq"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

programs=(paper_mm:0 paper_csd:0 paper_avn:0 paper_ac:0 paper_cfft:0 paper_cfft6:0 lost_update)
dmaxes=(1000 10000 1000000 10000000)
algos=(rnd shc sa)

for spec in "${programs[@]}"; do
  fx="${spec%%:*}"
  arg=()
  [ "$spec" != "$fx" ] && arg=("${spec#*:}")
  timeout -s KILL 120 "$weft" trace -q --mode exact -o "$out/$fx.wtr" -- "$build/fixtures/$fx" "${arg[@]}" >/dev/null 2>"$out/$fx.trace-stderr.txt"
  "$weft" info "$out/$fx.wtr" | sed -n 's/^flags *//p' >"$out/$fx.flags"
  "$weft" optimize "$out/$fx.wtr" --algo exact >"$out/$fx.exact.txt" || true
done

# One line per cell; the slowest (RND, large D_max) first so the two workers
# stay busy to the end.
for d in 10000000 1000000 10000 1000; do
  for a in rnd sa shc; do
    for spec in "${programs[@]}"; do
      echo "${spec%%:*} $a $d"
    done
  done
done >"$tmp/cells"
start=$(date +%s)
xargs -P 2 -L 1 bash -c '
  fx="$1" a="$2" d="$3"
  timeout -s KILL 3600 "$0" optimize "'"$out"'/$fx.wtr" --algo "$a" --dmax "$d" --runs "'"$runs"'" --seed 1 \
    --stats-json "'"$out"'/$fx-$a-$d.json" -q >/dev/null 2>&1 || echo "optimizer-rq: cell $fx $a $d failed" >&2
  echo "optimizer-rq: $fx $a D_max=$d done" >&2
' "$weft" <"$tmp/cells"
elapsed=$(($(date +%s) - start))

python3 - "$out" "$runs" "$elapsed" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, math, os, sys
out, runs, elapsed, ncpu, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
progs = ["paper_mm", "paper_csd", "paper_avn", "paper_ac", "paper_cfft", "paper_cfft6", "lost_update"]
algos = ["rnd", "shc", "sa"]
dmaxes = [1000, 10000, 1000000, 10000000]
def dname(d): return "10^%d" % round(math.log10(d))

def median_ci(sorted_x, n, conf=0.95):
    """Distribution-free CI for the median from order statistics: the
    narrowest symmetric (j, n+1-j) with P(j <= B <= n-j) >= conf, B ~ Bin(n, 1/2).
    sorted_x has n values, failures as +inf. Returns (lo, hi, coverage)."""
    pmf = [math.comb(n, k) / 2.0**n for k in range(n + 1)]
    best = None
    for j in range(1, n // 2 + 1):
        cov = sum(pmf[j:n - j + 1])
        if cov >= conf:
            best = (j, cov)
    if best is None:
        return (float("nan"), float("nan"), 0.0)
    j, cov = best
    return (sorted_x[j - 1], sorted_x[n - j], cov)

def fmt(v, budget):
    if v == float("inf"): return "> %s" % f"{budget:,}".replace(",", " ")
    return f"{v:,.0f}".replace(",", " ")

cells = {}
for p in progs:
    for a in algos:
        for d in dmaxes:
            f = os.path.join(out, f"{p}-{a}-{d}.json")
            if os.path.exists(f):
                cells[p, a, d] = json.load(open(f))

exact = {}
for p in progs:
    s = next((cells[p, a, d] for a in algos for d in dmaxes if (p, a, d) in cells), None)
    if s: exact[p] = (s["exact_candidates"], s["exact_seconds"], s["dim"])

L = []
L.append(f"# RND, SHC and SA on weft traces: evaluations to the first alignment (Bhattacharya et al.'s comparison re-done)\n")
L.append(f"Measured by `results/optimizer-rq.sh {runs}`: {runs} runs per cell (seeds 1..{runs}), "
         f"budget 10^6 fitness evaluations, the paper's SHC/SA settings; {elapsed} s wall for all "
         f"cells on {ncpu} cores, two cells at a time (load average at the end: {load}). "
         "Model: plain writes at addresses another thread writes (atomics left out, as `weft optimize` "
         "does). paper_* fixtures traced with slot 0 (see the script).\n")
L.append("Success = the run found an alignment within the budget; interval: Clopper-Pearson 95%. "
         "Median: over all runs, a failed run counting as more than the budget; interval: "
         "distribution-free 95% CI from order statistics (its exact coverage is given once per n). "
         "Exact: the exact solver's candidate pairs (each is an alignment one delay makes, found "
         "without fitness evaluations) and its time; per D_max, the pairs whose single delay is "
         "<= D_max. A search can do more: an event's time sums the delays of all earlier variables of a "
         "thread, each <= D_max, so it may align pairs no single delay <= D_max reaches.\n")
L.append("| program | vars | exact candidates (ms) | trace flags | tracer said |")
L.append("|---|---|---|---|---|")
def read(name):
    try: return open(os.path.join(out, name)).read().strip().replace("\n", " ")
    except OSError: return ""
for p in progs:
    if p in exact:
        c, s, dim = exact[p]
        L.append(f"| {p} | {dim} | {c} ({s*1e3:.3f}) | {read(p + '.flags')} | {read(p + '.trace-stderr.txt')} |")
L.append("")
cov_note = None
for d in dmaxes:
    L.append(f"## D_max = {dname(d)} ns\n")
    L.append("| program | algo | runs | successes | 95% CI | median evals | 95% CI of median | Q1..Q3 (successful runs) | wall s |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for p in progs:
        for a in algos:
            s = cells.get((p, a, d))
            if not s:
                L.append(f"| {p} | {a} | - | not run | | | | | |")
                continue
            n, k = s["runs"], s["hits"]
            ev = sorted([e if e > 0 else float("inf") for e in s["evals_to_hit"]])
            med = ev[(n - 1) // 2] if n % 2 else (ev[n // 2 - 1] + ev[n // 2]) / 2
            lo, hi, cov = median_ci(ev, n)
            cov_note = (n, cov)
            q = s["quartiles"]
            qs = f"{q[0]:.0f}..{q[2]:.0f}" if q else "-"
            mci = "n/a (n too small)" if math.isnan(lo) else f"{fmt(lo, s['budget'])}..{fmt(hi, s['budget'])}"
            L.append(f"| {p} | {a} | {n} | {k} | {100*s['ci95'][0]:.1f}%..{100*s['ci95'][1]:.1f}% | "
                     f"{fmt(med, s['budget'])} | {mci} | {qs} | "
                     f"{s['wall_seconds']:.2f} |")
        s = next((cells[p, a, d] for a in algos if (p, a, d) in cells), None)
        if s:
            w = s.get("exact_candidates_within_dmax")
            L.append(f"| {p} | exact | 1 | {'1' if w else '0'} | deterministic | "
                     f"0 (no fitness evaluation) | - | {w} candidate pairs with one delay <= D_max | "
                     f"{s['exact_seconds']:.6f} |")
    L.append("")
if cov_note:
    L.append(f"Order-statistic median CI with n = {cov_note[0]}: exact coverage {100*cov_note[1]:.1f}%.\n")
open(os.path.join(out, "..", "optimizer-rq.md"), "w").write("\n".join(L))

# Box plot data: one file per D_max; x = program index * 4 + algo index.
for d in dmaxes:
    with open(os.path.join(out, f"box-{d}.dat"), "w") as f, \
         open(os.path.join(out, f"labels-{d}.dat"), "w") as lab:
        f.write("# x q1 min max q3 median program algo successes runs\n")
        for i, p in enumerate(progs):
            for j, a in enumerate(algos):
                s = cells.get((p, a, d))
                if not s: continue
                ev = sorted(e for e in s["evals_to_hit"] if e > 0)
                lab.write(f"{i*4+j+1} {s['hits']}/{s['runs']}\n")
                if not ev:
                    f.write(f"# {p} {a}: no success\n"); continue
                q = s["quartiles"]
                f.write(f"{i*4+j+1} {q[0]} {ev[0]} {ev[-1]} {q[2]} {q[1]} {p} {a} {s['hits']} {s['runs']}\n")
    with open(os.path.join(out, f"exact-{d}.dat"), "w") as f:
        for i, p in enumerate(progs):
            s = next((cells[p, a, d] for a in algos if (p, a, d) in cells), None)
            w = s.get("exact_candidates_within_dmax") if s else None
            if w:
                f.write(f"{i*4+0.5} {w}\n{i*4+3.5} {w}\n\n")
with open(os.path.join(out, "xtics.gp"), "w") as f:
    f.write("set xtics (" + ", ".join(f'"{p.replace("paper_", "")}" {i*4+2}' for i, p in enumerate(progs)) + ")\n")
PY

for d in "${dmaxes[@]}"; do
  e=$(python3 -c "import math;print(round(math.log10($d)))")
  gnuplot <<GP
set terminal pngcairo size 1100,520 font ",10" noenhanced
set output "$here/results/optimizer-rq-dmax1e$e.png"
set title "Fitness evaluations to the first alignment, D_max = 10^$e ns (boxes: quartiles and min..max of the successful runs; below: successes/runs)"
set logscale y
set ylabel "fitness evaluations"
set yrange [0.5:3e7]
set xrange [0:$(( ${#programs[@]} * 4 ))]
load "$out/xtics.gp"
set grid ytics
set boxwidth 0.8
set style fill solid 0.35 border -1
set key top center horizontal
plot "$out/box-$d.dat" using (strcol(8) eq "rnd" ? \$1 : 1/0):2:3:4:5 with candlesticks lc rgb "#c0392b" title "RND" whiskerbars, \
     ""              using (strcol(8) eq "rnd" ? \$1 : 1/0):6:6:6:6 with candlesticks lc rgb "black" notitle, \
     ""              using (strcol(8) eq "shc" ? \$1 : 1/0):2:3:4:5 with candlesticks lc rgb "#2980b9" title "SHC" whiskerbars, \
     ""              using (strcol(8) eq "shc" ? \$1 : 1/0):6:6:6:6 with candlesticks lc rgb "black" notitle, \
     ""              using (strcol(8) eq "sa" ? \$1 : 1/0):2:3:4:5 with candlesticks lc rgb "#27ae60" title "SA" whiskerbars, \
     ""              using (strcol(8) eq "sa" ? \$1 : 1/0):6:6:6:6 with candlesticks lc rgb "black" notitle, \
     "$out/exact-$d.dat" using 1:2 with lines lw 2 dt 2 lc rgb "#8e44ad" title "exact solver: candidate pairs with one delay <= D_max", \
     "$out/labels-$d.dat" using 1:(0.75):2 with labels font ",7" notitle
GP
done
rm -f "$out"/*.wtr
sed -i "s|Measured by|Source \`$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)\`. Measured by|" "$here/results/optimizer-rq.md"
echo "optimizer-rq: wrote results/optimizer-rq.md and results/optimizer-rq-dmax1e{3,4,6,7}.png" >&2
cat "$here/results/optimizer-rq.md"

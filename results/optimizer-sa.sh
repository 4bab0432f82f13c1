#!/usr/bin/env bash
# SA's temperature against Eq. 4's fitness landscape (weft issue 15, item 4).
# Why does SA need several times more evaluations than SHC to the first
# alignment, and does a temperature scaled to the landscape change that?
#
#   1. The fitness differences of the first 100 moves of the paper's SA
#      (50 runs per program and D_max), against the paper's T_max.
#   2. The acceptance of worse moves over whole runs: per run (the runs of
#      3.) and move by move for one program (20 runs, plotted).
#   3. Evaluations to the first alignment, R runs per cell with seeds 1..R,
#      side by side: SHC, SA with the paper's temperature (the default), SA
#      with --sa-temperature scaled, and (as an explanation, not an option)
#      the paper's T_max cooled after every move instead of every ladder
#      cycle.
#   4. The scaled rule's p0 on other seeds (1001..1000+R) at D_max 10^4 and
#      10^7, to show how much the choice of p0 matters.
# Programs: the paper_* fixtures traced with slot 0 (as results/optimizer-rq.sh
# does, so that alignments are within reach of small D_max) and lost_update
# (the demo's).
# The model and the search configuration are weft optimize's; 1. and the
# move-by-move record use results/optimizer-sa.c, a search_config observer.
#
# Outputs: results/optimizer-sa.md, results/optimizer-sa-diffs.png,
# results/optimizer-sa-accept.png, results/optimizer-sa/ (weft optimize
# --stats-json of every cell of 3., and 3.'s cool-every-move runs).
# Usage: results/optimizer-sa.sh [RUNS] (default 100)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
if [ -n "${WEFT_NO_BUILD:-}" ]; then :; elif [ -f "$build/CMakeCache.txt" ]; then cmake --build "$build" >/dev/null; else "$here/scripts/build" >/dev/null; fi
weft="$build/cli/weft"
runs="${1:-100}"
out="$here/results/optimizer-sa"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC2046
cc -O2 -std=c11 -Wall -Wextra -I"$here/tracer/include" -I"$here/optimizer/include" -I"$here/search/include" \
  "$here/results/optimizer-sa.c" "$build/optimizer/libweft_optimizer.a" \
  "$build/optimizer/libweft_optimizer_core.a" "$build/search/libweft_search.a" \
  "$build/tracer/libweft_trace.a" $(pkg-config --libs libdw libelf jansson zlib gsl libdeflate) -lpthread -lm \
  -o "$tmp/optimizer-sa"
osa="$tmp/optimizer-sa"

programs=(paper_mm paper_csd paper_avn paper_ac paper_cfft paper_cfft6 lost_update)
dmaxes=(1000 10000 1000000 10000000)
start=$(date +%s)
for fx in "${programs[@]}"; do
  arg=()
  case "$fx" in paper_*) arg=(0) ;; esac
  timeout -s KILL 120 "$weft" trace -q --mode exact -o "$tmp/$fx.wtr" -- "$build/fixtures/$fx" "${arg[@]}" \
    >/dev/null 2>&1
done

# 1. The first 100 moves of 50 paper-SA runs.
for fx in "${programs[@]}"; do
  for d in "${dmaxes[@]}"; do
    "$osa" "$tmp/$fx.wtr" "$d" 1 50 sa paper 0.5 100 0 100 | grep '^M' >"$tmp/first-$fx-$d.txt"
  done
done

# 1b. The same on paper_avn traced with other clocks: 0.1 to 100 ns a cycle.
clocks=(100 1000 10000 100000)
for ps in "${clocks[@]}"; do
  timeout -s KILL 120 "$weft" trace -q --mode exact --ps-per-cycle "$ps" -o "$tmp/avn-$ps.wtr" \
    -- "$build/fixtures/paper_avn" 0 >/dev/null 2>&1
  for d in 10000 10000000; do
    "$osa" "$tmp/avn-$ps.wtr" "$d" 1 50 sa paper 0.5 100 0 100 | grep -E '^(M|V)' >"$tmp/clock-$ps-$d.txt"
  done
done

# 2. Move by move, 20 whole runs on one program, both schedules.
acc_fx=paper_avn acc_d=10000000
for t in paper scaled; do
  "$osa" "$tmp/$acc_fx.wtr" "$acc_d" 1 20 sa "$t" 0.5 100 0 1000000 >"$tmp/run-$t.txt"
done

# 3. Side by side, seeds 1..R; 4. p0 on seeds 1001..1000+R.
cell() { # dir name seed dmax fx weft-optimize-options...
  local dir="$1" name="$2" seed="$3" d="$4" fx="$5"
  shift 5
  timeout -s KILL 3600 "$weft" optimize "$tmp/$fx.wtr" --dmax "$d" --runs "$runs" --seed "$seed" -q \
    --stats-json "$dir/$fx-$name-$d.json" "$@" >/dev/null
}
for fx in "${programs[@]}"; do
  for d in "${dmaxes[@]}"; do
    cell "$out" shc 1 "$d" "$fx" --algo shc
    cell "$out" sa-paper 1 "$d" "$fx" --algo sa
    cell "$out" sa-scaled 1 "$d" "$fx" --algo sa --sa-temperature scaled
    "$osa" "$tmp/$fx.wtr" "$d" 1 "$runs" sa paper 0.5 100 1 0 | grep '^R' >"$out/$fx-sa-cool1-$d.txt"
  done
  for d in 10000 10000000; do
    for p0 in 0.05 0.2 0.5 0.8; do
      cell "$tmp" "p0-$p0" 1001 "$d" "$fx" --algo sa --sa-temperature scaled --sa-p0 "$p0"
    done
    cell "$tmp" shc-tune 1001 "$d" "$fx" --algo shc
  done
done
elapsed=$(($(date +%s) - start))

python3 - "$here" "$tmp" "$out" "$runs" "$elapsed" "$acc_fx" "$acc_d" "${clocks[*]}" <<'PY'
import json, math, os, statistics, sys
here, tmp, out, runs, elapsed, acc_fx, acc_d, clocks = sys.argv[1:9]
clocks = [int(c) for c in clocks.split()]
runs, elapsed, acc_d = int(runs), int(elapsed), int(acc_d)
progs = ["paper_mm", "paper_csd", "paper_avn", "paper_ac", "paper_cfft", "paper_cfft6", "lost_update"]
dmaxes = [1000, 10000, 1000000, 10000000]
def paper_t(d): return 1e-4 if d >= 10**7 else 1e-2
def dname(d): return "10^%d" % round(math.log10(d))
def q7(xs, p):  # R type 7, as search_quartiles
    xs = sorted(xs)
    h = (len(xs) - 1) * p
    lo = math.floor(h)
    if lo + 1 >= len(xs) or xs[lo + 1] == xs[lo]: return xs[lo]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])
def e(x): return f"{x:.1e}" if x < 0.01 else f"{x:.3g}"
def n(x): return "> 10^6" if x == math.inf else f"{x:,.0f}".replace(",", " ")

L = []
L.append(f"Measured by `results/optimizer-sa.sh {runs}` ({elapsed} s wall, {os.cpu_count()} cores). "
         "Programs: the paper_* fixtures traced with slot 0 (as in results/optimizer-rq.md: their "
         "worker sections are then ~1 µs apart, within reach of every D_max here except paper_avn's "
         "at 10^3) and lost_update (the demo's program). Model and search "
         "configuration: `weft optimize`'s (plain writes at addresses another thread writes; the "
         "paper's ladder, restarts and budget of 10^6; SA cooled by r = 0.95 once per ladder cycle "
         "of 80 moves and reheated at each restart).\n")

# ---- 1. first moves -------------------------------------------------------------
first = {}
for fx in progs:
    for d in dmaxes:
        moves = [l.split() for l in open(os.path.join(tmp, f"first-{fx}-{d}.txt"))]
        first[fx, d] = moves
L.append("## 1. The fitness differences SA sees\n")
L.append("First 100 moves of 50 runs of `--algo sa` (the paper's temperature), seeds 1..50. "
         "A move goes from fitness f to g; it is *worse* when g > f (Eq. 4 is minimized). "
         "Columns: the share of worse moves, the quantiles of the worse differences g − f, their "
         "mean, the paper's T_max at that D_max, T_max over the median difference, and the "
         "probability exp(−(g − f)/T_max) that the Metropolis rule accepts a median-sized and a "
         "90%-quantile worse move. vars and f0: the model's variables (its kept writes; each has at "
         "most one Eq. 4 term, each term < 1) and the median fitness of the first random point.\n")
L.append("| program | D_max | vars | f0 | worse | 10% | median | 90% | mean | T_max | T_max / median | P(accept median) | P(accept 90%) |")
L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
ratios, pmeds, cells, medians = [], [], [], {}
dims = {fx: json.load(open(os.path.join(out, f"{fx}-shc-1000.json")))["dim"] for fx in progs}
diffs_dat = open(os.path.join(tmp, "diffs.dat"), "w")
for di, d in enumerate(dmaxes):
    for pi, fx in enumerate(progs):
        mv = first[fx, d]
        w = sorted(float(m[4]) - float(m[3]) for m in mv if float(m[4]) > float(m[3]))
        med, q10, q90 = q7(w, .5), q7(w, .1), q7(w, .9)
        T = paper_t(d)
        ratios.append(T / med)
        pmeds.append(math.exp(-med / T))
        cells.append((fx, d))
        medians[fx, d] = med
        f0 = statistics.median(float(m[3]) for m in mv if m[2] == "1")
        L.append(f"| {fx} | {dname(d)} | {dims[fx]} | {f0:.4g} | {100*len(w)/len(mv):.0f}% | "
                 f"{e(q10)} | {e(med)} | {e(q90)} | {e(sum(w)/len(w))} | {e(T)} | {n(T/med)} | "
                 f"{math.exp(-med/T):.4f} | {math.exp(-q90/T):.3f} |")
        x = di * (len(progs) + 2) + pi
        diffs_dat.write(f"{x} {q7(w,.25)} {q7(w,.1)} {q7(w,.9)} {q7(w,.75)} {med} {T} {fx}\n")
diffs_dat.close()
L.append("")
big = [r for r, (fx, d) in zip(ratios, cells) if fx != "lost_update"]
L.append(f"Over all {len(ratios)} cells the paper's T_max is {n(min(ratios))} to "
         f"{n(max(ratios))} times the median worse difference (paper_* programs alone: "
         f"{n(min(big))} to {n(max(big))}), and a median-sized worse move is accepted with "
         f"probability {min(pmeds):.3f} to {max(pmeds):.4f}. The mean is pulled up by rare large "
         "differences (moves that break or nearly make an alignment: a term 1 − 1/(1+d) changes by "
         "up to 1/2 near d = 0 and by ~s/d² far from it), which is why the scaled rule uses the "
         "median.\n")
L.append("![worse differences of the first 100 moves against T_max](optimizer-sa-diffs.png)\n")

L.append("### 1b. Does the trace's time unit matter?\n")
L.append("paper_avn traced with `--ps-per-cycle` 100 to 100 000 (0.1 to 100 ns a cycle: the same "
         "program with its times multiplied by 0.1 to 100), the first 100 moves of 50 paper-SA runs "
         "as above. Span: the traced times of the model's writes, first to last.\n")
L.append("| ns per cycle | span of the writes (ns) | D_max | worse | 10% | median | 90% | T_max / median |")
L.append("|---|---|---|---|---|---|---|---|")
for d in [10000, 10000000]:
    for ps in clocks:
        rows = [l.split() for l in open(os.path.join(tmp, f"clock-{ps}-{d}.txt"))]
        t = [int(r[3]) for r in rows if r[0] == "V" and r[4] == "1"]
        mv = [r for r in rows if r[0] == "M"]
        w = sorted(float(m[4]) - float(m[3]) for m in mv if float(m[4]) > float(m[3]))
        med = q7(w, .5)
        L.append(f"| {ps/1000:g} | {n(max(t) - min(t))} | {dname(d)} | {100*len(w)/len(mv):.0f}% | "
                 f"{e(q7(w,.1))} | {e(med)} | {e(q7(w,.9))} | {n(paper_t(d)/med)} |")
L.append("")
L.append("When the traced span is well below D_max, the random delays set the distances between "
         "writes and the differences do not depend on the clock (D_max = 10^7 rows); when it is "
         "not, they only get smaller (D_max = 10^4, slower clocks). In either case the paper's "
         "T_max stays far above them.\n")

# ---- 2. acceptance over runs ----------------------------------------------------
def load(name, fx, d):
    f = os.path.join(tmp if name.startswith(("p0-", "shc-tune")) else out, f"{fx}-{name}-{d}.json")
    return json.load(open(f))
L.append("## 2. Acceptance of worse moves over whole runs\n")
L.append(f"Per run (until its first alignment), accepted worse moves over proposed worse moves, from "
         f"the `--stats-json` of the runs of section 3 (seeds 1..{runs}): median over runs "
         "[quartiles]. Scaled T_max: the value the rule computed, median over runs.\n")
L.append("| program | D_max | paper: accepted | scaled: accepted | paper T_max | scaled T_max (median) |")
L.append("|---|---|---|---|---|---|")
for d in dmaxes:
    for fx in progs:
        row = [fx, dname(d)]
        for name in ["sa-paper", "sa-scaled"]:
            s = load(name, fx, d)
            r = [a / w for a, w in zip(s["moves_worse_accepted"], s["moves_worse"]) if w > 0]
            row.append(f"{100*q7(r,.5):.0f}% [{100*q7(r,.25):.0f}..{100*q7(r,.75):.0f}]" if r else "-")
        s = load("sa-scaled", fx, d)
        tm = [t for t in s["sa"]["tmax"] if t > 0]
        row += [e(paper_t(d)), e(q7(tm, .5)) if tm else "-"]
        L.append("| " + " | ".join(row) + " |")
L.append("")

# Move by move: windows of 500 moves, over the runs still searching.
W = 500
acc_rows = []
for t in ["paper", "scaled"]:
    bins = {}
    for line in open(os.path.join(tmp, f"run-{t}.txt")):
        p = line.split()
        if p[0] != "M": continue
        k = (int(p[2]) - 1) // W
        b = bins.setdefault(k, [0, 0, [], []])
        if float(p[4]) > float(p[3]):
            b[0] += 1; b[1] += int(p[6]); b[2].append(float(p[4]) - float(p[3]))
        b[3].append(float(p[5]))
    with open(os.path.join(tmp, f"acc-{t}.dat"), "w") as f:
        for k in sorted(bins):
            b = bins[k]
            if b[0] < 20: continue
            f.write(f"{(k + 0.5) * W} {b[1]/b[0]} {statistics.median(b[3])} {statistics.median(b[2])}\n")
            acc_rows.append((t, k, b[1] / b[0]))
L.append(f"Move by move, {acc_fx} at D_max = {dname(acc_d)}, 20 runs (seeds 1..20) of each schedule, "
         f"in windows of {W} moves over the runs still searching: the share of worse moves accepted, "
         "the temperature and the median worse difference.\n")
L.append("![acceptance over a run](optimizer-sa-accept.png)\n")

# ---- 3. side by side --------------------------------------------------------------
def cool1(fx, d):
    ev = []
    for line in open(os.path.join(out, f"{fx}-sa-cool1-{d}.txt")):
        p = line.split()
        ev.append(int(p[2]) if int(p[2]) > 0 else math.inf)
    return ev
def evals(s): return [x if x > 0 else math.inf for x in s["evals_to_hit"]]
def fmt(ev):
    k = sum(1 for x in ev if x != math.inf)
    return f"{n(q7(ev,.5))} [{n(q7(ev,.25))}..{n(q7(ev,.75))}]" + ("" if k == len(ev) else f" ({k}/{len(ev)})")
L.append("## 3. Evaluations to the first alignment, side by side\n")
L.append(f"{runs} runs per cell, seeds 1..{runs} in every column: median [quartiles] over all runs "
         "(a run without an alignment counts as more than the budget; (k/n): runs that found one "
         "when not all did). SA paper: `--algo sa`; SA scaled: `--algo sa --sa-temperature scaled` "
         "(p0 = 0.5, 100 sampled moves). Cool every move: the paper's T_max cooled by r after "
         "every move rather than every 80 (results/optimizer-sa.c; not a weft option). "
         "scaled < paper: seeds on which the scaled schedule needed fewer evaluations than the "
         "paper's (the same seed gives both the same first random point). Last column: moves "
        "the paper's schedule needs to cool from T_max to the median worse difference of "
        "section 1, 80 · ln(T_max / median) / ln(1/0.95) (without restarts, which reheat).\n")
summary, below = [], 0
for d in dmaxes:
    L.append(f"### D_max = {dname(d)} ns\n")
    L.append("| program | SHC | SA paper | SA scaled | SA paper, cool every move | SA paper / SHC | SA scaled / SHC | scaled < paper | paper: moves until T = median worse difference |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for fx in progs:
        shc, pap, sca = (evals(load(x, fx, d)) for x in ["shc", "sa-paper", "sa-scaled"])
        c1 = cool1(fx, d)
        ms, mp, mc = q7(shc, .5), q7(pap, .5), q7(sca, .5)
        rp = f"{mp/ms:.1f}" if math.isfinite(mp / ms) else "-"
        rs = f"{mc/ms:.1f}" if math.isfinite(mc / ms) else "-"
        better = sum(1 for a, b in zip(sca, pap) if a < b)
        cool = 80 * max(0.0, math.log(paper_t(d) / medians[fx, d]) / math.log(1 / 0.95))
        L.append(f"| {fx} | {fmt(shc)} | {fmt(pap)} | {fmt(sca)} | {fmt(c1)} | {rp} | {rs} | "
                 f"{better}/{len(pap)} | {n(cool)} |")
        if math.isfinite(mp / ms) and math.isfinite(mc / ms):
            summary.append((mp / ms, mc / ms))
            below += mc < ms
    L.append("")
if summary:
    gp = math.exp(sum(math.log(a) for a, _ in summary) / len(summary))
    gs = math.exp(sum(math.log(b) for _, b in summary) / len(summary))
    L.append(f"Over the {len(summary)} cells where every median is finite, the median of SA paper is "
             f"{gp:.2f} times SHC's (geometric mean of the ratios; {min(a for a,_ in summary):.1f} to "
             f"{max(a for a,_ in summary):.1f}), the median of SA scaled {gs:.2f} times "
             f"({min(b for _,b in summary):.1f} to {max(b for _,b in summary):.1f}); SA scaled's "
             f"median is below SHC's in {below} of {len(summary)}.\n")

# ---- 4. p0 -----------------------------------------------------------------------
L.append("## 4. The scaled rule's p0\n")
L.append(f"`--sa-temperature scaled --sa-p0 P`, {runs} runs per cell on other seeds "
         f"(1001..{1000+runs}) than section 3: median [quartiles] of evaluations to the first "
         "alignment, SHC on the same seeds for reference.\n")
L.append("| program | D_max | SHC | p0 = 0.05 | p0 = 0.2 | p0 = 0.5 | p0 = 0.8 |")
L.append("|---|---|---|---|---|---|---|")
for d in [10000, 10000000]:
    for fx in progs:
        row = [fx, dname(d), fmt(evals(load("shc-tune", fx, d)))]
        row += [fmt(evals(load(f"p0-{p}", fx, d))) for p in ["0.05", "0.2", "0.5", "0.8"]]
        L.append("| " + " | ".join(row) + " |")
L.append("")
open(os.path.join(tmp, "body.md"), "w").write("\n".join(L))
labels = ", ".join(f'"{dname(d)}" {i*(len(progs)+2)+(len(progs)-1)/2}' for i, d in enumerate(dmaxes))
open(os.path.join(tmp, "xtics.gp"), "w").write(f"set xtics ({labels})\n")
PY

gnuplot <<GP
set terminal pngcairo size 1000,480 font ",10" noenhanced
set output "$here/results/optimizer-sa-diffs.png"
set title "Worse differences g - f of SA's first 100 moves (50 runs a box: quartiles, 10-90%, median) and the paper's T_max"
set logscale y
set format y "%.0e"
set ylabel "g - f of worse moves"
set xlabel "D_max (ns); programs mm, csd, avn, ac, cfft, cfft6, lost_update from left to right"
load "$tmp/xtics.gp"
set xrange [-1:36]
set grid ytics
set boxwidth 0.7
set style fill solid 0.35 border -1
plot "$tmp/diffs.dat" using 1:2:3:4:5 with candlesticks lc rgb "#27ae60" title "worse differences" whiskerbars, \
     "" using 1:6:6:6:6 with candlesticks lc rgb "black" notitle, \
     "" using 1:7 with points pt 5 ps 0.8 lc rgb "#c0392b" title "paper's T_max"
GP
gnuplot <<GP
set terminal pngcairo size 1000,480 font ",10" noenhanced
set output "$here/results/optimizer-sa-accept.png"
set title "SA on $acc_fx, D_max 10^7: acceptance of worse moves, T and the median worse difference per 500 moves (20 runs)"
set xlabel "move"
set ylabel "T, median worse difference"
set logscale y
set format y "%.0e"
set y2label "share of worse moves accepted"
set y2range [0:1]
set y2tics
set ytics nomirror
set key outside bottom center horizontal
set grid x
plot "$tmp/acc-paper.dat" using 1:2 axes x1y2 with lines lw 2 lc rgb "#c0392b" title "paper: accepted", \
     "$tmp/acc-scaled.dat" using 1:2 axes x1y2 with lines lw 2 lc rgb "#2980b9" title "scaled: accepted", \
     "$tmp/acc-paper.dat" using 1:3 with lines dt 2 lc rgb "#c0392b" title "paper: T", \
     "$tmp/acc-scaled.dat" using 1:3 with lines dt 2 lc rgb "#2980b9" title "scaled: T", \
     "$tmp/acc-paper.dat" using 1:4 with points pt 7 ps 0.4 lc rgb "#c0392b" title "paper: median worse g - f", \
     "$tmp/acc-scaled.dat" using 1:4 with points pt 7 ps 0.4 lc rgb "#2980b9" title "scaled: median worse g - f"
GP

# The reading of the paper and the conclusions above the marker are written
# by hand; everything below it is this script's.
md="$here/results/optimizer-sa.md"
marker="<!-- Everything below is written by results/optimizer-sa.sh. -->"
{
  if [ -f "$md" ]; then awk -v m="$marker" '$0 == m { exit } { print }' "$md"; fi
  echo "$marker"
  echo
  echo "Source \`$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)\`."
  cat "$tmp/body.md"
} >"$md.tmp"
mv "$md.tmp" "$md"
echo "optimizer-sa: wrote results/optimizer-sa.md and results/optimizer-sa-{diffs,accept}.png" >&2

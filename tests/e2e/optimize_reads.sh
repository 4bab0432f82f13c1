# weft optimize --reads on order_violation: main stores ov_config a few
# cycles after creating the worker, which reads it ~10*gap cycles later.
# The plan must delay main's store to one cycle *after* the worker's read
# (the nudge, docs/plan-format.md): aligned at one virtual time, the platform
# would run main's store first (ties go by thread number), the traced order,
# and the bug would stay hidden. Then weft inject: the oracle fails injected
# and passes uninjected.
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/order_violation"

run_status st "$WEFT" trace -q --mode exact -o "$work/ov.wtr" -- "$fx" 1000
check "traced (status $st)" test "$st" = 0
run_status st "$WEFT" optimize "$work/ov.wtr" --reads -o "$work/plan.json" >"$work/opt.out" 2>&1
check "optimize --reads exits 0 (got $st)" test "$st" = 0
check "optimize prints the reversed order" grep -q "(order reversed; 1 ns nudge)" "$work/opt.out"
"$WEFT" export --format csv -o "$work/ov.csv" "$work/ov.wtr"
check "plan: main's store goes 1 ns after the worker's read" python3 - "$work" <<'PY'
import csv, json, sys
work = sys.argv[1]
plan = json.load(open(f"{work}/plan.json"))
inj = [i for i in plan["injections"] if i["predicted"] and i["predicted"].get("nudge_ns")]
assert len(inj) == 1, plan["injections"]
i = inj[0]; p = i["predicted"]
assert i["variable"] == "ov_config" and i["thread"] == 0 and p["nudge_ns"] == 1, i
ev = {(int(r["thread"]), int(r["seq"])): r for r in csv.DictReader(open(f"{work}/ov.csv"))}
w, r = ev[(p["thread_a"], p["seq_a"])], ev[(p["thread_b"], p["seq_b"])]
assert w["kind"] == "write" and r["kind"] == "read" and r["function"] == "ov_user", (w, r)
assert i["delay_ns"] == int(r["time"]) - int(w["time"]) + 1, (i, w, r)
assert p["time"] == int(r["time"]), p
# With a delay before main's last access too: exposed, the bug makes the
# worker exit the process while main waits in join, before main gets there,
# and the tracer must say so.
last = max((k for k in ev if k[0] == 0 and int(ev[k]["pc"], 16)), key=lambda k: k[1])
extra = dict(i, thread=0, seq=last[1], pc=ev[last]["pc"], delay_ns=5, delay_insns=5,
             predicted=None)
json.dump(dict(plan, injections=plan["injections"] + [extra]), open(f"{work}/ended.json", "w"))
# The same plan without the nudge: the two at one time (the premise below).
i["delay_ns"] -= 1; i["delay_insns"] -= 1; del p["nudge_ns"]
json.dump(plan, open(f"{work}/tied.json", "w"))
PY

run_status st "$WEFT" inject "$work/plan.json" --timeout 60 --report-json "$work/rep.json" >"$work/inj.out" 2>&1
check "inject exits 0: the planned order was achieved (got $st)" test "$st" = 0
check "uninjected run passes" grep -q "^weft: uninjected run: exit 0 (passes)" "$work/inj.out"
check "injected run fails the oracle: the read came first" \
  grep -q "^weft: verdict: uninjected passes; injected exit 3, BUG: order violation: ov_config read before main initialised it" "$work/inj.out"
check "inject reports the pair ordered as planned" grep -q ": ordered as planned$" "$work/inj.out"
check "report: store exactly 1 ns after the read" python3 - "$work/rep.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["uninjected"]["passes"] and not r["injected"]["passes"], r
assert r["achieved"] == r["planned"] == 1, r
a = r["runs"][-1]["alignments"][0]
assert a["ordered"] and a["nudge_ns"] == 1 and not a["collided"], a
assert a["achieved_a"] == a["achieved_b"] + 1, a
PY

run_status st "$WEFT" inject "$work/ended.json" --timeout 60 >"$work/ended.out" 2>&1
check "a delay past main's end: missed, the thread ended first" \
  grep -Eq "injection 2: 5 ns before T0 seq [0-9]+ .*: missed \(the thread ended before event seq\)$" "$work/ended.out"
check "... while the planned pair is still ordered and the bug exposed" \
  grep -q "^weft: verdict: uninjected passes; injected exit 3, BUG: order violation" "$work/ended.out"

# Why the nudge: at one virtual time main's store still goes first.
run_status st "$WEFT" inject "$work/tied.json" --timeout 60 >"$work/tied.out" 2>&1
check "without the nudge: the two collide" grep -q ": collided$" "$work/tied.out"
check "without the nudge: the injected run passes (the tie hides the bug)" \
  grep -q "^weft: verdict: uninjected passes; injected exit 0 (passes)" "$work/tied.out"
[ "$failed" = 0 ] || { cat "$work/opt.out" "$work/inj.out" "$work/ended.out" "$work/tied.out"; }
finish

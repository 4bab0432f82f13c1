# The tracer's pc check of an injection (tracer/plugin_inject.c). In exact
# mode every access not addressed from SP is gated, including accesses to
# the thread's own stack through another register (x29, a pointer to a
# local), which the nonstack filter then drops. The worker of
# order_violation reaches its read of ov_config through such accesses
# (start_thread's frame, its own struct pthread), so the gate after its
# previous recorded event is at another pc than the planned event. That
# gate must leave the injection pending: the delay is applied before the
# read itself, and only an event recorded at the planned number with
# another pc makes an injection "missed".
source "$(dirname "$0")/lib.sh"
fx="$WEFT_FIXTURES/order_violation"
objdump="${AARCH64_OBJDUMP:-aarch64-linux-gnu-objdump}"

run_status st "$WEFT" trace -q --mode exact -o "$work/ov.wtr" -- "$fx" 1000
check "traced, nonstack filter (status $st)" test "$st" = 0
run_status st "$WEFT" trace -q --mode exact -f all -o "$work/all.wtr" -- "$fx" 1000
check "traced, no filter (status $st)" test "$st" = 0
"$WEFT" export --format csv -o "$work/ov.csv" "$work/ov.wtr"
"$WEFT" export --format csv -o "$work/all.csv" "$work/all.wtr"
"$objdump" -d "$fx" >"$work/fx.dis"
build_id=$("$WEFT" info "$work/ov.wtr" | sed -n 's/.*(build-id \([0-9a-f]*\)).*/\1/p')

# The planned event (the worker's read of ov_config) and proof that a gated,
# filtered stack access lies between it and the worker's previous event.
# Writes plan.json: a 7 ns delay before that read with its true pc, and one
# before the worker's next event with a wrong pc.
check "fixture: planned event preceded by gated stack accesses; plan written" \
  python3 - "$work" "$fx" "$build_id" <<'PY'
import csv, json, re, sys
work, fx, build_id = sys.argv[1:4]
def thread1(path):
    return [r for r in csv.DictReader(open(path)) if r["thread"] == "1"]
ev, full = thread1(f"{work}/ov.csv"), thread1(f"{work}/all.csv")
target = [r for r in ev if r["kind"] == "read" and r["function"] == "ov_user"
          and r["symbol"].startswith("ov_config")]
assert target, "no read of ov_config by ov_user in T1"
t = target[0]
seq = int(t["seq"])
prev = ev[seq - 1]
insn = {}
for line in open(f"{work}/fx.dis"):
    m = re.match(r"\s+([0-9a-f]+):\s+([0-9a-f]{8})\s", line)
    if m:
        insn[int(m.group(1), 16)] = int(m.group(2), 16)
key = lambda r: (r["time"], r["pc"], r["addr"], r["kind"])
i = [key(r) for r in full].index(key(prev)) + 1
between = []
while key(full[i]) != key(t):
    w = insn.get(int(full[i]["pc"], 16))
    if full[i]["kind"] in ("read", "write") and w is not None and (w >> 5) & 31 != 31:
        between.append(full[i]["pc"])  # base register not SP: gated, then dropped
    i += 1
print(f"T1 seq {seq} at pc {t['pc']}; gated stack accesses before it at {between[:4]}")
assert between, "nothing gated and dropped before the planned event: the test proves nothing"
nxt = ev[seq + 1]
def inj(s, pc):
    return {"thread": 1, "seq": s, "pc": pc, "function": None, "file": None, "line": None,
            "variable": None, "offset": 0, "delay_ns": 7, "delay_insns": 7}
plan = {"format": "weft-plan", "version": 1,
        "program": {"path": fx, "build_id": build_id, "argv": [fx, "1000"]},
        "platform": {"mode": "exact", "cpi": 1, "ps_per_cycle": 1000},
        "search": {"algorithm": "manual", "seed": 0, "dmax": 0, "evaluations": 0},
        "injections": [inj(seq, t["pc"]), inj(seq + 1, hex(int(nxt["pc"], 16) + 4))]}
json.dump(plan, open(f"{work}/plan.json", "w"), indent=1)
open(f"{work}/target", "w").write(f"{seq} {t['time']} {seq + 1} {nxt['time']}\n")
PY

run_status st "$WEFT" inject "$work/plan.json" --refine 0 --timeout 60 --keep "$work/keep" \
  --report-json "$work/report.json" >"$work/inject.out" 2>&1
check "inject ran (status $st)" test "$st" -le 1
check "inject: the planned read's injection is applied" \
  grep -Eq "injection 1: 7 ns before T1 seq [0-9]+ \(pc 0x[0-9a-f]+\): applied$" "$work/inject.out"
check "inject: the wrong-pc injection is missed, saying why" \
  grep -Eq "injection 2: .*: missed \(the event at seq has another pc\)$" "$work/inject.out"
"$WEFT" export --format csv -o "$work/inj.csv" "$work/keep/injected-0.wtr"
check "report and trace: applied before the read, which moved by exactly 7 ns" \
  python3 - "$work" <<'PY'
import csv, json, sys
work = sys.argv[1]
seq, t0, seq2, t2 = map(int, open(f"{work}/target").read().split())
tracer = json.load(open(f"{work}/keep/injected-0.json"))
a, b = sorted(tracer, key=lambda x: x["seq"])
assert a["state"] == "applied" and a["why"] is None, a
assert b["state"] == "missed" and b["seen_pc"] != b["pc"], b
rows = [r for r in csv.DictReader(open(f"{work}/inj.csv")) if r["thread"] == "1"]
delays = [r for r in rows if r["kind"] == "delay"]
assert len(delays) == 1, delays
plain = [r for r in rows if r["kind"] != "delay"]  # numbered as without injections
assert int(plain[seq]["time"]) == t0 + 7, (plain[seq], t0)
assert int(plain[seq - 1]["time"]) < int(delays[0]["time"]) <= int(plain[seq]["time"]) - 7
assert int(plain[seq2]["time"]) == t2 + 7, (plain[seq2], t2)  # not delayed a second time
r = json.load(open(f"{work}/report.json"))
states = [i["state"] for i in r["runs"][-1]["injections"]]
assert states == ["applied", "missed"], states
PY
[ "$failed" = 0 ] || { cat "$work/inject.out"; cat "$work/keep/injected-0.json" 2>/dev/null; }
finish

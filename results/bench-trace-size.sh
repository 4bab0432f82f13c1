# Part of bench-trace.sh (sourced): trace size and speed against zstd level.
# Uses: $weft $build $tmp $out $here, time_one, median.
size_runs="${SIZE_RUNS:-3}"
levels=(${LEVELS:-0 1 3 6 9})
# BASE_WEFT=path/to/an/older/weft adds its runs as level "base" (before).
[ -n "${BASE_WEFT:-}" ] && levels=(base "${levels[@]}")
sysroot="$build/arm64-sysroot"
# Deterministic pigz input: pseudo-random words from a fixed seed.
awk -v n="$(( ${PIGZ_KB:-1024} * 1024 / 6 ))" 'BEGIN { srand(1); for (i = 0; i < n; i++)
  printf "%s%s", substr("abcdefghijklmnopqrstuvwxyz", 1 + int(rand() * 26), 1 + int(rand() * 5)),
  (i % 12 == 11) ? "\n" : " " }' >"$tmp/pigz.in"
workloads=("parallel8:$build/fixtures/parallel8 ${P8_PASSES:-200000}")
[ -x "$sysroot/usr/bin/pigz" ] &&
  workloads+=("pigz:--sysroot $sysroot -- $sysroot/usr/bin/pigz -p4 -c $tmp/pigz.in")

# trace_at LEVEL NAME ARGS...: one traced run; wall seconds to $tmp/NAME.L.wall,
# the plugin's finish seconds to $tmp/NAME.L.finish
trace_at() {
  local l="$1" name="$2"; shift 2
  local t0 t1
  local w="$weft"
  [ "$l" = base ] && w="$BASE_WEFT"
  t0="$(now)"
  WEFT_GUEST_ENV="WEFT_TRACE_ZSTD_LEVEL WEFT_PLUGIN_STATS" WEFT_TRACE_ZSTD_LEVEL="$l" \
    WEFT_PLUGIN_STATS=1 timeout -s KILL 900 "$w" trace -q --mode free -o "$tmp/$name.$l.wtr" \
    "$@" </dev/null >/dev/null 2>"$tmp/$name.$l.err" || true
  t1="$(now)"
  echo "$t1 - $t0" | bc -l >>"$tmp/$name.$l.wall"
  sed -n 's/.*finish_s=\([0-9.]*\).*/\1/p' "$tmp/$name.$l.err" >>"$tmp/$name.$l.finish"
}

{
  echo
  echo "# Trace size and speed by zstd level (free mode, median of $size_runs interleaved runs)"
  echo
  echo "Level 0 is format 1 (the encoding before compression, ~6-7 bytes per event); *base*, if"
  echo "present, is the weft given as BASE_WEFT (before this change: format 1, no crash-proof"
  echo "buffers). *wall*: the whole \`weft trace\`, as a ratio to the first row; *merge*: the"
  echo "plugin's finish (spool merge, encoding, compression, fsync), with its throughput in MB of"
  echo "format-1 events per second."
  echo
  echo "| workload | level | events | bytes | bytes/event | smaller by | wall s | wall / level 0 | merge s | merge MB/s |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} >>"$out"
biggest=""
for w in "${workloads[@]}"; do
  name="${w%%:*}"
  read -r -a args <<<"${w#*:}"
  [ "${args[0]}" = --sysroot ] || args=(-- "${args[@]}")
  for i in $(seq 1 "$size_runs"); do
    for l in "${levels[@]}"; do
      echo "bench-trace: $name level $l run $i/$size_runs" >&2
      trace_at "$l" "$name" "${args[@]}"
    done
  done
  base_bytes="" base_wall=""
  for l in "${levels[@]}"; do
    f="$tmp/$name.$l.wtr"
    ev="$("$weft" info "$f" | sed -n '1s/.*, \([0-9]*\) events).*/\1/p')"
    bytes="$(stat -c %s "$f")"
    wall="$(median "$tmp/$name.$l.wall")"
    fin=""
    [ -s "$tmp/$name.$l.finish" ] && fin="$(median "$tmp/$name.$l.finish")"
    if [ "$l" = 0 ] || [ -z "$base_bytes" ]; then base_bytes="$bytes"; fi
    [ -n "$base_wall" ] || base_wall="$wall"
    fin_s="-" mbs="-"
    if [ -n "$fin" ]; then
      fin_s="$(printf '%.2f' "$fin")"
      mbs="$(printf '%.0f' "$(echo "$base_bytes/1000000/$fin" | bc -l)")"
    fi
    printf '| %s | %s | %s | %s | %.3f | %s | %.2f | %.2f | %s | %s |\n' "$name" "$l" "$ev" \
      "$bytes" "$(echo "$bytes/$ev" | bc -l)" "$([ "$l" = base ] && echo - ||
        printf '%.1fx' "$(echo "$base_bytes/$bytes" | bc -l)")" "$wall" \
      "$(echo "$wall/$base_wall" | bc -l)" "$fin_s" "$mbs" >>"$out"
    # the biggest trace of all, in events, for the info measurement
    if [ -z "$biggest" ] || [ "$ev" -gt "${biggest%% *}" ]; then biggest="$ev $f"; fi
  done
  # Same events, same level: the same bytes. (pigz's own threads may
  # share out its work differently from run to run: then the events differ.)
  trace_at 1 "$name.again" "${args[@]}"
  if ! cmp -s "$tmp/$name.1.wtr" "$tmp/$name.again.1.wtr"; then
    "$weft" export --format csv -o "$tmp/a.csv" "$tmp/$name.1.wtr"
    "$weft" export --format csv -o "$tmp/b.csv" "$tmp/$name.again.1.wtr"
    if cmp -s "$tmp/a.csv" "$tmp/b.csv"; then
      echo "bench-trace: $name: the same events gave different bytes" >&2
      exit 1
    fi
    echo "bench-trace: $name: two runs recorded different events (not a format matter)" >&2
  fi
done

# SPIN_S=S: also trace fail_spin (one thread spinning on a load) for S
# seconds without a size limit, the biggest trace of all.
if [ "${SPIN_S:-0}" -gt 0 ]; then
  echo "bench-trace: fail_spin for $SPIN_S s" >&2
  t0="$(now)"
  timeout -s KILL $((SPIN_S * 4 + 300)) "$weft" trace -q --timeout "$SPIN_S" --max-trace-size 0 \
    -o "$tmp/spin.1.wtr" -- "$build/fixtures/fail_spin" </dev/null >/dev/null 2>&1 || true
  t1="$(now)"
  spin_wall="$(echo "$t1 - $t0" | bc -l)"
  ev="$("$weft" info "$tmp/spin.1.wtr" | sed -n '1s/.*, \([0-9]*\) events).*/\1/p')"
  printf '\nfail_spin traced for %s s (killed at its time limit; the trace salvaged): %s events, %s bytes, %.0f s wall in all.\n' \
    "$SPIN_S" "$ev" "$(stat -c %s "$tmp/spin.1.wtr")" "$spin_wall" >>"$out"
  biggest="$ev $tmp/spin.1.wtr"
fi

# weft info on the biggest trace, both formats: time and memory.
bf="${biggest#* }"
{
  echo
  echo "\`weft info\` on the biggest trace (${biggest%% *} events):"
  echo
  echo "| trace | bytes | wall s | max RSS MB |"
  echo "|---|---|---|---|"
} >>"$out"
for f in "${bf%.*.wtr}.0.wtr" "${bf%.*.wtr}.1.wtr"; do
  [ -f "$f" ] || continue
  /usr/bin/time -f "%e %M" -o "$tmp/info.time" "$weft" info "$f" >/dev/null
  read -r s kb <"$tmp/info.time"
  printf '| %s | %s | %s | %.0f |\n' "$(basename "$f")" "$(stat -c %s "$f")" "$s" "$(echo "$kb/1024" | bc -l)" >>"$out"
done

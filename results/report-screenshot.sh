#!/usr/bin/env bash
# The demo's report as a reader sees it: `weft demo` with its defaults (the
# bundled lost_update, seed 1, 100 runs per policy, 20 search runs per
# algorithm) writes report.html, headless Chromium renders it 1280 px wide,
# and the page is cut below its last line. What was checked on it by eye is
# in results/report.md.
#
# Outputs: results/report.png
# Usage: results/report-screenshot.sh [DEMO ARGS...] (committed: no arguments)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${WEFT_BUILD_DIR:-$here/build}"
[ -n "${WEFT_NO_BUILD:-}" ] || "$here/scripts/build" >/dev/null
weft="$build/cli/weft"
chromium="$(command -v chromium || command -v chromium-browser)" ||
  { echo "report-screenshot: chromium is not installed (scripts/bootstrap installs it)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

timeout -s KILL 900 "$weft" demo -o "$tmp/weft-demo" "$@" >"$tmp/demo.log" 2>&1 ||
  { echo "report-screenshot: weft demo failed (its log: $tmp/demo.log)" >&2; tail -5 "$tmp/demo.log" >&2; exit 1; }
# Taller than the page; the white below it is cut off afterwards. No network,
# no profile, no extensions: the page must stand alone.
timeout -s KILL 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
  --no-first-run --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$tmp/chrome" --screenshot="$tmp/shot.png" \
  --window-size=1280,9000 "file://$tmp/weft-demo/report.html" >"$tmp/chromium.log" 2>&1 || true
[ -s "$tmp/shot.png" ] || { echo "report-screenshot: chromium wrote no screenshot" >&2; exit 1; }
bottom="$(convert "$tmp/shot.png" -trim -format '%[fx:page.y+h]' info:)"
[ "$bottom" -lt 8990 ] || echo "report-screenshot: the page may be taller than the shot" >&2
# 256 colours keep the file small; the plots and the timeline use a few dozen.
convert "$tmp/shot.png" -crop "1280x$((bottom + 24))+0+0" +repage -dither None -colors 256 \
  -define png:compression-level=9 "$tmp/report.png"
mv "$tmp/report.png" "$here/results/report.png"
echo "results/report.png: 1280x$((bottom + 24)), $(stat -c %s "$here/results/report.png") bytes"

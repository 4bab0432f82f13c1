# Sourced by the real-program benchmarks (bench-real.sh, bench-replay-real.sh):
# the input they compress and each program's command line.

# real_input FILE MB: text from a fixed seed, compressible like real text,
# the same bytes on every machine.
real_input() {
  awk -v n="$(($2 * 1024 * 1024))" 'BEGIN {
  srand(1); split("the of and to in is that it for weft thread lock race time", w, " ")
  while (len < n) { line = ""; for (i = 0; i < 12; i++) line = line w[int(rand() * 14) + 1] " " int(rand() * 1000) " "
    print line; len += length(line) + 1 } }' >"$1"
  truncate -s "$(($2 * 1024 * 1024))" "$1"
}

# real_cmd PROGRAM SYSROOT INPUT: its argv (sysroot paths), compressing INPUT
# to stdout with 4 threads.
real_cmd() {
  case "$1" in
  pigz) echo "$2/usr/bin/pigz -p4 -c $3" ;;
  pbzip2) echo "$2/usr/bin/pbzip2 -p4 -c $3" ;;
  xz) echo "$2/usr/bin/xz -T4 -1 --block-size=256k -c $3" ;;
  *) echo "unknown program: $1" >&2; return 1 ;;
  esac
}

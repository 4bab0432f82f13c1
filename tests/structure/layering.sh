#!/usr/bin/env bash
# The components' dependencies run one way (docs/architecture.md): each
# library folder may include only the public headers of the components
# listed for it below, never a cli/ header and never another folder's
# private header. A new dependency is a decision: add it here and to
# docs/architecture.md in the same change.
set -euo pipefail
src="${WEFT_SRC:?}"
declare -A allowed=(
  [search]="search"
  [pct]="pct"
  [platform]="platform pct"
  [tracer]="trace platform pct"
  [guest]="guest trace"
  [optimizer]="optimizer search trace races"
  [races]="races trace"
  [replay]="replay guest pct trace optimizer search races"
  [report]="report replay trace guest pct search optimizer"
  [demo]="demo report replay optimizer guest trace pct search"
)
fail=0
for comp in "${!allowed[@]}"; do
  [ -d "$src/$comp" ] || continue
  while IFS= read -r line; do
    file="${line%%:*}"
    hdr="$(sed -E 's/.*#include [<"]([^>"]+)[>"].*/\1/' <<<"$line")"
    case "$hdr" in
    weft/*.h)
      name="${hdr#weft/}"
      name="${name%.h}"
      if ! grep -qw -- "$name" <<<"${allowed[$comp]}"; then
        echo "FAIL $file includes $hdr: $comp may use only ${allowed[$comp]}"
        fail=1
      fi
      ;;
    */*)
      # A relative path into another folder bypasses the public headers.
      echo "FAIL $file includes $hdr: use the component's public header"
      fail=1
      ;;
    *.h)
      # A private header must be the component's own.
      if [ ! -f "$(dirname "$file")/$hdr" ] && [ -z "$(find "$src/$comp" -name "$hdr" -print -quit)" ]; then
        echo "FAIL $file includes $hdr, which is not in $comp/"
        fail=1
      fi
      ;;
    esac
  done < <(grep -rHE '^#include "' "$src/$comp" --include='*.c' --include='*.cpp' --include='*.h' |
           sed -E 's/^([^:]+):/\1:/' || true)
done
[ "$fail" = 0 ] && echo "ok   every component includes only the headers it may"
exit "$fail"

#!/usr/bin/env bash
# weft as a Debian package, end to end on this machine: build the .deb with
# cpack, check its Depends against every library ldd says the binary and the
# plugin load, install it with dpkg -i, run the installed weft demo from a
# scratch folder outside the checkout with the build tree renamed away and
# WEFT_PLUGIN unset (a qemu wrapper logs which plugin each run loads), then
# remove the package. Writes results/install.md: each command and its output.
# Needs root (dpkg -i); refuses if a weft package is installed already.
# Usage: results/install.sh
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$here/build" # cpack runs there; the transcript calls it build/
source "$here/results/transcript-lib.sh"

[ "$(id -u)" = 0 ] || { echo "install.sh: dpkg -i needs root" >&2; exit 1; }
if dpkg-query -W -f='${Status}' weft 2>/dev/null | grep -q installed; then
  echo "install.sh: a weft package is installed already; this script would remove it" >&2
  exit 1
fi
[ ! -e "$build.hidden" ] || { echo "install.sh: $build.hidden exists (an earlier run's?)" >&2; exit 1; }
"$here/scripts/build" >/dev/null

scratch="$(mktemp -d /tmp/weft-install.XXXXXX)"
hidden="$build.hidden"
installed=0
cleanup() {
  [ -d "$hidden" ] && mv "$hidden" "$build"
  [ "$installed" = 1 ] && dpkg --purge weft >/dev/null 2>&1
  rm -rf "$scratch"
}
trap cleanup EXIT

# deps_check DEB: every library ldd resolves for the packaged binary and
# plugin, the Debian package that ships it, and whether the .deb's Depends
# names that package or one of its dependencies does (the libraries' own
# libraries come with them). Fails if one is covered by neither.
deps_check() {
  local x pkgs lib pkg via missing=0
  x="$(mktemp -d)"
  dpkg-deb -x "$1" "$x"
  mapfile -t pkgs < <(dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/(.*//; s/|.*//; s/ //g')
  echo "| library (ldd) | package | in Depends |"
  echo "|---|---|---|"
  while read -r lib; do
    pkg="$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null)" || pkg="?:"
    pkg="${pkg%%:*}"
    via=""
    for d in "${pkgs[@]}"; do
      [ "$d" = "$pkg" ] && via="yes" && break
    done
    if [ -z "$via" ]; then
      for d in "${pkgs[@]}"; do
        # no grep -q: an early exit would fail the pipe under pipefail
        dep_closure "$d" | grep -x "$pkg" >/dev/null && via="via $d" && break
      done
    fi
    [ -n "$via" ] || { via="MISSING"; missing=1; }
    echo "| ${lib##*/} | $pkg | $via |"
  done < <(ldd "$x/usr/bin/weft" "$x/usr/lib/weft/libweft-tracer.so" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
  rm -rf "$x"
  return "$missing"
}

# dep_closure PKG: PKG and every installed package it depends on, recursively.
dep_closure() {
  local -A seen=()
  local todo=("$1") p d
  while [ "${#todo[@]}" -gt 0 ]; do
    p="${todo[0]}"
    todo=("${todo[@]:1}")
    [ -n "${seen[$p]:-}" ] && continue
    seen[$p]=1
    echo "$p"
    for d in $(dpkg-query -W -f='${Depends},${Pre-Depends}' "$p" 2>/dev/null | tr ',' '\n' |
      sed 's/(.*//; s/|.*//; s/:any//; s/ //g'); do
      [ -n "$d" ] && todo+=("$d")
    done
  done
}

md="$scratch/install.md"
t_begin "$md" "weft as a Debian package: build, install, run, remove ($(date -u +%Y-%m-%d))"
t_note "Made by \`results/install.sh\` on Debian $(cat /etc/debian_version), $(nproc) cores, from" \
  "commit \`$(git -C "$here" describe --always --dirty)\`. Each block is a command as the script ran" \
  "it and its output; \`build/\` is the checkout's build folder."
cd "$here"
t_note "## The package"
t_run "(cd build && cpack -G DEB | grep -v '^CPack: - Install')"
deb="$(ls build/weft_*_amd64.deb)"
t_run "dpkg-deb -f $deb Package Version Architecture Depends Recommends"
t_run "dpkg-deb -c $deb | awk '{ print \$6 }' | grep -v '/fixtures/.' | grep -v '/share/doc/weft/docs/.'"
t_note "Depends is computed by dpkg-shlibdeps (\`CPACK_DEBIAN_PACKAGE_SHLIBDEPS\`) from the" \
  "libraries the binary and the plugin link; qemu-user is added by hand (weft runs it, no" \
  "linker sees it). The check below takes every library ldd resolves, transitive ones" \
  "included, and finds the package that ships it in Depends or among its dependencies:"
t_run "deps_check $deb"

t_note "## Installed on this machine"
t_run "dpkg -i $deb"
installed=1
t_run "command -v weft && weft --version"
t_note "The build tree is renamed away, so nothing of it can be found; WEFT_PLUGIN is unset." \
  "weft looks for its plugin and fixtures only relative to its own binary (../lib/weft), and" \
  "no build path is compiled into it:"
t_run "mv build build.hidden && ls -d build*"
t_run "unset WEFT_PLUGIN; env | grep -c '^WEFT_' || true"
t_run "readelf -p .rodata /usr/bin/weft | grep -c '$here' || true"
t_run "cd $scratch"
t_run "timeout -s KILL 1800 weft demo --runs 10 --search-runs 2"
t_run "ls -l weft-demo/report.html"
t_note "The same demo again with qemu-aarch64 behind a wrapper (WEFT_QEMU) that logs the" \
  "\`-plugin\` argument of every qemu weft starts, the demo's steps included:"
t_run "printf '#!/bin/sh\\necho \"\$*\" | grep -o -- \"-plugin [^,]*\" >>%s/plugins.log\\nexec qemu-aarch64 \"\$@\"\\n' $scratch >qemu-logged && chmod +x qemu-logged && cat qemu-logged"
t_run "WEFT_QEMU=\$PWD/qemu-logged timeout -s KILL 1800 weft demo --runs 10 --search-runs 2 -o logged >/dev/null && ls logged/report.html"
t_run "sort plugins.log | uniq -c"
t_note "## Man page and bash completion"
t_run "MANWIDTH=80 man weft 2>&1 | sed -n '1,12p;/^   replay/,/^       -d/p'"
t_run "bash -c 'source /usr/share/bash-completion/completions/weft; complete -p weft'"
t_note "## Removed"
t_run "cd $here && mv build.hidden build"
t_run "dpkg --purge weft"
installed=0
t_run "hash -r; command -v weft || echo 'weft: not on PATH any more'; dpkg-query -W weft 2>&1 || true"

sed -i "s|$scratch|/tmp/weft-install.XXXXXX|g" "$md"
cp "$md" "$here/results/install.md.tmp" && mv "$here/results/install.md.tmp" "$here/results/install.md"
echo "install.sh: wrote results/install.md" >&2

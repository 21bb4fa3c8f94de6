#!/usr/bin/env bash
# Runs a Windows program under Wine, headless, in a throw-away prefix: the runner for the
# x86_64-pc-windows-gnu builds (`make windows-test`, and cargo's target runner).
#
#   tests/windows/wine-run.sh PROGRAM.exe [ARGS...]
#
# WINEPREFIX: the prefix (default target/wine-prefix under the repository); made on the first
#   run (wineboot, ~10 s), reused after that. Delete it to start over: nothing else uses it.
# WINE: the wine64 loader (default: wine64 on PATH, else Debian's /usr/lib/wine/wine64 — the
#   wine64 package alone installs no command on PATH).
# OMPRPC_WINE_SHIM: bcryptprimitives.dll (tests/windows/bcryptprimitives.c), copied beside
#   PROGRAM when missing there: Wine 8.0 has no such DLL and every Rust program imports it.
#
# No display: DISPLAY and WAYLAND_DISPLAY are unset, so nothing can open a window; Wine's
# debug channels are off (WINEDEBUG=-all) unless WINEDEBUG is set; Mono and Gecko are never
# offered (WINEDLLOVERRIDES), which also keeps the first start short. The program's exit code
# is this script's.
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 PROGRAM.exe [ARGS...]" >&2
    exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if [ -z "${WINE:-}" ]; then
    if command -v wine64 >/dev/null 2>&1; then WINE=wine64
    elif [ -x /usr/lib/wine/wine64 ]; then WINE=/usr/lib/wine/wine64
    else echo "wine-run: no wine64 (apt-get install wine64; .ci/run does)" >&2; exit 127; fi
fi
export WINEPREFIX="${WINEPREFIX:-$repo/target/wine-prefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree=;mshtml=}"
unset DISPLAY WAYLAND_DISPLAY

program="$1"
if [ -n "${OMPRPC_WINE_SHIM:-}" ] && [ ! -e "$(dirname "$program")/bcryptprimitives.dll" ]; then
    cp "$OMPRPC_WINE_SHIM" "$(dirname "$program")/bcryptprimitives.dll"
fi

# The first run makes the prefix; a lock keeps parallel runs (cargo test runs one test binary
# at a time, make -j may not) from making it twice. wineboot's chatter goes to a log.
# The prefix then says it is Windows 10 (Wine 8.0's new prefix says Windows 7, and Node 22's
# node.exe refuses to run below 8.1); a prefix made before this step gets it on its next run.
mkdir -p "$(dirname "$WINEPREFIX")"
(
    flock 9
    if [ ! -e "$WINEPREFIX/system.reg" ]; then
        start=$(date +%s)
        if ! "$WINE" wineboot --init > "$WINEPREFIX.log" 2>&1; then
            echo "wine-run: making the prefix $WINEPREFIX failed; see $WINEPREFIX.log" >&2
            exit 1
        fi
        echo "wine-run: made the prefix $WINEPREFIX in $(( $(date +%s) - start )) s" >&2
    fi
    if [ ! -e "$WINEPREFIX/.omprpc-win10" ]; then
        if ! "$WINE" winecfg -v win10 >> "$WINEPREFIX.log" 2>&1; then
            echo "wine-run: setting the prefix $WINEPREFIX to Windows 10 failed; see $WINEPREFIX.log" >&2
            exit 1
        fi
        touch "$WINEPREFIX/.omprpc-win10"
    fi
) 9> "$WINEPREFIX.lock"

exec "$WINE" "$@"

#!/usr/bin/env bash
# make windows-real-pi: the real pi for Windows on Node 22's node.exe under Wine, driven by the
# Rust client cross-built for Windows (tests/windows_real_pi.rs): start through npm's pi.cmd,
# a text turn, a host tool bridged over loopback TCP, a close that leaves no process.
#
# Installed once, and again when a pinned manifest changes (the npm registry is used then,
# never while the suite runs):
#   - pi for win32 x64 (package.json / package-lock.json here: npm ci --os=win32 --cpu=x64)
#     into $WRP_DIR/pi, laid out as npm lays out a global install on Windows: the package
#     under node_modules\, pi.cmd beside it, written by npm's own cmd-shim (pinned there too;
#     npm on Linux writes no .cmd);
#   - node.exe (tests/windows/install-node.sh), shared with make windows-bindings-test.
# Then the fake LLM (a Linux program, llm-script.json) listens on 127.0.0.1, which Wine's
# programs reach, and the suite runs under Wine through cargo's target runner.
#
# Environment (the Makefile sets it): CARGO, LOCKED, WINDOWS_TARGET, WRP_DIR, WINDOWS_NODE_DIR,
# FAKE_LLM (the Linux omprpc-fake-llm), NPM, NODE (a Linux node >= 20.17, runs cmd-shim), and
# the Windows build's cargo environment (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS and
# _RUNNER, WINEPREFIX, OMPRPC_WINE_SHIM). Arguments go to the test binary (a test name, or
# --nocapture). Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${CARGO:?}" "${WINDOWS_TARGET:?}" "${WRP_DIR:?}" "${WINDOWS_NODE_DIR:?}" "${FAKE_LLM:?}"
NPM="${NPM:-npm}" NODE="${NODE:-node}" LOCKED="${LOCKED:-}"
here="$repo/tests/windows/real-pi"
fail() { echo "windows-real-pi: FAIL: $*" >&2; exit 1; }
step() { echo "--- windows-real-pi: $*"; }
# A Unix path as Windows sees it under Wine (Z: is the root).
win() { local p; p="$(realpath -m "$1")"; printf 'Z:%s' "${p//\//\\}"; }
start_all=$SECONDS

# --- pi for Windows, and its pi.cmd ---------------------------------------------------------
prefix="$WRP_DIR/pi"
package="$prefix/node_modules/@earendil-works/pi-coding-agent"
if ! cmp -s "$here/package-lock.json" "$prefix/.installed-from" 2>/dev/null || [ ! -f "$prefix/pi.cmd" ]; then
    step "installing pi for win32 x64 (tests/windows/real-pi/package-lock.json) into $prefix"
    s=$SECONDS
    rm -rf "$prefix" && mkdir -p "$prefix"
    cp "$here/package.json" "$here/package-lock.json" "$prefix/"
    # Install scripts are skipped as in the Linux suites (they would run on Linux's node here).
    (cd "$prefix" && "$NPM" ci --os=win32 --cpu=x64 --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
    # pi's only native code is pi-tui's, prebuilt for every platform inside the package; npm
    # selects no platform package for it.
    [ -f "$prefix/node_modules/@earendil-works/pi-tui/native/win32/prebuilds/win32-x64/win32-platform.node" ] \
        || fail "pi-tui has no win32-x64 prebuild in $prefix"
    # The shim, as npm writes it on Windows for a package's bin (a global install puts it in
    # the prefix, beside node_modules): npm's own code, run by this machine's node.
    bin="$(cd "$package" && "$NODE" -p 'require("./package.json").bin.pi')"
    (cd "$prefix" && "$NODE" -e 'require("cmd-shim")(process.argv[1], process.argv[2]).catch(e => { console.error(e); process.exit(1); })' \
        "$package/$bin" "$prefix/pi")
    [ -f "$prefix/pi.cmd" ] || fail "cmd-shim wrote no $prefix/pi.cmd"
    cp "$here/package-lock.json" "$prefix/.installed-from"
    step "installed pi in $((SECONDS - s)) s"
fi
node="$(NPM="$NPM" bash "$repo/tests/windows/install-node.sh" "$WINDOWS_NODE_DIR")"

# --- the fake LLM ------------------------------------------------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/omprpc-windows-real-pi.XXXXXX")"
llm_pid=""
cleanup() {
    # Its stdin closes with this script (--exit-on-eof); the kill is for an early exit.
    if [ -n "$llm_pid" ]; then kill "$llm_pid" 2>/dev/null || true; wait "$llm_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
mkfifo "$tmp/llm-in" "$tmp/llm-out"
"$FAKE_LLM" --script "$here/llm-script.json" --log "$tmp/llm-requests.jsonl" --exit-on-eof \
    <"$tmp/llm-in" >"$tmp/llm-out" &
llm_pid=$!
exec 8>"$tmp/llm-in" 7<"$tmp/llm-out"
read -r -t 30 line <&7 || fail "the fake LLM did not start"
port="${line#LISTENING }"
[ "$line" != "$port" ] || fail "the fake LLM said '$line'"
: >"$tmp/llm-requests.jsonl"

# --- the suite ---------------------------------------------------------------------------------
step "pi $(cd "$package" && "$NODE" -p 'require("./package.json").version') on $(basename "$node"), the fake LLM on 127.0.0.1:$port"
s=$SECONDS
status=0
OMPRPC_WIN_PI_DIR="$(win "$prefix")" OMPRPC_WIN_NODE_DIR="$(win "$(dirname "$node")")" \
OMPRPC_FAKE_LLM_PORT="$port" OMPRPC_FAKE_LLM_LOG="$(win "$tmp/llm-requests.jsonl")" \
OMPRPC_WINE_NODE_PRELOAD="$(win "$here/wine-keepalive.cjs")" \
    "$CARGO" test $LOCKED --target "$WINDOWS_TARGET" --test windows_real_pi -- "$@" || status=$?
echo "windows-real-pi: suite $((SECONDS - s)) s, $((SECONDS - start_all)) s in all (status $status)"
exit "$status"

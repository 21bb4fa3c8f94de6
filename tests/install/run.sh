#!/usr/bin/env bash
# make install-test: install omprpc into a fresh temporary prefix and use it the way a user
# outside the checkout would — C and C++ through pkg-config (shared and static), Python from
# a fresh venv with pip, Go from a fresh module, Node from `npm pack` + `npm install`. Every
# step prints one PASS line; any failure stops the script with a non-zero status.
#
# Environment (the Makefile sets it): VERSION, ABI, OMPRPC_FAKE_AGENT, MAKE, CC, CXX, PYTHON,
# GO, NPM. Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${VERSION:?}" "${ABI:?}" "${OMPRPC_FAKE_AGENT:?}"
MAKE="${MAKE:-make}" CC="${CC:-cc}" CXX="${CXX:-g++}" PYTHON="${PYTHON:-python3}" GO="${GO:-go}" NPM="${NPM:-npm}"
agent="$(cd "$(dirname "$OMPRPC_FAKE_AGENT")" && pwd)/$(basename "$OMPRPC_FAKE_AGENT")"
[ -x "$agent" ] || { echo "install-test: no fake agent at $agent (make build)" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/omprpc-install-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
# Nothing from the caller's environment may point the programs at the checkout instead.
unset OMPRPC_LIBRARY CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH
unset PYTHONPATH CGO_CFLAGS CGO_LDFLAGS

step() { echo "--- install-test: $*"; }
# `readelf -d` into a variable first: `readelf | grep -q` could end readelf with SIGPIPE, which
# pipefail would report as the pipeline's status.
needs() { local dyn; dyn="$(readelf -d "$1")"; grep -q "NEEDED.*\[$2\]" <<<"$dyn"; }
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }

# --- make install -------------------------------------------------------------------------
# Staged (DESTDIR) first: files land under the stage, the .pc names the real prefix.
step "make install DESTDIR=… PREFIX=/opt/omprpc"
"$MAKE" -s --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/opt/omprpc >/dev/null
for f in lib/libomprpc.so."$VERSION" lib/libomprpc.so."$ABI" lib/libomprpc.so lib/libomprpc.a \
         include/omprpc.h lib/pkgconfig/omprpc.pc; do
    [ -e "$tmp/stage/opt/omprpc/$f" ] || fail "DESTDIR install lacks $f"
done
grep -qx 'prefix=/opt/omprpc' "$tmp/stage/opt/omprpc/lib/pkgconfig/omprpc.pc" \
    || fail "omprpc.pc under DESTDIR does not name the real prefix: $(cat "$tmp/stage/opt/omprpc/lib/pkgconfig/omprpc.pc")"
! grep -q "$tmp/stage" "$tmp/stage/opt/omprpc/lib/pkgconfig/omprpc.pc" || fail "omprpc.pc mentions DESTDIR"
echo "install-test: PASS staged install (DESTDIR honoured, omprpc.pc prefix=/opt/omprpc)"

step "make install PREFIX=$prefix"
"$MAKE" -s --no-print-directory install PREFIX="$prefix" >/dev/null
lib="$prefix/lib"
[ "$(readlink "$lib/libomprpc.so")" = "libomprpc.so.$ABI" ] || fail "libomprpc.so does not link to libomprpc.so.$ABI"
[ "$(readlink "$lib/libomprpc.so.$ABI")" = "libomprpc.so.$VERSION" ] || fail "libomprpc.so.$ABI does not link to libomprpc.so.$VERSION"
soname="$(readelf -d "$lib/libomprpc.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "libomprpc.so.$ABI" ] || fail "SONAME is '$soname', expected libomprpc.so.$ABI"
echo "install-test: PASS install layout (SONAME $soname, libomprpc.so.$VERSION, .a, header, omprpc.pc)"

# --- C and C++ through pkg-config ---------------------------------------------------------
command -v pkg-config >/dev/null || fail "pkg-config is not installed (.ci/run installs it)"
export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion omprpc)" = "$VERSION" ] || fail "pkg-config --modversion omprpc: $(pkg-config --modversion omprpc)"
cflags="$(pkg-config --cflags omprpc)"
libs="$(pkg-config --libs omprpc)"
# Word splitting of the pkg-config output is intended below (its flags contain no spaces).
step "C and C++ against the installed library: cc … \$(pkg-config --cflags --libs omprpc)"
"$CC" -std=c99 -Wall -Wextra -Werror -pedantic $cflags "$repo/examples/installed.c" -o "$tmp/installed-c" $libs
"$CXX" -std=c++11 -Wall -Wextra -Werror -pedantic $cflags "$repo/examples/installed.cpp" -o "$tmp/installed-cpp" $libs
for p in installed-c installed-cpp; do
    needs "$tmp/$p" "libomprpc.so.$ABI" || fail "$p does not record NEEDED libomprpc.so.$ABI"
    # No rpath in the .pc (as usual for a system library): the loader finds it through
    # LD_LIBRARY_PATH here, through ldconfig in a real prefix.
    LD_LIBRARY_PATH="$lib" "$tmp/$p" "$agent"
done

step "C, static: \$(pkg-config --static --libs omprpc) with libomprpc.a"
# `-lomprpc` would pick the shared library sitting next to the static one; -l: names the file.
static_libs="$(pkg-config --static --libs omprpc | sed 's/-lomprpc\b/-l:libomprpc.a/')"
"$CC" -std=c99 -Wall -Wextra -Werror -pedantic $cflags "$repo/examples/installed.c" -o "$tmp/installed-static" $static_libs
! needs "$tmp/installed-static" "libomprpc[^]]*" || fail "the static build still needs libomprpc.so"
"$tmp/installed-static" "$agent" | sed 's/^installed-c:/installed-c (static):/'

# --- Python: fresh venv, pip install ------------------------------------------------------
# pip builds in the source directory (build/, *.egg-info); a copy keeps the checkout clean.
# setup.py then builds the library with cargo in the repository (OMPRPC_REPO; a no-op after
# `make install`'s release build) and bundles it as omprpc/_lib/libomprpc.so.
step "Python: fresh venv, pip install bindings/python"
"$PYTHON" -m venv "$tmp/venv"
mkdir "$tmp/pysrc"
(cd "$repo/bindings/python" && tar --exclude=__pycache__ --exclude=build --exclude='*.egg-info' --exclude=tests -cf - .) \
    | (cd "$tmp/pysrc" && tar -xf -)
OMPRPC_REPO="$repo" "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$tmp/pysrc" \
    >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log" >&2; fail "pip install"; }
(cd "$tmp" && OMPRPC_AGENT="$agent" EXPECTED_VERSION="$VERSION" "$tmp/venv/bin/python" -X dev -W error - <<'EOF'
import importlib.metadata, os, sys
import omprpc
from omprpc import RpcClient

venv = os.path.realpath(sys.prefix)
# The installed package, with the library bundled inside it (not the checkout's copy).
assert os.path.realpath(omprpc.__file__).startswith(venv), omprpc.__file__
assert os.path.realpath(omprpc.LIBRARY_PATH).startswith(venv), omprpc.LIBRARY_PATH
expected = os.environ["EXPECTED_VERSION"]
versions = {"metadata": importlib.metadata.version("omprpc"), "__version__": omprpc.__version__}
assert all(v == expected for v in versions.values()), (versions, expected)
with RpcClient(command=[os.environ["OMPRPC_AGENT"]]) as client:
    state = client.get_state()
    turn = client.prompt_and_wait("ping")
assert state.session_id, state
assert turn.assistant_text == "pong", turn.assistant_text
print(f"install-test: PASS python (fresh venv + pip, omprpc {omprpc.__version__}, bundled library)")
EOF
)

# --- Go: a fresh module that requires the binding -----------------------------------------
# -tags omprpc_system: bindings/go/link_system.go takes its flags from `pkg-config omprpc`.
step "Go: fresh module, go build -tags omprpc_system (pkg-config)"
mkdir "$tmp/gomod"
cat >"$tmp/gomod/go.mod" <<EOF
module example.com/installed

go 1.24

require github.com/omprpc/omprpc/bindings/go v0.0.0

replace github.com/omprpc/omprpc/bindings/go => $repo/bindings/go
EOF
cat >"$tmp/gomod/main.go" <<'EOF'
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	omprpc "github.com/omprpc/omprpc/bindings/go"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := os.Getenv("EXPECTED_VERSION")
	if omprpc.BindingVersion != want || omprpc.Version() != want {
		fmt.Fprintf(os.Stderr, "versions: binding %s, library %s, expected %s\n", omprpc.BindingVersion, omprpc.Version(), want)
		os.Exit(1)
	}
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{os.Getenv("OMPRPC_AGENT")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(1)
	}
	defer c.Close()
	if _, err := c.GetState(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "get_state:", err)
		os.Exit(1)
	}
	turn, err := c.PromptAndWait(ctx, "ping", nil)
	if err != nil || turn.AssistantText == nil || *turn.AssistantText != "pong" {
		fmt.Fprintln(os.Stderr, "prompt:", err)
		os.Exit(1)
	}
	if err := c.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
		os.Exit(1)
	}
	fmt.Printf("install-test: PASS go (fresh module, pkg-config, omprpc %s)\n", omprpc.Version())
}
EOF
# The rpath is needed at run time anyway, and CGO_LDFLAGS is part of the Go build cache's key:
# without a per-prefix value, a package cached by an earlier run (whose pkg-config --libs named
# an earlier, deleted prefix) would be linked again with its stale -L.
(cd "$tmp/gomod" && GOFLAGS=-mod=mod CGO_LDFLAGS="-Wl,-rpath,$lib" "$GO" build -tags omprpc_system -o "$tmp/installed-go" .)
needs "$tmp/installed-go" "libomprpc.so.$ABI" || fail "the Go program does not record NEEDED libomprpc.so.$ABI"
OMPRPC_AGENT="$agent" EXPECTED_VERSION="$VERSION" "$tmp/installed-go"

# --- Node: npm pack, npm install into a fresh directory -----------------------------------
# The package does not carry the library; OMPRPC_LIBRARY points it at the installed one.
step "Node: npm pack bindings/node, npm install the tarball"
mkdir "$tmp/npmpack" "$tmp/nodeapp"
(cd "$repo/bindings/node" && "$NPM" pack --silent --pack-destination "$tmp/npmpack" >/dev/null)
tarball="$(ls "$tmp"/npmpack/omprpc-*.tgz)"
[ "$(basename "$tarball")" = "omprpc-$VERSION.tgz" ] || fail "npm pack produced $(basename "$tarball"), expected omprpc-$VERSION.tgz"
printf '{ "name": "installed-app", "version": "0.0.0", "private": true }\n' >"$tmp/nodeapp/package.json"
(cd "$tmp/nodeapp" && "$NPM" install --no-audit --no-fund --loglevel=error "$tarball" >/dev/null)
cat >"$tmp/nodeapp/check.mjs" <<'EOF'
import { createRequire } from 'node:module';
import * as omprpc from 'omprpc';

const require = createRequire(import.meta.url);
const pkg = require('omprpc/package.json');
const want = process.env.EXPECTED_VERSION;
if (pkg.version !== want || omprpc.version() !== want) {
  throw new Error(`versions: package ${pkg.version}, library ${omprpc.version()}, expected ${want}`);
}
if (!require.resolve('omprpc').includes('node_modules')) throw new Error('omprpc resolved outside node_modules');
const client = await omprpc.Client.start({ command: [process.env.OMPRPC_AGENT] });
try {
  await client.request('get_state');
  const turn = await client.promptAndWait('ping', { timeoutMs: 60_000 });
  if (turn.assistantText !== 'pong') throw new Error(`assistantText ${turn.assistantText}`);
} finally {
  await client.close();
}
console.log(`install-test: PASS node (npm pack + npm install, omprpc ${omprpc.version()})`);
EOF
(cd "$tmp/nodeapp" && OMPRPC_LIBRARY="$lib/libomprpc.so" OMPRPC_AGENT="$agent" EXPECTED_VERSION="$VERSION" node check.mjs)

echo "install-test: all passed"

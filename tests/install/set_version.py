"""make set-version V=x.y.z: writes the version into every file that carries it.

Cargo.toml's [package] version is the source; the copies are Cargo.lock's omprpc entry,
bindings/python/pyproject.toml, bindings/node/package.json and package-lock.json, and
bindings/go/version.go. The header macros follow from Cargo.toml (`make header`, which the
Makefile runs next). tests/versions.rs fails when any of them disagree.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sub(path: str, pattern: str, repl: str, count: int = 1, flags: int = re.M) -> None:
    p = ROOT / path
    text = p.read_text(encoding="utf-8")
    new, n = re.subn(pattern, repl, text, count=count, flags=flags)
    if n != count:
        raise SystemExit(f"set-version: {path}: expected {count} match(es) of {pattern!r}, found {n}")
    p.write_text(new, encoding="utf-8")
    print(f"set-version: {path}")


def main() -> None:
    if len(sys.argv) != 2 or not re.fullmatch(r"\d+\.\d+\.\d+", sys.argv[1]):
        raise SystemExit("usage: set_version.py MAJOR.MINOR.PATCH (e.g. 0.2.0)")
    v = sys.argv[1]
    sub("Cargo.toml", r'(\[package\]\n(?:(?!\[)[^\n]*\n)*?version = ")[^"]*(")', rf"\g<1>{v}\g<2>")
    sub("Cargo.lock", r'(\[\[package\]\]\nname = "omprpc"\nversion = ")[^"]*(")', rf"\g<1>{v}\g<2>")
    sub("bindings/python/pyproject.toml", r'^(version = ")[^"]*(")', rf"\g<1>{v}\g<2>")
    sub("bindings/node/package.json", r'^(  "version": ")[^"]*(")', rf"\g<1>{v}\g<2>")
    # The root package appears twice in the lockfile: at the top and as packages[""].
    sub("bindings/node/package-lock.json", r'^(  "version": ")[^"]*(")', rf"\g<1>{v}\g<2>")
    sub("bindings/node/package-lock.json", r'(    "": \{\n      "name": "omprpc",\n      "version": ")[^"]*(")', rf"\g<1>{v}\g<2>")
    sub("bindings/go/version.go", r'^(const BindingVersion = ")[^"]*(")', rf"\g<1>{v}\g<2>")


if __name__ == "__main__":
    main()

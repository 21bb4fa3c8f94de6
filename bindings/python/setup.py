"""Build step of the omprpc Python package: the native library goes into the wheel.

``pip install ./bindings/python`` runs ``cargo build --release --lib`` in the crate and copies
``libomprpc`` into ``omprpc/_lib/``. The crate is, in this order: ``$OMPRPC_REPO``; ``native/``
next to this file (an sdist carries the crate's sources there: ``sdist`` below copies them in);
the repository root two levels up (a checkout). Environment:

* ``OMPRPC_PREBUILT_LIBRARY=/path/libomprpc.so`` — copy that library, do not run cargo
  (``make dist`` builds the wheels this way, from the release builds). A prebuilt ``.dll`` goes
  in as ``omprpc.dll``, whatever the platform building the wheel: ``make dist`` builds the
  Windows wheel on Linux from the cross-built DLL, tagged with ``--plat-name win_amd64``
  (``pip wheel -C--build-option=--plat-name=win_amd64``);
* ``OMPRPC_REPO=/path/to/omprpc`` — the repository, when building from elsewhere;
* ``CARGO`` — the cargo executable; ``CARGO_TARGET_DIR`` is honoured.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
#: What of the repository the crate needs to build its library: an sdist carries these under
#: native/ (the tests, benches, fuzz targets and bindings are not needed to build it).
CRATE_FILES = ("Cargo.toml", "Cargo.lock", "build.rs", "src", "include")
SDIST_CRATE_DIR = "native"
LIB_NAME = {"darwin": "libomprpc.dylib", "win32": "omprpc.dll"}.get(sys.platform, "libomprpc.so")


def _name_in_wheel(library: Path) -> str:
    """The library's file name under omprpc/_lib/: the one the binding looks for on the
    platform the library is built for (bindings/python/omprpc/_ffi.py), told by its suffix."""
    return {".dll": "omprpc.dll", ".dylib": "libomprpc.dylib"}.get(library.suffix, "libomprpc.so")


def _crate() -> Path:
    """The omprpc crate to build (see the module docstring for the order)."""
    tried = []
    for crate in (os.environ.get("OMPRPC_REPO"), HERE / SDIST_CRATE_DIR, HERE.parents[1]):
        if not crate:
            continue
        if (Path(crate) / "Cargo.toml").is_file():
            return Path(crate)
        tried.append(str(crate))
    raise SystemExit(
        "omprpc: cannot build the native library: no omprpc crate at " + ", ".join(tried)
        + " (set OMPRPC_REPO to the repository, or OMPRPC_PREBUILT_LIBRARY to a built libomprpc)"
    )


def _library() -> Path:
    prebuilt = os.environ.get("OMPRPC_PREBUILT_LIBRARY")
    if prebuilt:
        path = Path(prebuilt)
        if not path.is_file():
            raise SystemExit(f"OMPRPC_PREBUILT_LIBRARY={prebuilt} does not exist")
        return path
    repo = _crate()
    cargo = os.environ.get("CARGO", "cargo")
    cmd = [cargo, "build", "--release", "--lib"]
    if (repo / "Cargo.lock").is_file():
        cmd.append("--locked")
    print(f"omprpc: running {' '.join(cmd)} in {repo}", flush=True)
    try:
        subprocess.check_call(cmd, cwd=repo)
    except FileNotFoundError:
        raise SystemExit("omprpc: cargo was not found; install Rust (https://rustup.rs) or set CARGO") from None
    target = Path(os.environ.get("CARGO_TARGET_DIR") or repo / "target")
    if not target.is_absolute():
        target = repo / target
    built = target / "release" / LIB_NAME
    if not built.is_file():
        raise SystemExit(f"omprpc: cargo finished but {built} is missing")
    return built


class build_py_with_library(build_py):
    """build_py, plus the native library copied to omprpc/_lib/."""

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        dest = Path(self.build_lib) / "omprpc" / "_lib"
        dest.mkdir(parents=True, exist_ok=True)
        library = _library()
        shutil.copy2(library, dest / _name_in_wheel(library))


class sdist_with_crate(sdist):
    """sdist, plus the crate's sources under native/: the sdist builds with cargo alone."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        crate = _crate()
        dest = Path(base_dir) / SDIST_CRATE_DIR
        for name in CRATE_FILES:
            src = crate / name
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            elif src.is_file():
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
            else:
                raise SystemExit(f"omprpc: sdist: the crate at {crate} lacks {name}")


class BinaryDistribution(Distribution):
    """The wheel carries a native library: it is platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass: dict[str, type] = {"build_py": build_py_with_library, "sdist": sdist_with_crate}

try:  # tag the wheel py3-none-<platform>: the library is independent of the Python ABI
    try:
        from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:
        from wheel.bdist_wheel import bdist_wheel as _bdist_wheel  # type: ignore[no-redef]

    class bdist_wheel(_bdist_wheel):  # type: ignore[misc, valid-type]
        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> tuple[str, str, str]:
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = bdist_wheel
except ImportError:  # pragma: no cover - no wheel package: setuptools' default tags
    pass

setup(cmdclass=cmdclass, distclass=BinaryDistribution)

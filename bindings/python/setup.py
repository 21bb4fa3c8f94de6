"""Build step of the omprpc Python package: the native library goes into the wheel.

``pip install ./bindings/python`` runs ``cargo build --release --lib`` in the repository
root (two levels up) and copies ``libomprpc`` into ``omprpc/_lib/``. Environment:

* ``OMPRPC_PREBUILT_LIBRARY=/path/libomprpc.so`` — copy that library, do not run cargo;
* ``OMPRPC_REPO=/path/to/omprpc`` — the repository, when building from elsewhere (an sdist);
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
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
LIB_NAME = {"darwin": "libomprpc.dylib", "win32": "omprpc.dll"}.get(sys.platform, "libomprpc.so")


def _library() -> Path:
    prebuilt = os.environ.get("OMPRPC_PREBUILT_LIBRARY")
    if prebuilt:
        path = Path(prebuilt)
        if not path.is_file():
            raise SystemExit(f"OMPRPC_PREBUILT_LIBRARY={prebuilt} does not exist")
        return path
    repo = Path(os.environ.get("OMPRPC_REPO") or HERE.parents[1])
    if not (repo / "Cargo.toml").is_file():
        raise SystemExit(
            f"omprpc: cannot build the native library: {repo} is not the omprpc repository "
            "(set OMPRPC_REPO, or OMPRPC_PREBUILT_LIBRARY to a built libomprpc)"
        )
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
        shutil.copy2(_library(), dest / LIB_NAME)


class BinaryDistribution(Distribution):
    """The wheel carries a native library: it is platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass: dict[str, type] = {"build_py": build_py_with_library}

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

#!/usr/bin/env python3
"""Puts the daemon and its Python dependencies into <out>/libs for a per-platform VSIX.

The layout of Microsoft's vscode-python-tools-extension-template: the server's packages under
`bundled/libs`, run with the Python the user already has (`PYTHONPATH=bundled/libs python -m
sessiontree serve`). orjson and msgspec ship one compiled wheel per CPython version (watchfiles
is abi3), so the libs of every supported version are installed side by side: a compiled module's
file name carries its ABI tag (`_core.cpython-312-x86_64-linux-gnu.so`), so one directory serves
3.11 to 3.14 and each interpreter imports its own. The pure-Python files are the same for all of
them: the versions resolved for the first Python are pinned for the others.

Steps, all with pip and the package index only:
  1. build the project's wheel from a clean copy of the checkout (the same files `pip install .`
     installs), with setuptools from the wheel cache;
  2. per Python version: `pip download --only-binary=:all: --platform ... --python-version ...`
     into the wheel cache (<repo>/.cache/vscode/wheels/<target>; skipped when the cache already
     holds everything: the next build is offline), then `pip install --no-index --target`;
  3. merge, drop `bin/` and bytecode, write <out>/manifest.json (target, Python versions, versions).

Usage: bundle_libs.py OUT_DIR [--target linux-x64] [--pythons 3.11,3.12,3.13,3.14]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

EXT_DIR = Path(__file__).resolve().parent.parent
ROOT = EXT_DIR.parent.parent
CACHE = Path(os.environ.get("SESSIONTREE_VSCODE_CACHE", ROOT / ".cache" / "vscode"))

#: pip platform tags per VS Code target (pip widens manylinux and macOS tags to older ones).
PLATFORMS = {
    "linux-x64": ["manylinux2014_x86_64"],
    "linux-arm64": ["manylinux2014_aarch64"],
    "darwin-x64": ["macosx_10_12_x86_64"],
    "darwin-arm64": ["macosx_11_0_arm64"],
    "win32-x64": ["win_amd64"],
}
#: The CPython versions with compiled wheels in the bundle: requires-python (3.11) to the newest.
DEFAULT_PYTHONS = ["3.11", "3.12", "3.13", "3.14"]
#: What the project's build backend needs (pyproject.toml [build-system]).
BUILD_REQUIRES_FALLBACK = ["setuptools>=77"]


def pip(*args: str, check: bool = True) -> bool:
    """Runs pip quietly; its whole output is shown only when it fails and `check` is set."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-cache-dir", "--no-input", *args]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 and check:
        sys.stderr.write(res.stdout + res.stderr)
        raise SystemExit(f"bundle-libs: pip failed: {' '.join(cmd)}")
    return res.returncode == 0


def project_files(dst: Path) -> None:
    """Copies what the wheel is built from (no build/, egg-info or bytecode of the checkout)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dst / name)
    for name in ("server", "protocol"):
        shutil.copytree(ROOT / name, dst / name, ignore=ignore)


def build_wheel(work: Path) -> Path:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requires = pyproject.get("build-system", {}).get("requires", BUILD_REQUIRES_FALLBACK)
    build_cache = CACHE / "wheels" / "build"
    build_cache.mkdir(parents=True, exist_ok=True)
    stamp = build_cache / ".requires"
    if not stamp.exists() or stamp.read_text() != json.dumps(requires):
        pip("download", "-d", str(build_cache), "--only-binary=:all:", *requires)
        stamp.write_text(json.dumps(requires))
    src = work / "src"
    src.mkdir()
    project_files(src)
    out = work / "wheel"
    # the isolated build environment gets setuptools from the cache, so this step is offline
    pip("wheel", "--no-deps", "--no-index", "--find-links", str(build_cache), "-w", str(out), str(src))
    (wheel,) = out.glob("sessiontree-*.whl")
    return wheel


def installed(target: Path) -> dict[str, str]:
    """Distribution name -> version of what pip installed into `target`."""
    out = {}
    for d in target.glob("*.dist-info"):
        m = re.match(r"(.+)-([^-]+)\.dist-info$", d.name)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def install_for(python: str, target_name: str, wheel: Path, dest: Path, constraints: Path | None) -> None:
    """Installs the wheel and its dependencies for one CPython version, downloading once."""
    wheels = CACHE / "wheels" / target_name
    wheels.mkdir(parents=True, exist_ok=True)
    common = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for plat in PLATFORMS[target_name]:
        common += ["--platform", plat]
    if constraints:
        common += ["-c", str(constraints)]
    links = ["--find-links", str(wheels), "--find-links", str(wheel.parent)]
    offline = ["install", "--no-index", *links, "--target", str(dest), "--no-compile", *common, str(wheel)]
    # the cache holds everything after the first build: no download, no index
    if pip(*offline, check=False):
        return
    shutil.rmtree(dest, ignore_errors=True)
    pip("download", "-d", str(wheels), "--find-links", str(wheel.parent), *common, str(wheel))
    # the project's own wheel is built fresh every time, never taken from the cache
    for stale in wheels.glob("sessiontree-*.whl"):
        stale.unlink()
    pip(*offline)


def merge(src: Path, dst: Path) -> None:
    """Copies `src` over `dst`; a pure-Python file present in both must be the same file."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if rel.parts[0] == "bin" or "__pycache__" in rel.parts:
            continue
        out = dst / rel
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        if out.exists():
            in_dist_info = rel.parts[0].endswith(".dist-info")
            if not in_dist_info and not filecmp.cmp(path, out, shallow=False):
                raise SystemExit(f"bundle-libs: {rel} differs between Python versions")
            continue
        shutil.copy2(path, out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the bundled/ directory to (re)create")
    ap.add_argument("--target", default="linux-x64", choices=sorted(PLATFORMS))
    ap.add_argument("--pythons", default=",".join(DEFAULT_PYTHONS))
    a = ap.parse_args()
    pythons = [p.strip() for p in a.pythons.split(",") if p.strip()]
    t0 = time.monotonic()
    out: Path = a.out.resolve()
    if out.exists():
        shutil.rmtree(out)
    libs = out / "libs"
    libs.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="st-bundle-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        # the first version resolves, the others install the same versions, two at a time
        first, rest = pythons[0], pythons[1:]
        install_for(first, a.target, wheel, work / f"py{first}", None)
        versions = installed(work / f"py{first}")
        constraints = work / "constraints.txt"
        constraints.write_text(
            "".join(f"{n}=={v}\n" for n, v in sorted(versions.items()) if n != "sessiontree")
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda py: install_for(py, a.target, wheel, work / f"py{py}", constraints), rest))
        for py in pythons:
            got = installed(work / f"py{py}")
            if got != versions:
                raise SystemExit(f"bundle-libs: Python {py} resolved {got}, not {versions}")
            merge(work / f"py{py}", libs)
    manifest = {
        "target": a.target,
        "pythons": pythons,
        "sessiontree": versions.get("sessiontree", "?"),
        "packages": {n: v for n, v in sorted(versions.items())},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    size = sum(f.stat().st_size for f in libs.rglob("*") if f.is_file())
    print(
        f"bundle-libs: {a.target}, Python {', '.join(pythons)}: {len(versions)} distributions, "
        f"{size / 1e6:.1f} MB in {out} ({time.monotonic() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

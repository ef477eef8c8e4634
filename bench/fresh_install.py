"""What a new user's first minutes cost: the wheel, a fresh environment, the first reply.

Builds Thoth's wheel, installs it (not editable) with its dependencies into a new
virtualenv, as `pip install .` would, then times the first `thoth chat` reply from it, in
an empty directory with a new THOTH_HOME. Prints the wheel's size, the install's time,
the environment's size and the first reply's time. pip's cache makes a second install
faster than a first one on a new machine: the figure says which it was.

    python bench/fresh_install.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="thoth-install-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / "source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source),
                    "-w", str(work / "dist")], check=True)
    (wheel,) = (work / "dist").glob("thoth-*.whl")
    print(f"wheel                  {wheel.stat().st_size / 1024:8.0f} KB  {wheel.name}")
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel),
                    "-c", str(ROOT / "constraints.txt")], check=True)
    print(f"install (venv + pip)   {time.perf_counter() - started:8.1f} s   (pip's cache as"
          " it is on this machine)")
    print(f"environment            {_size(venv) / 2**20:8.0f} MB")
    home, empty = work / "home", work / "empty"
    shutil.rmtree(home, ignore_errors=True)
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    started = time.perf_counter()
    chat = subprocess.Popen([str(venv / "bin" / "thoth"), "chat"], cwd=empty, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert chat.stdin is not None and chat.stdout is not None
    chat.stdin.write("We deploy the api on Fridays after the demo\n")
    chat.stdin.flush()
    first = chat.stdout.readline()
    elapsed = time.perf_counter() - started
    chat.stdin.close()
    chat.wait(timeout=120)
    print(f"first chat reply       {elapsed:8.1f} s   (a new THOTH_HOME: the brain is made"
          f" first) {first.strip()[:60]!r}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A built wheel works on its own: certify, bench and serve from any directory.

Slow (it builds a wheel and a virtualenv), and CI runs it: an editable checkout hides a
missing package-data entry, a wheel does not. The venv sees the packages of the environment
running the tests, whether that is a virtualenv or not (so no download is needed), but gets its
own copy of wsmode, and the test checks that copy is the one that runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    source = _source_copy(base / "source")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(source),
        ],
        check=True,
        cwd=base,
    )
    (wheel,) = dist.glob("wsmode-*.whl")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    _see_this_environment(env_dir)
    subprocess.run(
        [
            str(env_dir / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            str(wheel),
        ],
        check=True,
        cwd=base,
    )
    yield env_dir


def _source_copy(dest: Path) -> Path:
    """What the wheel is built from, copied out of the checkout: pyproject.toml, the readme and
    the folders its packages come from. Built in place, setuptools would rewrite the checkout's
    build/ and wsmode.egg-info/, where the tests running beside this one under `pytest -n` read
    wsmode's version (`importlib.metadata`)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    folders = {name.split(".")[0] for name in setuptools["packages"]}
    folders |= set(setuptools["package-dir"].values())
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in sorted(folders):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


def _see_this_environment(env_dir: Path) -> None:
    """Put this environment's site-packages on the venv's path, after its own.

    `--system-site-packages` would show the *base* interpreter's packages, which inside a
    virtualenv are not the ones installed for the tests. A path line in a `.pth` file adds the
    folder without running the `.pth` files in it, so this environment's editable install of
    wsmode stays out and the wheel's copy is the one imported.
    """
    (own,) = (env_dir / "lib").glob("python3*/site-packages")
    (own / "_tests_environment.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))


def _clean_env(venv: Path) -> dict[str, str]:
    """This environment without a PYTHONPATH that would shadow the venv's copy of wsmode."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(
    venv: Path, cwd: Path, *args: str, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "wsmode"), *args],
        cwd=cwd,
        env=_clean_env(venv),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_the_installed_copy_is_the_wheel(venv: Path, tmp_path: Path) -> None:
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import harness, harness.bundled as b; print(harness.__file__); print(b.suites_dir())",
        ],
        cwd=tmp_path,
        env=_clean_env(venv),
        capture_output=True,
        text=True,
        check=True,
    )
    package_file, suites = probe.stdout.split()
    assert Path(package_file).is_relative_to(venv)
    assert (
        Path(suites).is_relative_to(venv)
        and (Path(suites) / "targets" / "reference.toml").is_file()
    )


def test_certify_runs_the_shipped_suites(venv: Path, tmp_path: Path) -> None:
    done = _run(venv, tmp_path, "certify", "--no-report")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("certify: PASS"), done.stdout[-2000:]


def test_bench_replays_the_shipped_corpus(venv: Path, tmp_path: Path) -> None:
    done = _run(venv, tmp_path, "bench", "--max-rollouts", "2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = list((tmp_path / "results" / "bench").rglob("*.json"))
    assert len(written) == 1
    result = json.loads(written[0].read_text())
    assert result["kind"] == "bench" and result["bench"]["modes"]


def test_serve_answers_and_stops(venv: Path, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [str(venv / "bin" / "wsmode"), "serve", "--port", "0", "--data-dir", str(tmp_path)],
        cwd=tmp_path,
        env=_clean_env(venv),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"\(HTTP (http://\S+?)\)", line)
        assert match, line
        with urllib.request.urlopen(
            f"{match.group(1).removesuffix('/v1')}/healthz", timeout=10
        ) as answer:
            assert answer.status == 200
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0


# where a help text may point: the checkout's folders, or a document
_PATH_LIKE = re.compile(
    r"(?<![\w/$])(?:harness|suites|traces|reference_server|docs|results|bench|scripts|tests)"
    r"/[\w.-][\w./-]*|(?<![\w/$])[\w./-]+\.md\b"
)
# what the command writes, not what it reads (named in help so the user finds the output)
_OUTPUTS = frozenset({"OUT/leaderboard.md", "leaderboard.md", "results/clients/MATRIX.md"})
# the checkout's data folders and where a wheel carries them
_IN_WHEEL = {"suites/": "harness/_bundled/suites/", "traces/": "harness/_bundled/traces/"}


def test_help_points_only_at_files_the_wheel_ships(venv: Path) -> None:
    """Every path-looking string in any --help names something the built wheel holds."""
    from tests.test_cli import help_text

    (wheel,) = (venv.parent / "dist").glob("wsmode-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    pointed = {path.rstrip(".") for path in _PATH_LIKE.findall(help_text())} - _OUTPUTS
    missing = []
    for path in sorted(pointed):
        inside = next(
            (w + path[len(c) :] for c, w in _IN_WHEEL.items() if path.startswith(c)), path
        )
        if not any(name == inside or name.startswith(inside.rstrip("/") + "/") for name in names):
            missing.append(path)
    assert missing == [], f"help points at files a wheel does not ship: {missing}"

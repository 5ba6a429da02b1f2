"""`pip install .` works: the wheel, installed into a fresh virtual environment, runs both CLIs
from a folder outside the repository (no editable install, no PYTHONPATH, nothing downloaded)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "DeepResearch" / "conf"
# What the build must not see: caches, local runs, earlier builds, the Neo4j test server.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "outputs", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
    ".ruff_cache", ".neo4j-test", "target",
)


def run(command: list[str | Path], cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    run([sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation",
         "--no-index", "-w", tmp_path / "dist"], cwd=tmp_path)
    [wheel] = (tmp_path / "dist").glob("deepresearch-*.whl")
    return wheel


def fresh_venv(tmp_path: Path) -> Path:
    """A venv of its own whose site-packages sees this venv's dependencies through a plain
    path line: their .pth files (this project's editable install among them) are not run."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv the wheel is installed in, the wheel)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path)
    run([venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index", wheel],
        cwd=tmp_path)
    return venv, wheel


def user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_API_KEY")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_the_wheel_ships_every_config_file(installed: tuple[Path, Path]) -> None:
    _, wheel = installed
    expected = {f"DeepResearch/conf/{p.relative_to(CONF).as_posix()}" for p in CONF.rglob("*.yaml")}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert expected | {"DeepResearch/conf/__init__.py"} <= names, (
        f"missing from {wheel.name}: {sorted(expected - names)}")


def test_both_clis_run_from_the_installed_wheel(installed: tuple[Path, Path],
                                               tmp_path: Path) -> None:
    venv, _ = installed
    where = run([venv / "bin" / "python", "-c", "import DeepResearch; print(DeepResearch.__file__)"],
                cwd=tmp_path, env=user_env())
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    answered = run([venv / "bin" / "deepresearch", "question='Which aligner suits RNA-seq reads?'"],
                   cwd=tmp_path, env=user_env())
    assert "STAR" in answered.stdout and "offline model" in answered.stdout, answered.stdout
    [run_dir] = (tmp_path / "outputs").glob("run_*")
    assert (run_dir / "report.md").is_file()

    stats = run([venv / "bin" / "deepresearch-memory", "stats"], cwd=tmp_path, env=user_env())
    summary = json.loads(stats.stdout)
    assert summary["available"] and summary["total"] > 0, summary

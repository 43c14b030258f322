"""The package as a user gets it: a wheel, installed outside the source tree, used from an
empty folder.

The wheel is built from exactly what the Dockerfile's build stage copies, and installed by
`deploy/install.sh`, the script the Dockerfile's runtime stage runs, into a fresh virtual
environment, with the dependencies as uv.lock pins them (deploy/requirements.txt, installed
by the pinned uv from its cache, each file checked against its hash). Its metadata keeps
pyproject.toml's ranges: the lock pins installs, never what the package declares. Then, in a
clean shell whose only Python packages are that environment's: `skillreg init`, `skillreg
demo`, a publish, reads, `skillreg fsck`, the library, and `skillreg serve` answering
`/readyz`. This is the check a packaging change needs (an editable install hides what the
wheel leaves out: the migrations once did).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import registry
from registry.cli.packages import read_example
from registry.domain.manifest import build_manifest
from tests.packaging.dockerfile import ROOT, copied, stages
from tests.support.shell import clean_env

pytestmark = pytest.mark.slow

# The uv the Makefile installs beside the test environment's Python (the pinned version).
UV = Path(sys.executable).parent / "uv"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built like the Dockerfile's build stage: `uv build --wheel` of its COPYs."""
    context = tmp_path_factory.mktemp("context")
    for source in copied(stages()[0]):
        origin = ROOT / source
        if origin.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(origin, context / source, ignore=ignore)
        else:
            shutil.copy2(origin, context / source)
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [UV, "build", "--quiet", "--wheel", "--out-dir", out, "."],
        cwd=context,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("skill_registry-*.whl")
    return found


@pytest.fixture(scope="module")
def prefix(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed by `deploy/install.sh`."""
    venv = tmp_path_factory.mktemp("install") / "venv"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    requirements = ROOT / "deploy" / "requirements.txt"
    done = subprocess.run(
        ["sh", ROOT / "deploy" / "install.sh", venv, wheel, requirements],
        env={**env, "PYTHON": sys.executable, "UV": str(UV)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert registry.__version__ in done.stdout
    return venv


def test_the_wheels_metadata_keeps_the_ranges_of_pyproject(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = archive.read(name).decode()
    declared = {
        str(Requirement(line.removeprefix("Requires-Dist: ")))
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist: ") and "extra ==" not in line
    }
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert declared == {str(Requirement(r)) for r in pyproject["project"]["dependencies"]}
    assert not any("==" in requirement for requirement in declared)


def test_the_wheel_holds_every_package_the_migrations_and_the_examples(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {
        str(init.parent.relative_to(ROOT))
        for top in ("registry", "blobstore")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert {f"{p}/__init__.py" for p in packages} <= names
    migrations = {p.name for p in (ROOT / "migrations" / "versions").glob("*.py")}
    assert {f"registry/_migrations/versions/{m}" for m in migrations} <= names
    assert {"registry/_migrations/env.py", "registry/_migrations/script.py.mako"} <= names
    assert {"registry/py.typed", "blobstore/py.typed"} <= names
    assert "registry/examples/pdf-report/SKILL.md" in names
    assert not any(n.startswith(("tests/", "bench/", "migrations/")) for n in names)


class Shell:
    """Commands run from an empty folder, with only the installed environment on `PATH`."""

    def __init__(self, prefix: Path, work: Path) -> None:
        self.work = work
        self.env = clean_env(work.parent / "home", path=[prefix / "bin"])

    def __call__(self, *args: str | Path, code: int = 0) -> str:
        done = subprocess.run(
            [str(a) for a in args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,  # a hang guard, not a timing assertion
            check=False,
        )
        assert done.returncode == code, (args, done.stdout, done.stderr)
        return done.stdout


LIBRARY = """
import asyncio
from registry import PackageFile, Registry, Scope, Origin

async def main():
    async with Registry.open() as reg:
        pub = await reg.write_package(
            Scope("acme"), "lib-made",
            {"SKILL.md": b"---\\nname: lib-made\\ndescription: Made by the library.\\n---\\n",
             "run.sh": PackageFile(b"echo hi\\n", executable=True)},
            expected_head=None, origin=Origin.EDIT, actor="test",
        )
        pkg = await reg.read_package(Scope("acme"), "lib-made")
        print(pub.version, sorted(pkg.files))

asyncio.run(main())
"""


def test_the_installed_wheel_runs_from_an_empty_folder(prefix, tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    sh = Shell(prefix, work)

    where = sh("python", "-c", "import registry, blobstore; print(registry.__file__)")
    assert Path(where.strip()).is_relative_to(prefix), where
    assert registry.__version__ in sh("skillreg", "--version")
    # RE2, a dependency, lists the content check's literals.
    engine = "from registry.domain import literals; print(literals.ENGINE)"
    assert sh("python", "-c", engine).strip() == "re2"

    assert "schema version" in sh("skillreg", "init")
    demo = json.loads(sh("skillreg", "demo", "--json"))["published"]
    # The installed examples are the source tree's, byte for byte and mode for mode (an
    # install adds __pycache__ folders to them, which the demo leaves out).
    assert {slug: pub["manifest_hash"] for slug, pub in demo.items()} == {
        folder.name: build_manifest(read_example(folder)).hash
        for folder in (ROOT / "registry" / "examples").iterdir()
        if folder.is_dir()
    }
    assert "workspace 'demo'" in sh("skillreg", "demo")

    skill = work / "hello"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hello\ndescription: Says hello.\n---\n# hello\n")
    (skill / "scripts" / "hi.sh").write_text("echo hi\n")
    (skill / "scripts" / "hi.sh").chmod(0o755)
    published = json.loads(sh("skillreg", "publish", "hello", "-w", "acme", "--json"))
    assert published["version"] == 1
    shown = json.loads(sh("skillreg", "show", "acme/hello", "--json"))
    assert {f["path"] for f in shown["files"]} == {"SKILL.md", "scripts/hi.sh"}
    sh("skillreg", "get", "acme/hello@1", "--out", "copy")
    assert (work / "copy" / "SKILL.md").read_bytes() == (skill / "SKILL.md").read_bytes()
    assert (work / "copy" / "scripts" / "hi.sh").stat().st_mode & 0o111
    demo_copy = work / "demo-copy"
    sh("skillreg", "get", "demo/pdf-report", "--out", demo_copy)
    assert (demo_copy / "scripts" / "render.py").stat().st_mode & 0o111

    assert "1 ['SKILL.md', 'run.sh']" in sh("python", "-c", LIBRARY)
    sh("skillreg", "fsck", "--verify-content")

    asyncio.run(serve_and_check_readiness(prefix, sh))


async def serve_and_check_readiness(prefix: Path, sh: Shell) -> None:
    server = await asyncio.create_subprocess_exec(
        prefix / "bin" / "skillreg",
        *("serve", "--port", "0"),
        cwd=sh.work,
        env=sh.env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    log: list[str] = []
    try:
        async with asyncio.timeout(60):  # a hang guard for the start-up
            while not (match := re.search(r"running on (http://\S+)", log[-1] if log else "")):
                line = (await server.stderr.readline()).decode()
                assert line, f"skillreg serve exited: {''.join(log)}"
                log.append(line)
        url = f"{match.group(1)}/readyz"
        with await asyncio.to_thread(urllib.request.urlopen, url, timeout=10) as answer:
            assert answer.status == 200
            assert json.loads(answer.read()) == {
                "ready": True,
                "database": True,
                "blob_store": True,
            }
    finally:
        server.send_signal(signal.SIGINT)
        log.append((await server.stderr.read()).decode())
        await server.wait()
    assert server.returncode == 0, "".join(log)
    assert "Traceback" not in "".join(log), "".join(log)

"""The examples of README.md and docs/*.md run as written (the convention: docs/development.md).

Each page's `sh` and `python` blocks run in order in one bash session, in an empty folder
whose `.venv` is the project's virtual environment, in a clean shell: the system's `PATH`
only, nothing activated, so an example that says `skillreg` or `python3 -c 'import blake3'`
where it means `.venv/bin/skillreg` fails here as it would for a reader. A `python` block
runs with `.venv/bin/python`. The session has a network namespace of its own (when the
machine allows one), so a page may start `skillreg serve --port 8080` without meeting any
other process on that port; for the same reason the pages run on the embedded default
(SQLite), which is what they describe.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from tests.docs.examples import ROOT, examples, pages, problems
from tests.support.shell import clean_env

RUNNABLE_PAGES = [p for p in pages() if examples(p.read_text(encoding="utf-8"))]


def _isolation() -> list[str]:
    """The command that gives the session a network namespace with its own loopback."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin")
    if unshare is None or ip is None:
        return []
    argv = [unshare, "--net"] if os.geteuid() == 0 else [unshare, "--map-root-user", "--net"]
    if subprocess.run([*argv, ip, "link", "set", "lo", "up"], check=False).returncode != 0:
        return []  # no namespace here: the examples share the machine's loopback
    return [*argv, "sh", "-c", f'{ip} link set lo up && exec "$@"', "isolated"]


def test_every_fence_names_its_language_and_every_mark_a_reason():
    wrong = [problem for page in pages() for problem in problems(page)]
    assert wrong == []


def test_the_http_page_has_its_examples_and_a_stale_if_match():
    found = examples((ROOT / "docs" / "http.md").read_text(encoding="utf-8"))
    assert len(found) >= 10
    assert any(e.expect_status == 412 and "If-Match: $ETAG" in e.block.body for e in found)


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
async def test_the_examples_of_the_page_run(page, tmp_path):
    found = examples(page.read_text(encoding="utf-8"))
    work, outputs, scripts = tmp_path / "work", tmp_path / "out", tmp_path / "blocks"
    for folder in (work, outputs, scripts):
        folder.mkdir()
    (work / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    lines = ["set -eo pipefail"]
    for index, example in enumerate(found):
        out = outputs / str(index)
        if example.block.lang == "python":
            script = scripts / f"{index}.py"
            script.write_text(example.block.body, encoding="utf-8")
            lines.append(f".venv/bin/python {script} > {out} 2>&1")
        else:
            lines.append(f"{{\n{example.block.body}\n}} > {out} 2>&1")
    (scripts / "page.sh").write_text("\n".join(lines) + "\n", encoding="utf-8")

    process = await asyncio.create_subprocess_exec(
        *_isolation(),
        "bash",
        str(scripts / "page.sh"),
        cwd=work,
        env=clean_env(tmp_path / "home"),
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(300):  # a hang guard, far above a page's normal run
            code = await process.wait()
    finally:
        # A server the page started in the background ends with the session.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)

    ran = sorted(int(p.name) for p in outputs.iterdir())
    if code != 0:
        last = found[ran[-1]].block if ran else found[0].block
        output = (outputs / str(ran[-1])).read_text() if ran else ""
        where = f"{page.relative_to(ROOT)}:{last.line}"
        pytest.fail(f"the example at {where} failed ({code}):\n{last.body}\n--- output:\n{output}")
    wrong = []
    for index, example in enumerate(found):
        out = (outputs / str(index)).read_text()
        if example.expect_status is not None:
            status = re.search(r"^HTTP/1\.1 (\d{3})", out, re.MULTILINE)
            if status is None or int(status.group(1)) != example.expect_status:
                wrong.append((example.block.line, example.expect_status, out[:500]))
        expected = example.expect_text
        if expected is not None and out.rstrip("\n") != expected.rstrip("\n"):
            wrong.append((example.block.line, expected, out[:500]))
    assert wrong == []

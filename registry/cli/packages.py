"""Package commands: publish, show, get, list, and the bundled examples (demo)."""

from __future__ import annotations

import asyncio
import unicodedata
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from registry.api.folders import read_folder, write_folder
from registry.api.types import PackageInfo, SkillPage
from registry.cli.archived import archived_option, parse_skill_ref, pinned
from registry.cli.common import (
    FOLDER,
    OUTPUT_FOLDER,
    CliState,
    DecimalRange,
    agent_option,
    interrupt_safe_write,
    json_option,
    make_scope,
    nonblank,
    run_async,
    version_number,
)
from registry.cli.output import Output, count, human_size, shown
from registry.domain.approvals import FindingRef
from registry.domain.model import ANY, ExpectedHead, Origin, PackageFile, Publication
from registry.domain.numbers import MAX_VERSION


def parse_expect(value: str | None) -> ExpectedHead:
    """`N`, `new` or `any` (the default)."""
    if value is None or value == "any":
        return ANY
    if value == "new":
        return None
    version = version_number(value)
    if version is not None:
        return version
    msg = f"{value!r}: expected a version number (1 to {MAX_VERSION}), 'new' or 'any'"
    raise click.BadParameter(msg)


def _folder_name(directory: Path) -> str:
    # A slug is NFKC (docs/package-format.md); some filesystems hand names back decomposed.
    return unicodedata.normalize("NFKC", directory.resolve().name)


def parse_approval(value: str) -> FindingRef:
    """`PATH:ORDINAL`, as a refused write lists its findings."""
    path, sep, raw = value.rpartition(":")
    ordinal = version_number(raw)  # a finding's ordinal: 1 and up, bounded as a version is
    if not sep or not path or ordinal is None:
        msg = f"{value!r}: expected PATH:ORDINAL (a finding of a refused write)"
        raise click.BadParameter(msg)
    return FindingRef(path, ordinal)


def _publication_line(slug: str, pub: Publication) -> str:
    if pub.pending is not None:
        return (
            f"{slug}: waiting as pending write {pub.pending} for a saved slot "
            "(applied by itself once there is room)"
        )
    if pub.proposal is not None:
        kind = f"{pub.proposal_kind} " if pub.proposal_kind else ""
        return (
            f"{slug}: recorded as {kind}proposal {pub.proposal} for the owner to decide "
            f"(the head stays at version {pub.version})"
        )
    if pub.unchanged:
        return f"{slug}: unchanged at version {pub.version} ({pub.manifest_hash[:12]})"
    uploaded = f"{count(pub.uploaded, 'blob')}, {human_size(pub.uploaded_bytes)} uploaded"
    return f"{slug}: published version {pub.version} ({pub.manifest_hash[:12]}; {uploaded})"


@click.command()
@click.argument("directory", type=FOLDER)
@click.option("--workspace", "-w", required=True, help="The workspace to publish into.")
@agent_option
@click.option("--slug", help="The skill's slug (default: the folder's name).")
@click.option("--expect-head", "expect", help="N, 'new' or 'any' (default any).")
@click.option("-m", "--message", default="", help="A message stored with the version.")
@click.option(
    "--origin",
    type=click.Choice([o.value for o in Origin]),
    default=Origin.EDIT.value,
    show_default=True,
)
@click.option("--actor", default="cli", show_default=True, help="Who is publishing.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    callback=nonblank,
    help="A contributing source (repeatable).",
)
@click.option(
    "--keep-auto-improve",
    is_flag=True,
    help="Keep automatic improvements on (a person's write turns them off).",
)
@click.option(
    "--approve",
    "approve",
    multiple=True,
    metavar="PATH:ORDINAL",
    help="Approve a content-check finding a refused write listed (repeatable; owners).",
)
@json_option
@run_async
async def publish(
    state: CliState,
    out: Output,
    *,
    directory: Path,
    workspace: str,
    agent: str,
    slug: str | None,
    expect: str | None,
    message: str,
    origin: str,
    actor: str,
    sources: tuple[str, ...],
    keep_auto_improve: bool,
    approve: tuple[str, ...],
) -> None:
    """Publish the skill folder DIRECTORY as one atomic new version.

    Skipped, and listed: .git/, .DS_Store, Thumbs.db, __pycache__/, *.pyc, *.swp, *~ and
    the patterns of a .skillregignore file in DIRECTORY (gitignore-like: name, *.tmp,
    dir/, /rooted, ** segments). A person's write (origin edit, import) turns the skill's
    automatic improvements off unless --keep-auto-improve. A write refused for its
    content lists its findings; publish again with --approve PATH:ORDINAL for each one the
    owner accepts.
    """
    scope = make_scope(workspace, agent)
    expected = parse_expect(expect)
    approvals = [parse_approval(a) for a in approve]
    name = await asyncio.to_thread(_folder_name, directory) if slug is None else slug
    skipped: list[str] = []
    files = await asyncio.to_thread(
        read_folder, directory, limits=state.settings.limits(), skipped=skipped
    )
    async with state.open() as reg, interrupt_safe_write(f"{workspace}/{name}"):
        pub = await reg.write_package(
            scope,
            name,
            files,
            expected_head=expected,
            origin=Origin(origin),
            actor=actor,
            sources=sources,
            message=message,
            approve=approvals,
            keep_auto_improve=keep_auto_improve,
        )
    out.emit(
        {"slug": name, "workspace": workspace, "agent": agent, **_pub(pub), "skipped": skipped},
        lambda c: _print_publication(c, name, pub, skipped),
    )


def _print_publication(console: Console, slug: str, pub: Publication, skipped: list[str]) -> None:
    console.print(_publication_line(slug, pub))
    if skipped:
        console.print(f"skipped (ignored): {', '.join(skipped)}", soft_wrap=True, markup=False)


def _pub(pub: Publication) -> dict[str, Any]:
    return {
        "version": pub.version,
        "manifest_hash": pub.manifest_hash,
        "created": pub.created,
        "retired": pub.retired,
        "unchanged": pub.unchanged,
        "uploaded": pub.uploaded,
        "uploaded_bytes": pub.uploaded_bytes,
        "proposal": pub.proposal,
        "proposal_kind": pub.proposal_kind,
        "pending": pub.pending,
    }


def _info_dict(info: PackageInfo) -> dict[str, Any]:
    return {
        "workspace": info.scope.workspace,
        "agent": info.scope.agent,
        "slug": info.slug,
        "version": info.version,
        "head": info.head,
        "skill_id": info.skill_id,
        "archived": info.archived,
        "manifest_hash": info.manifest.hash,
        "origin": info.origin,
        "actor": info.actor,
        "message": info.message,
        "created_at": info.created_at,
        "file_count": info.manifest.file_count,
        "total_size": info.manifest.total_size,
        "triggers": list(info.triggers),
        "files": [
            {"path": e.path, "digest": e.digest, "size": e.size, "executable": e.executable}
            for e in info.manifest.entries
        ],
    }


def _render_info(info: PackageInfo, console: Console) -> None:
    if info.archived:
        where = f"~{info.skill_id}"
        head = f" (deleted skill; its last version is {info.head})"
    else:
        where, head = "", "" if info.version == info.head else f" (head is {info.head})"
    console.print(
        f"[bold]{info.scope.workspace}/{info.slug}{where}[/] version {info.version}{head}  "
        f"{info.manifest.file_count} files, {human_size(info.manifest.total_size)}"
    )
    console.print(f"manifest {info.manifest.hash}")
    if info.triggers:
        console.print("triggers: " + shown("; ".join(info.triggers)))
    console.print(
        f"{info.origin} by {shown(info.actor)} at {info.created_at:%Y-%m-%d %H:%M:%S}Z"
        + (f": {shown(info.message)}" if info.message else "")
    )
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("mode")
    table.add_column("size", justify="right")
    table.add_column("digest")
    table.add_column("path")
    for e in info.manifest.entries:
        table.add_row("-rwx" if e.executable else "-rw-", str(e.size), e.digest[:12], shown(e.path))
    console.print(table)


@click.command()
@click.argument("ref")
@agent_option
@archived_option
@json_option
@run_async
async def show(state: CliState, out: Output, *, ref: str, agent: str, archived: bool) -> None:
    """Show REF (WORKSPACE/SLUG[@VERSION]): its version, manifest and files.

    SLUG~ID@N (or SLUG@N --archived) is version N of the deleted skill ID.
    """
    workspace, slug, skill_id, number = parse_skill_ref(ref)
    version = pinned(ref, skill_id, number, archived=archived)
    async with state.open() as reg:
        info = await reg.package_info(make_scope(workspace, agent), slug, version)
    out.emit(_info_dict(info), lambda c: _render_info(info, c))


@click.command()
@click.argument("ref")
@click.option("--out", "target", required=True, type=OUTPUT_FOLDER)
@agent_option
@archived_option
@json_option
@run_async
async def get(
    state: CliState, out: Output, *, ref: str, target: Path, agent: str, archived: bool
) -> None:
    """Write the package REF (WORKSPACE/SLUG[@VERSION]) into an empty folder.

    SLUG~ID@N (or SLUG@N --archived) is version N of the deleted skill ID.
    """
    workspace, slug, skill_id, number = parse_skill_ref(ref)
    version = pinned(ref, skill_id, number, archived=archived)
    async with state.open() as reg:
        package = await reg.read_package(make_scope(workspace, agent), slug, version)
    await asyncio.to_thread(write_folder, target, package.files)
    out.emit(
        {**_info_dict(package), "out": str(target)},
        lambda c: c.print(
            f"wrote {workspace}/{slug}{f'~{package.skill_id}' if package.archived else ''} "
            f"version {package.version} "
            f"({package.manifest.file_count} files) to {target}"
        ),
    )


def _render_page(page: SkillPage, console: Console) -> None:
    if not page.items:
        console.print("no skills")
        return
    table = Table(show_header=True, header_style="bold", box=None)
    for column in ("slug", "head", "files", "size", "state", "manifest"):
        table.add_column(column)
    for item in page.items:
        flags = [item.state]
        if item.use_paused:
            flags.append("use paused")
        if item.learning_paused:
            flags.append("learning paused")
        table.add_row(
            item.slug,
            str(item.head),
            str(item.file_count),
            human_size(item.total_size),
            ", ".join(flags),
            item.manifest_hash[:12],
        )
    console.print(table)
    if page.next_after:
        console.print(f"more: --after {page.next_after}")


@click.command(name="list")
@click.argument("workspace")
@agent_option
@click.option("--limit", default=50, show_default=True, type=DecimalRange(1, 500))
@click.option("--after", help="Continue after this slug (from the previous page).")
@json_option
@run_async
async def list_(
    state: CliState, out: Output, *, workspace: str, agent: str, limit: int, after: str | None
) -> None:
    """List the skills of WORKSPACE."""
    async with state.open() as reg:
        page = await reg.list_skills(make_scope(workspace, agent), limit=limit, after=after)
    out.emit(page, lambda c: _render_page(page, c))


def example_root() -> Path:
    """The folder of bundled example skills."""
    return Path(str(resources.files("registry") / "examples"))


def read_example(folder: Path) -> dict[str, PackageFile]:
    """An example skill's files, without the `__pycache__` folders an install adds.

    pip byte-compiles every `.py` file of a wheel, the examples' scripts included, so an
    installed example has `scripts/__pycache__/*.pyc` beside its sources: not part of it.
    """
    files = read_folder(folder)
    return {path: f for path, f in files.items() if "__pycache__" not in path.split("/")}


@click.command()
@click.option("--workspace", "-w", default="demo", show_default=True)
@agent_option
@json_option
@run_async
async def demo(state: CliState, out: Output, *, workspace: str, agent: str) -> None:
    """Publish the bundled example skills into WORKSPACE and list them."""
    scope = make_scope(workspace, agent)
    results: dict[str, Publication] = {}
    async with state.open() as reg:
        for folder in sorted(p for p in example_root().iterdir() if p.is_dir()):
            files = await asyncio.to_thread(read_example, folder)
            results[folder.name] = await reg.write_package(
                scope,
                folder.name,
                files,
                expected_head=ANY,
                origin=Origin.IMPORT,
                actor="demo",
                message="bundled example",
            )
        page = await reg.list_skills(scope)

    def render(console: Console) -> None:
        console.print(f"the bundled example skills, published into workspace {scope.workspace!r}:")
        for slug, pub in results.items():
            console.print(_publication_line(slug, pub))
        _render_page(page, console)

    out.emit({"published": {s: _pub(p) for s, p in results.items()}, "skills": page}, render)


COMMANDS = (publish, show, get, list_, demo)

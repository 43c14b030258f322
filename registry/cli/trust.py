"""`skillreg keys`, `skillreg attestation`, `skillreg verify`: the keys that sign, and checking.

    skillreg keys create | rotate | list | export [--out FILE]
    skillreg attestation WORKSPACE/SLUG[@N] [--out FILE]     the version's signed envelope
    skillreg verify WORKSPACE/SLUG[@N]                        with this registry's keys and files
    skillreg verify --dir FOLDER --attestation FILE --keys FILE [--subject W/A/S@N]
                                                              offline: no registry at all

`verify` exits 0 when the attestation verifies, 3 (`attestation_invalid`) when it does not.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from registry.api.folders import read_folder, replace_file
from registry.api.trust import verify_package
from registry.api.types import KeyInfo, Verified
from registry.cli.common import (
    FOLDER,
    CliState,
    agent_option,
    json_option,
    make_scope,
    parse_ref,
    run_async,
)
from registry.cli.output import Output
from registry.domain.display import visible

INPUT_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _key(info: KeyInfo) -> dict[str, Any]:
    return {
        "keyid": info.key_id,
        "public_key": info.public_key,
        "created_at": info.created_at,
        "retired_at": info.retired_at,
        "current": info.current,
    }


@click.group()
def keys() -> None:
    """The Ed25519 keys that sign every version (docs/trust.md)."""


@keys.command(name="create")
@json_option
@run_async
async def create_key(state: CliState, out: Output) -> None:
    """Create the signing key file (SKILLREG_SIGNING_KEY_FILE, 0600) if no key exists."""
    async with state.open(write="skillreg keys list") as reg:
        info = await reg.trust.create_key()
    path = state.settings.signing_key_file
    out.emit(
        {"key": _key(info), "file": path},
        lambda c: c.print(f"created signing key {info.key_id[:16]} in {path}"),
    )


@keys.command(name="rotate")
@json_option
@run_async
async def rotate_key(state: CliState, out: Output) -> None:
    """Sign with a new key from now on; the old one is retired and still verifies."""
    async with state.open(write="skillreg keys list") as reg:
        old, info = await reg.trust.rotate_key()

    def render(c: Console) -> None:
        was = f"; {old[:16]} retired (its signatures stay valid)" if old else ""
        c.print(f"now signing with {info.key_id[:16]}{was}")

    out.emit({"key": _key(info), "retired": old}, render)


@keys.command(name="list")
@json_option
@run_async
async def list_keys(state: CliState, out: Output) -> None:
    """Every key, oldest first: id, since when, until when, and the one in use."""
    async with state.open() as reg:
        found = await reg.trust.keys()

    def render(c: Console) -> None:
        for k in found:
            until = "" if k.retired_at is None else f" retired {k.retired_at:%Y-%m-%d %H:%M}"
            mark = "*" if k.current else " "
            c.print(f"{mark} {k.key_id[:16]}  since {k.created_at:%Y-%m-%d %H:%M}{until}")

    out.emit({"keys": [_key(k) for k in found]}, render)


@keys.command(name="export")
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), help="Write it here."
)
@run_async
async def export_keys(state: CliState, out: Output, *, out_path: Path | None) -> None:
    """The public keys document hosts pin (as /.well-known/skillreg/keys.json serves it)."""
    del out
    async with state.open() as reg:
        document = await reg.trust.keys_document()
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if out_path is None:
        click.echo(text, nl=False)
    else:
        await asyncio.to_thread(replace_file, out_path, text.encode())


@click.command()
@click.argument("ref")
@agent_option
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), help="Write it here."
)
@run_async
async def attestation(
    state: CliState, out: Output, *, ref: str, agent: str, out_path: Path | None
) -> None:
    """Print (or save) the signed attestation of WORKSPACE/SLUG[@N] (the head by default)."""
    del out
    workspace, slug, version = parse_ref(ref)
    async with state.open() as reg:
        found = await reg.trust.attestation(make_scope(workspace, agent), slug, version)
    if out_path is None:
        click.echo(found.envelope.decode())
    else:
        await asyncio.to_thread(replace_file, out_path, found.envelope)


@click.command()
@click.argument("ref", required=False)
@agent_option
@click.option("--dir", "folder", type=FOLDER, help="Offline: the package's files.")
@click.option("--attestation", "envelope", type=INPUT_FILE, help="Offline: the envelope.")
@click.option("--keys", "keys_file", type=INPUT_FILE, help="Offline: the keys document.")
@click.option("--subject", help="Offline: the WORKSPACE/AGENT/SLUG@N it must be about.")
@json_option
@run_async
async def verify(
    state: CliState,
    out: Output,
    *,
    ref: str | None,
    agent: str,
    folder: Path | None,
    envelope: Path | None,
    keys_file: Path | None,
    subject: str | None,
) -> None:
    """Check a version's attestation: signed by a trusted key, about exactly these files.

    With WORKSPACE/SLUG[@N]: this registry's keys and the version's own files. Offline,
    with no registry: --dir, --attestation and --keys (`skillreg keys export`).
    """
    offline = (folder, envelope, keys_file)
    if ref is not None:
        if any(x is not None for x in offline) or subject is not None:
            msg = "give WORKSPACE/SLUG[@N], or --dir, --attestation and --keys: not both"
            raise click.UsageError(msg)
        workspace, slug, version = parse_ref(ref)
        async with state.open() as reg:
            checked = await reg.trust.verify(make_scope(workspace, agent), slug, version)
    else:
        if folder is None or envelope is None or keys_file is None:
            msg = "offline verification needs --dir, --attestation and --keys"
            raise click.UsageError(msg)
        files = await asyncio.to_thread(read_folder, folder, limits=state.settings.limits())
        signed = await asyncio.to_thread(envelope.read_bytes)
        try:
            document = json.loads(await asyncio.to_thread(keys_file.read_bytes))
        except ValueError as exc:
            msg = f"{keys_file}: not JSON ({exc})"
            raise click.BadParameter(msg) from None
        checked = verify_package(files, signed, document, subject=subject)
    out.emit(_verified(checked), lambda c: _render(checked, c))


def _verified(checked: Verified) -> dict[str, Any]:
    return {
        "verified": True,
        "keyid": checked.key_id,
        "subject": checked.subject,
        "digest": checked.digest,
        "predicate": checked.predicate,
    }


def _render(checked: Verified, console: Console) -> None:
    p = checked.predicate
    console.print(f"verified {visible(checked.subject)} (sha256 {checked.digest[:16]})")
    console.print(f"  signed by key {checked.key_id[:16]} at {visible(str(p.get('time')))}")
    console.print(f"  written by {visible(str(p.get('principal')))}", highlight=False)
    console.print(f"  declared actor {visible(str(p.get('declared_actor')))}", highlight=False)


COMMANDS = (keys, attestation, verify)

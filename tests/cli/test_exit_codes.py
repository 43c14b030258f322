"""Exit 6: the registry's configuration or its connections, not the registry itself (1).

A database URL no supported driver reads, a database that does not answer, and an
address `serve` cannot listen on each end in one line with exit 6 (a missing database:
tests/write/test_cli.py).
"""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from registry.cli.main import cli


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("foo://x", "unsupported database URL 'foo://x'"),
        ("postgresql+psycopg://u:secret@127.0.0.1:1/db", "Connection refused"),
    ],
)
def test_a_database_that_cannot_be_used_exits_6(embedded, url, said):
    result = CliRunner().invoke(cli, ["--database-url", url, "list", "acme"])
    assert result.exit_code == 6, result.output
    assert said in result.output
    assert "secret" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_serve_on_a_busy_port_says_so_in_one_line_and_exits_6(embedded):
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert result.exit_code == 6, result.output
    assert result.output == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"

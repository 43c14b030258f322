"""Exit 6: the registry's configuration or its connections, not the registry itself (1).

A database URL no supported driver reads and an address `serve` cannot listen on each end
in one line with exit 6 (a missing database: tests/write/test_cli.py; an unreachable one:
tests/write/test_edges.py; an unreachable blob store: tests/write/test_edges_s3.py).
"""

from __future__ import annotations

import socket

from click.testing import CliRunner

from registry.cli.main import cli


def test_a_database_url_no_driver_reads_exits_6(embedded):
    result = CliRunner().invoke(cli, ["--database-url", "foo://x", "list", "-w", "acme"])
    assert result.exit_code == 6, result.output
    assert "unsupported database URL 'foo://x'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_serve_on_a_busy_port_says_so_in_one_line_and_exits_6(embedded):
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = CliRunner().invoke(cli, ["serve", "--port", str(port)])
    assert result.exit_code == 6, result.output
    assert result.output == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"

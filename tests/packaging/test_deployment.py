"""The Dockerfile and compose.yaml, as far as a machine without a container runtime can check.

The image's install steps run in test_wheel.py (the build stage's `pip wheel` of its COPYs,
the runtime stage's `deploy/install.sh`). Here: the Dockerfile's shape (slim base, a user
that is not root, the health check on `/readyz`, `skillreg serve` as the entry point, a
build context that admits what it copies) and compose.yaml (it parses, names its services,
and every `SKILLREG_` variable it sets is a real setting, valid, and described in
docs/deployment.md).
"""

from __future__ import annotations

import json
import re

import yaml

from registry.db.engine import parse_database_url
from registry.settings import Settings
from tests.packaging.dockerfile import ROOT, copied, stages

DEPLOYMENT = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
# The settings a shared deployment sizes (docs/deployment.md, "Settings that matter").
SIZED = {
    "SKILLREG_DATABASE_URL",
    "SKILLREG_BLOB_URL",
    "SKILLREG_DB_POOL_SIZE",
    "SKILLREG_DB_MAX_OVERFLOW",
    "SKILLREG_DB_POOL_TIMEOUT",
    "SKILLREG_LOCK_TIMEOUT",
    "SKILLREG_UPLOAD_TIMEOUT",
    "SKILLREG_WRITE_TIMEOUT",
    "SKILLREG_S3_CONNECT_TIMEOUT",
    "SKILLREG_S3_READ_TIMEOUT",
}


def test_both_stages_start_from_the_slim_python_image():
    bases = [args.split()[0] for stage in stages() for kw, args in stage if kw == "FROM"]
    assert bases == ["python:3.11-slim", "python:3.11-slim"]


def test_the_image_installs_the_locked_dependencies_and_the_wheel_and_runs_as_a_user():
    runtime = stages()[-1]
    runs = [args for kw, args in runtime if kw == "RUN"]
    install = (
        "UV=/tmp/uv/bin/uv sh /tmp/install.sh /opt/skillreg /tmp/dist/*.whl /tmp/requirements.txt"
    )
    assert any(install in run for run in runs)
    copies = [args.split()[:-1] for kw, args in runtime if kw == "COPY"]
    assert ["deploy/install.sh", "deploy/requirements.txt"] in copies
    assert any("useradd" in run and "skillreg" in run for run in runs)
    users = [args for kw, args in runtime if kw == "USER"]
    assert users == ["skillreg"]
    (healthcheck,) = [args for kw, args in runtime if kw == "HEALTHCHECK"]
    assert "http://127.0.0.1:8080/readyz" in healthcheck
    (entrypoint,) = [json.loads(args) for kw, args in runtime if kw == "ENTRYPOINT"]
    assert entrypoint == ["skillreg", "serve"]
    (command,) = [json.loads(args) for kw, args in runtime if kw == "CMD"]
    assert command == ["--host", "0.0.0.0", "--port", "8080"]  # noqa: S104 - the container
    assert ("EXPOSE", "8080") in runtime


def test_the_build_context_admits_every_source_the_dockerfile_copies():
    admitted = {
        line[1:].strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    }
    sources = [source for stage in stages() for source in copied(stage)]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source in admitted, source


def _interpolate(value: str) -> str:
    """Compose's `${NAME:-default}` with nothing set: the default."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def test_compose_runs_postgres_minio_init_replicas_and_a_worker():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"postgres", "minio", "init", "registry", "worker"}
    assert services["init"]["entrypoint"] == ["skillreg", "init"]
    assert "--no-jobs" in services["registry"]["command"]
    assert services["registry"]["deploy"]["replicas"] >= 2
    assert services["worker"]["entrypoint"] == ["skillreg", "jobs", "run"]
    for name in ("registry", "worker"):
        condition = services[name]["depends_on"]["init"]["condition"]
        assert condition == "service_completed_successfully"
    assert set(services["init"]["depends_on"]) == {"postgres", "minio"}


def test_every_setting_compose_sets_is_real_valid_and_documented():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    prefix = Settings.model_config["env_prefix"]
    known = {f"{prefix}{name}".upper() for name in Settings.model_fields}
    for name in ("init", "registry", "worker"):
        env = {k: _interpolate(str(v)) for k, v in compose["services"][name]["environment"].items()}
        ours = {k: v for k, v in env.items() if k.startswith(prefix)}
        assert set(ours) <= known, set(ours) - known
        assert set(ours) >= SIZED, SIZED - set(ours)
        settings = Settings(**{k.removeprefix(prefix).lower(): v for k, v in ours.items()})
        assert parse_database_url(settings.database_url).get_backend_name() == "postgresql"
        assert settings.blob_url.startswith("s3://")
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(env)
        undocumented = {k for k in ours if f"`{k}`" not in DEPLOYMENT}
        assert undocumented == set()
    assert "`SKILLREG_PUBLIC_BASE_URL`" in DEPLOYMENT

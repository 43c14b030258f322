# skill-registry as a service: `skillreg serve` on port 8080 (docs/deployment.md).
# tests/packaging/test_wheel.py builds the wheel from exactly what the build stage copies
# and installs it with deploy/install.sh and deploy/requirements.txt, as the runtime stage
# does; test_deployment.py checks the rest of this file (no container runtime runs on the
# test machines).

FROM python:3.11-slim AS build
# uv, the version the Makefile pins (tests/packaging/test_lock.py keeps them equal), builds
# the wheel here and installs it in the runtime stage; it is not part of the image.
ARG UV_VERSION=0.13.9
RUN pip install --no-cache-dir --target /opt/uv uv==${UV_VERSION}
WORKDIR /src
COPY pyproject.toml README.md ./
COPY registry registry
COPY blobstore blobstore
COPY migrations migrations
RUN /opt/uv/bin/uv build --wheel --out-dir /dist .

FROM python:3.11-slim
ENV UV_NO_CACHE=1 \
    PYTHONUNBUFFERED=1
# The dependencies as uv.lock pins them (its export, with hashes), then the wheel.
COPY deploy/install.sh deploy/requirements.txt /tmp/
COPY --from=build /dist /tmp/dist
COPY --from=build /opt/uv /tmp/uv
RUN UV=/tmp/uv/bin/uv sh /tmp/install.sh /opt/skillreg /tmp/dist/*.whl /tmp/requirements.txt \
    && rm -r /tmp/uv /tmp/install.sh /tmp/requirements.txt /tmp/dist \
    && useradd --system --user-group --uid 10001 --home-dir /var/lib/skillreg --create-home skillreg
# Without settings the container keeps SQLite and blobs in its volume; compose.yaml sets
# PostgreSQL and S3 for several replicas.
ENV PATH=/opt/skillreg/bin:$PATH \
    SKILLREG_DATABASE_URL=sqlite+aiosqlite:////var/lib/skillreg/registry.db \
    SKILLREG_BLOB_URL=file:///var/lib/skillreg/blobs
USER skillreg
WORKDIR /var/lib/skillreg
VOLUME /var/lib/skillreg
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 \
    CMD ["/opt/skillreg/bin/python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=4)"]
ENTRYPOINT ["skillreg", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8080"]

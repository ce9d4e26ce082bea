# Concord's image. One image runs the web server and the Celery workers of the
# `default` and `llm` queues (target `web`, the default: no torch); target `gpu`
# adds torch and transformers for the `gpu` queue (local models).
#
#   docker build -t concord .
#   docker build --target gpu -t concord-gpu .
#
# BASE_IMAGE must provide Python 3.11 with its venv module (`python3 -m venv`):
# the official image by default, or any Debian bookworm with python3-venv.
# Behind a proxy that re-signs TLS, give pip the CA bundle as a BuildKit secret:
# it is mounted for the install steps only and is in no layer:
#
#   DOCKER_BUILDKIT=1 docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt .
#
# The entrypoint (deploy/docker-entrypoint.sh) takes `web`, `worker QUEUE`,
# `beat` or `migrate`; see compose.yaml and docs/deployment.md.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    DJANGO_SETTINGS_MODULE=config.settings.production \
    DJANGO_STATIC_ROOT=/app/staticfiles \
    CONCORD_VAR_DIR=/var/lib/concord
# The processes run as `concord`; what they write goes to /var/lib/concord (a volume).
RUN groupadd --system --gid 10001 concord \
    && useradd --system --uid 10001 --gid concord --home-dir /var/lib/concord \
        --no-create-home --shell /usr/sbin/nologin concord \
    && install -d -o concord -g concord -m 0750 /var/lib/concord \
    && python3 -m venv /opt/venv
WORKDIR /app
ENTRYPOINT ["/app/deploy/docker-entrypoint.sh"]
CMD ["web"]

# The dependencies of pyproject.toml (not the package: the code is run from /app),
# in their own layer, rebuilt only when pyproject.toml changes.
FROM base AS deps
COPY pyproject.toml /tmp/concord/pyproject.toml
RUN --mount=type=secret,id=ca,required=false \
    --mount=type=cache,target=/root/.cache/pip \
    set -eu; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi; \
    python -c 'import tomllib; print("\n".join(tomllib.load(open("/tmp/concord/pyproject.toml", "rb"))["project"]["dependencies"]))' > /tmp/concord/requirements.txt; \
    pip install --progress-bar off -r /tmp/concord/requirements.txt

# The code, its bytecode and its static files (made here, so that no container
# writes them: PYTHONDONTWRITEBYTECODE keeps the processes from trying, and
# without the bytecode every start of a process would compile the project again).
FROM deps AS app
COPY . /app
RUN DJANGO_SETTINGS_MODULE=config.settings.base CONCORD_VAR_DIR=/tmp/concord-build \
        python manage.py collectstatic --noinput --verbosity 0 \
    && rm -rf /tmp/concord-build \
    && python -m compileall -q /app \
    && chmod 0755 /app/deploy/docker-entrypoint.sh

# GPU workers: torch (TORCH_VERSION, from TORCH_INDEX_URL when set, e.g.
# https://download.pytorch.org/whl/cu124; PyPI's Linux wheel is CUDA-enabled),
# then the `gpu` extra (transformers, tokenizers, psutil).
FROM deps AS gpu
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=
RUN --mount=type=secret,id=ca,required=false \
    --mount=type=cache,target=/root/.cache/pip \
    set -eu; \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi; \
    pip install --progress-bar off ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==${TORCH_VERSION}"; \
    python -c 'import tomllib; print("\n".join(tomllib.load(open("/tmp/concord/pyproject.toml", "rb"))["project"]["optional-dependencies"]["gpu"]))' > /tmp/concord/requirements-gpu.txt; \
    pip install --progress-bar off -r /tmp/concord/requirements-gpu.txt
COPY --from=app /app /app
USER concord
CMD ["worker", "gpu"]

# Web server and the default and llm workers (the default target: last).
FROM app AS web
USER concord
EXPOSE 8000

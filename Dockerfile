# syntax=docker/dockerfile:1
#
# endpointslice-operator container image.
#
#   make image        (buildah + skopeo, no Docker: scripts/build_image.sh; an OCI archive)
#   docker build -t localhost/endpointslice-operator:0.1.0 .
#
# Two stages on the same slim Python base: the builder installs the package and its pinned
# dependencies (constraints.txt) into a virtual environment; the final stage copies only that
# environment. No compiler, no pip, no pip cache and no source tree in the final image. The
# process runs as UID 65532 and writes nothing outside /tmp, so the root filesystem can be
# mounted read-only (the Helm chart does, with an emptyDir on /tmp).

ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/venv
COPY pyproject.toml constraints.txt README.md ./
COPY endpointslice_operator/ endpointslice_operator/
# Dependencies resolve within the pinned constraints; pip compiles the bytecode now, because
# nothing can write it at run time. pip and setuptools are not needed to run and are removed.
RUN /opt/venv/bin/pip install --no-cache-dir -c constraints.txt . \
 && /opt/venv/bin/pip uninstall --yes pip setuptools

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="endpointslice-operator" \
      org.opencontainers.image.description="Keeps discovery.k8s.io/v1 EndpointSlices right for the Services that opt in." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/endpointslice-operator/endpointslice-operator" \
      org.opencontainers.image.vendor="endpointslice-operator developers"
# The base image's own pip is not needed either; the non-root user owns nothing.
RUN python -m pip uninstall --yes --no-cache-dir pip setuptools wheel \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --home-dir /tmp --no-create-home \
      --shell /usr/sbin/nologin nonroot
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    TMPDIR=/tmp
WORKDIR /tmp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["endpointslice-operator", "run"]

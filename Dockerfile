# langclass service image.
#
# CPU (default):   docker build -t langclass .
# CUDA:            docker build -t langclass:cuda \
#                    --build-arg BASE_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04 \
#                    --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu126 .
# Offline torch:   podman build -v /opt/wheels:/wheels:ro --build-arg PIP_FIND_LINKS=/wheels \
#                    --build-arg TORCH_INDEX= .      (a CPU wheel in a local folder; bench/container.py)
#
# The install step is the Makefile's (`make install`: a virtual environment in /app/.venv and
# `pip install -c CONSTRAINTS -e '.[EXTRAS]'`), which CI runs on every change; the image pins every
# package (constraints-image.txt; torch's version equal to constraints.txt's) and the index that torch
# comes from differs (the PyTorch CPU or CUDA wheel index).
# Any Debian/Ubuntu base works: without a Python that has venv, the first step installs python3.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

# Build-time only; none of them stays in the image's environment. TORCH_INDEX: pip's extra index for
# torch (empty: none — an unreachable index costs retries on every package). PIP_FIND_LINKS: a folder
# of wheels mounted for the build (e.g. a torch CPU wheel). PIP_CERT: a CA bundle for pip, for a
# network whose proxy re-signs TLS (likewise mounted).
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG PIP_FIND_LINKS
ARG PIP_CERT
ARG EXTRAS=ray
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DEBIAN_FRONTEND=noninteractive

# make (to run the Makefile's install target), curl-free healthcheck via Python; on Debian/CUDA bases
# also Python (ensurepip, not venv, is what Debian's python3 lacks without python3-venv).
RUN apt-get update \
 && apt-get install -y --no-install-recommends make ca-certificates \
 && if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then apt-get install -y --no-install-recommends python3 python3-venv; fi \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# dependency layer first (cached while only the code changes)
COPY pyproject.toml constraints.txt constraints-image.txt Makefile README.md ./
COPY langclass/__init__.py langclass/py.typed langclass/
# an unreachable CPU index makes pip fall back to PyPI's CUDA torch (several GB) without a word: refuse it
RUN PIP_EXTRA_INDEX_URL="${TORCH_INDEX}" make install EXTRAS=${EXTRAS} CONSTRAINTS=constraints-image.txt \
 && case "${TORCH_INDEX}" in */cpu) .venv/bin/python -c "import sys, torch; sys.exit('torch %s is a CUDA build although TORCH_INDEX is the CPU index ${TORCH_INDEX} (unreachable?)' % torch.__version__ if torch.version.cuda else 0)";; esac
COPY . .
RUN PIP_EXTRA_INDEX_URL="${TORCH_INDEX}" make install EXTRAS=${EXTRAS} CONSTRAINTS=constraints-image.txt \
 && useradd --create-home --uid 10001 --shell /usr/sbin/nologin langclass \
 && mkdir -p /data && chown langclass:langclass /data

# declared after the last RUN: a build argument changes the cache key of every RUN below it, and
# CODE_VERSION changes with each commit (the dependency layer above stays cached)
ARG CODE_VERSION=
ENV LANGCLASS_HOST=0.0.0.0 \
    LANGCLASS_PORT=8000 \
    LANGCLASS_DATABASE_URL=sqlite:////data/langclass.db \
    LANGCLASS_CODE_VERSION=${CODE_VERSION} \
    PATH=/app/.venv/bin:${PATH}

USER langclass
VOLUME ["/data"]
EXPOSE 8000
# the port the service listens on: LANGCLASS_PORT (`docker run -e LANGCLASS_PORT=8137 --network host ...`
# moves both the service and this check)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('LANGCLASS_PORT', '8000'), timeout=4)"]

# `serve` applies the migrations, then starts uvicorn on LANGCLASS_HOST:LANGCLASS_PORT (0.0.0.0:8000).
ENTRYPOINT ["langclass"]
CMD ["serve"]

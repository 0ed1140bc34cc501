# langclass service image.
#
# CPU (default):   docker build -t langclass .
# CUDA:            docker build -t langclass:cuda \
#                    --build-arg BASE_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04 \
#                    --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu126 .
#
# The install step is the Makefile's (`make install`: a virtual environment in /app/.venv and
# `pip install -c constraints.txt -e '.[EXTRAS]'`), which CI runs on every change; only the index
# that torch comes from differs (the PyTorch CPU or CUDA wheel index; constraints.txt pins the version).
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ARG EXTRAS=ray
ARG CODE_VERSION=
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_EXTRA_INDEX_URL=${TORCH_INDEX} \
    DEBIAN_FRONTEND=noninteractive

# make (to run the Makefile's install target), curl-free healthcheck via Python; on CUDA bases also Python.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make ca-certificates \
 && if ! python3 -m venv --help >/dev/null 2>&1; then apt-get install -y --no-install-recommends python3 python3-venv; fi \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# dependency layer first (cached while only the code changes)
COPY pyproject.toml constraints.txt Makefile README.md ./
COPY langclass/__init__.py langclass/py.typed langclass/
RUN make install EXTRAS=${EXTRAS}
COPY . .
RUN make install EXTRAS=${EXTRAS} \
 && useradd --create-home --uid 10001 --shell /usr/sbin/nologin langclass \
 && mkdir -p /data && chown langclass:langclass /data

ENV LANGCLASS_HOST=0.0.0.0 \
    LANGCLASS_PORT=8000 \
    LANGCLASS_DATABASE_URL=sqlite:////data/langclass.db \
    LANGCLASS_CODE_VERSION=${CODE_VERSION} \
    PATH=/app/.venv/bin:${PATH}

USER langclass
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# `serve` applies the migrations, then starts uvicorn.
ENTRYPOINT ["langclass"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

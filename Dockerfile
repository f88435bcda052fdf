# tau-adapters evaluation service: `tau serve` on port 8000.
#
#   docker build -t tau-serve .
#   docker run -d -p 8000:8000 --env-file tau.env -v tau-state:/data tau-serve
#
# tau.env holds TAU_SERVE_TOKEN (required) and the model/agent keys (OPENAI_API_KEY...);
# /data holds the runs database, the results files and the benchmark data cache.
# See docs/service.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    TAU_SERVE_STATE_DIR=/data/state \
    XDG_CACHE_HOME=/data/cache

RUN useradd --create-home --uid 10001 --user-group tau \
    && mkdir -p /data/state /data/cache \
    && chown -R tau:tau /data

WORKDIR /app
# The exact versions of uv.lock: first the dependencies alone (a layer that survives source
# edits), then the project itself, not editable and with no dependency resolution of its
# own. Extras: what `tau serve` runs (the service, the hosted-agent adapters, PNG plots);
# not gym or ray.
ARG UV_VERSION=0.13.9
ARG EXTRAS="--extra service --extra dialogflow --extra http --extra a2a --extra ces --extra report"
ENV UV_PROJECT_ENVIRONMENT=/app/.venv \
    VIRTUAL_ENV=/app/.venv \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    PATH=/app/.venv/bin:$PATH
RUN pip install "uv==${UV_VERSION}"
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --locked --no-dev --no-install-project ${EXTRAS}
COPY tau_adapters ./tau_adapters
COPY tau_bench ./tau_bench
COPY adapters ./adapters
RUN uv pip install . --no-deps && rm -rf /app/build

USER tau
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]

CMD ["tau", "serve", "--host", "0.0.0.0", "--port", "8000"]

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
COPY pyproject.toml README.md ./
COPY tau_adapters ./tau_adapters
COPY tau_bench ./tau_bench
COPY adapters ./adapters
RUN pip install . && rm -rf /app/build

USER tau
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]

CMD ["tau", "serve", "--host", "0.0.0.0", "--port", "8000"]

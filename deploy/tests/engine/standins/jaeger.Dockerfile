# Stand-in for jaegertracing/jaeger (v2, all in one): otlp_standin.py's jaeger
# (OTLP in on 4317/4318, spans in memory, the query API's /api/services and
# /api/traces on 16686, /status on 13133) on Debian's Python and python3-grpcio, with wget for
# the compose health check.
FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-grpcio python3-yaml wget \
    && rm -rf /var/lib/apt/lists/*
COPY otlp_standin.py /usr/local/lib/otlp_standin.py
USER 10001
ENTRYPOINT ["python3", "/usr/local/lib/otlp_standin.py", "jaeger"]
EXPOSE 4317 4318 16686 13133

# Stand-in for otel/opentelemetry-collector-contrib: otlp_standin.py's
# collector (OTLP receiver, otlp exporters, health_check extension) on
# Debian's Python and python3-grpcio. Like the
# original, the image's entrypoint is the collector and the command its flags.
FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3-grpcio python3-yaml \
    && rm -rf /var/lib/apt/lists/*
COPY otlp_standin.py /usr/local/lib/otlp_standin.py
USER 10001
ENTRYPOINT ["python3", "/usr/local/lib/otlp_standin.py", "collector"]
CMD ["--config=/etc/otelcol-contrib/config.yaml"]
EXPOSE 4317 4318 13133

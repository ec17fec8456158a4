# Stand-in for redis:7-alpine: Debian bookworm's Redis (7.0) with the official
# image's contract for what compose.yaml uses (redis-server and redis-cli on
# PATH, /data as working directory and volume, `sh` for the health check).
FROM debian:bookworm-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir /data && chown redis:redis /data
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /data
WORKDIR /data
ENTRYPOINT ["docker-entrypoint.sh"]
EXPOSE 6379
CMD ["redis-server"]

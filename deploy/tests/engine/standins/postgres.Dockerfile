# Stand-in for postgres:17-alpine: Debian bookworm's PostgreSQL (15) behind an
# entrypoint with the official image's contract for what compose.yaml uses
# (POSTGRES_USER, POSTGRES_DB, POSTGRES_PASSWORD[_FILE], PGDATA, initdb on an
# empty data volume, password auth from the network, `postgres -c …` commands,
# pg_isready on PATH). Built by deploy/tests/engine/standins.sh.
FROM debian:bookworm-slim
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# No cluster of Debian's own: the entrypoint makes one in PGDATA.
# hadolint ignore=DL3008
RUN mkdir -p /etc/postgresql-common \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
    && apt-get update \
    && apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]

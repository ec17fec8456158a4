# Stand-in for node:<major>-bookworm-slim: Debian bookworm with this machine's
# own Node.js and npm (the build context: bin/node and lib/node_modules/npm),
# where the official image has them. Also the machine's own CA certificates
# (ca/) and npm's global config (etc/npmrc, which points npm at the system CA
# bundle), for a machine whose registry traffic passes a TLS proxy.
FROM debian:bookworm-slim
COPY ca/ /usr/local/share/ca-certificates/
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY etc/ /usr/local/etc/
COPY bin/node /usr/local/bin/node
COPY lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && node --version && npm --version
CMD ["node"]

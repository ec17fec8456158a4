# Stand-in for rust:<version>-slim-bookworm: Debian bookworm with what the
# official slim image adds (gcc, libc6-dev, ca-certificates) and this
# machine's own Rust toolchain (toolchain/ in the build context), laid out as
# the official image has it (RUSTUP_HOME, CARGO_HOME, cargo and rustc on PATH).
# The machine's own CA certificates (ca/, from /usr/local/share/ca-certificates)
# are trusted too, for a machine whose registry traffic passes a TLS proxy.
FROM debian:bookworm-slim
COPY ca/ /usr/local/share/ca-certificates/
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
ARG RUST_VERSION
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    RUST_VERSION=${RUST_VERSION}
COPY toolchain/ /usr/local/rustup/toolchains/${RUST_VERSION}-x86_64-unknown-linux-gnu/
RUN mkdir -p /usr/local/cargo/bin \
    && for tool in /usr/local/rustup/toolchains/*/bin/*; do ln -s "$tool" /usr/local/cargo/bin/; done \
    && cargo --version && rustc --version

# Stand-in for busybox:1.37-musl: Debian bookworm's static busybox (1.35) as
# /bin/busybox with its applets as links, and nothing else.
# KNOWN BAD: this busybox's wget dies with SIGSEGV (exit 139) when given -T
# (a timeout), which every compose health check passes: gateways never turn
# healthy. Found 2026-12-01; a stand-in wget that takes -T is still to do.
FROM debian:bookworm-slim AS files
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends busybox-static \
    && mkdir -p /out/bin \
    && cp /bin/busybox /out/bin/busybox \
    && for applet in $(/bin/busybox --list); do [ "$applet" = busybox ] || ln -s busybox "/out/bin/$applet"; done \
    && rm -rf /var/lib/apt/lists/*

FROM scratch
COPY --from=files /out/ /
CMD ["sh"]

# Stand-in for busybox:1.37-musl: a static busybox built with musl from
# Debian bookworm's busybox source (1.35), as /bin/busybox with its applets as
# links, and nothing else. Debian's own busybox builds leave wget's -T
# (timeout) out, and given -T they die with SIGSEGV: every compose health
# check passes it, so the stand-in is built from source with the applets the
# files use (wget with -T, and sh for its CMD) and busybox's defaults for them.
FROM debian:bookworm-slim AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/sources.list \
    && apt-get update \
    && apt-get install -y --no-install-recommends dpkg-dev gcc make libc6-dev musl-tools bzip2 xz-utils patch \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# hadolint ignore=DL3003
RUN apt-get update && apt-get source --only-source busybox && rm -rf /var/lib/apt/lists/* \
    && cd busybox-1.* \
    && make allnoconfig >/dev/null \
    && for opt in STATIC WGET FEATURE_WGET_TIMEOUT FEATURE_WGET_LONG_OPTIONS LONG_OPTS \
                  ASH SH_IS_ASH ASH_ECHO ASH_TEST BUSYBOX FEATURE_INSTALLER; do \
         sed -i "s/^# CONFIG_${opt} is not set$/CONFIG_${opt}=y/" .config; \
       done \
    && { yes '' || true; } | make oldconfig >/dev/null \
    && make -j"$(nproc)" CC=musl-gcc >/dev/null \
    && mkdir -p /out/bin \
    && cp busybox /out/bin/busybox \
    && { ./busybox wget -q -T 1 -O /dev/null http://127.0.0.1:1/; test $? = 1; } \
    && for applet in $(./busybox --list); do [ "$applet" = busybox ] || ln -s busybox "/out/bin/$applet"; done

FROM scratch
COPY --from=build /out/ /
CMD ["sh"]

# Stand-in for gcr.io/distroless/cc-debian12:nonroot: the files of Debian
# bookworm's base-files, netbase, tzdata, libc6, libgcc-s1, libgomp1,
# libstdc++6, libssl3 and the CA bundle, the users root, nobody and nonroot
# (65532), no shell, no package manager (merged /usr, as Debian 12); user 65532, working directory
# /home/nonroot, as the original's image config.
FROM debian:bookworm-slim AS files
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 libgomp1 tzdata netbase \
    && mkdir -p /out/etc /out/home/nonroot /out/tmp /out/root /out/usr/bin /out/usr/sbin /out/usr/lib /out/usr/lib64 \
    && for d in bin sbin lib lib64; do ln -s "usr/$d" "/out/$d"; done \
    && for pkg in base-files netbase tzdata libc6 libgcc-s1 libgomp1 libstdc++6 libssl3; do \
         dpkg -L "$pkg" | while read -r f; do \
           [ -d "$f" ] && continue; \
           dir="/out$(readlink -f "$(dirname "$f")")"; \
           mkdir -p "$dir" && cp -a "$f" "$dir/" || exit 1; \
         done; \
       done \
    && test -e /out/lib64/ld-linux-x86-64.so.2 \
    && rm -rf /out/usr/share/doc /out/usr/share/man /out/usr/share/lintian /out/usr/share/info \
    && mkdir -p /out/etc/ssl/certs && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
    && printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd \
    && printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' > /out/etc/group \
    && chown 65532:65532 /out/home/nonroot && chmod 700 /out/root && chmod 1777 /out/tmp \
    && rm -rf /var/lib/apt/lists/*

FROM scratch
COPY --from=files /out/ /
USER 65532
WORKDIR /home/nonroot
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

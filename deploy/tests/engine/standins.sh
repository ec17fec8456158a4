#!/usr/bin/env bash
# Makes the images deploy/Dockerfile and deploy/compose.yaml name, without an
# image registry: a Debian base by debootstrap + `docker import`, the others
# built FROM it with Debian's packages (and this machine's own Rust toolchain
# and Node.js, which are newer than Debian's). Each is tagged with the name the
# files use, so both files run unchanged; each carries the label
# org.weft.standin with a hash of its definition, and is rebuilt only when that
# definition changes. An image of that name that is not a stand-in (a real one,
# pulled on a machine with a registry) is left alone and used.
#
# Usage: standins.sh          (sourced by deploy/tests/engine.sh, or run alone)
# Needs: a running engine ($DOCKER), debootstrap, root.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEPLOY="$(cd "$HERE/../.." && pwd)"
DOCKER="${DOCKER:-/usr/bin/docker}"
CACHE="${WEFT_ENGINE_CACHE:-$HOME/.cache/weft-engine}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }
say() { printf 'engine: %s\n' "$*"; }

# A default of deploy/Dockerfile (ARG NAME=value).
dockerfile_arg() { sed -n "s/^ARG $1=//p" "$DEPLOY/Dockerfile" | head -1; }
# The image of a compose service (image: line under `  NAME:`).
compose_image() { awk -v svc="  $1:" '$0 == svc {found=1; next} found && /^    image:/ {print $2; exit}' "$DEPLOY/compose.yaml"; }

# standin_state TAG HASH: "ok" (our stand-in, current), "real" (not ours), "build".
standin_state() {
  local have
  have="$("$DOCKER" image inspect --format '{{ index .Config.Labels "org.weft.standin" }}' "$1" 2>/dev/null)" || { echo build; return; }
  if [ -z "$have" ] || [ "$have" = "<no value>" ]; then echo real
  elif [ "$have" = "$2" ]; then echo ok
  else echo build; fi
}

definition_hash() { cat "$@" | sha256sum | cut -c1-16; }

debian_base() {
  local release tag hash rootfs
  release="$(dockerfile_arg DEBIAN_RELEASE)"
  tag="debian:${release}-slim"
  hash="$(printf 'debootstrap minbase %s %s v1' "$release" "$DEBIAN_MIRROR" | sha256sum | cut -c1-16)"
  case "$(standin_state "$tag" "$hash")" in
    ok) say "$tag: stand-in present"; return ;;
    real) say "$tag: a real image, used as is"; return ;;
  esac
  command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
  rootfs="$CACHE/rootfs-$release"
  rm -rf "$rootfs"
  say "$tag: debootstrap --variant=minbase $release (a few minutes)"
  debootstrap --variant=minbase "$release" "$rootfs" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap of $release failed"; }
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
    "$DEBIAN_MIRROR" "$release" "$DEBIAN_MIRROR" "$release" "$release" >"$rootfs/etc/apt/sources.list"
  # As the official image: no package lists or downloaded packages kept.
  printf 'APT::Install-Recommends "false";\nDPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb || true"; };\n' \
    >"$rootfs/etc/apt/apt.conf.d/docker-clean"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
  tar -C "$rootfs" --numeric-owner -c . \
    | "$DOCKER" import --change 'CMD ["bash"]' --change "LABEL org.weft.standin=$hash" - "$tag" >/dev/null
  rm -rf "$rootfs"
  say "$tag: imported"
}

# standin TAG DOCKERFILE CONTEXT HASH_INPUT... [-- BUILD_ARGS...]
standin() {
  local tag="$1" dockerfile="$2" context="$3" hash
  shift 3
  local inputs=() args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do inputs+=("$1"); shift; done
  [ $# -gt 0 ] && shift && args=("$@")
  hash="$( (cat "$dockerfile" "${inputs[@]}"; printf '%s\n' "${args[@]}") | sha256sum | cut -c1-16)"
  case "$(standin_state "$tag" "$hash")" in
    ok) say "$tag: stand-in present"; return ;;
    real) say "$tag: a real image, used as is"; return ;;
  esac
  say "$tag: building the stand-in ($(basename "$dockerfile"))"
  local log="$CACHE/standin-$(echo "$tag" | tr '/:' '__').log"
  DOCKER_BUILDKIT=1 "$DOCKER" build --network host --label "org.weft.standin=$hash" \
    "${args[@]/#/--build-arg=}" -f "$dockerfile" -t "$tag" "$context" >"$log" 2>&1 \
    || { tail -30 "$log" >&2; die "building the stand-in $tag failed (log: $log)"; }
}

rust_image() {
  local want sysroot version ctx
  want="$(dockerfile_arg RUST_VERSION)"
  command -v rustc >/dev/null || die "rustc is not on PATH: the Rust stand-in copies this machine's toolchain"
  version="$(rustc --version | awk '{print $2}')"
  case "$version" in "$want" | "$want".*) ;; *) die "this machine's rustc is $version, deploy/Dockerfile wants RUST_VERSION=$want" ;; esac
  sysroot="$(rustc --print sysroot)"
  ctx="$CACHE/rust-context"
  rm -rf "$ctx" && mkdir -p "$ctx"
  machine_ca "$ctx/ca"
  # Hard links: the toolchain is 1.5 GB and stays where it is.
  cp -al "$sysroot" "$ctx/toolchain" 2>/dev/null || cp -a "$sysroot" "$ctx/toolchain"
  standin "rust:${want}-slim-$(dockerfile_arg DEBIAN_RELEASE)" "$HERE/standins/rust.Dockerfile" "$ctx" \
    <(rustc -vV; cargo --version; cat "$ctx"/ca/*) -- "RUST_VERSION=$version"
  rm -rf "$ctx"
}

# The CA certificates this machine adds to Debian's (a TLS-inspecting proxy's).
machine_ca() {
  mkdir -p "$1"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$1/"
  fi
}

node_image() {
  local want node npm ctx
  want="$(dockerfile_arg NODE_VERSION)"
  node="$(command -v node)" || die "node is not on PATH: the Node stand-in copies this machine's Node.js"
  [ "$(node --version | sed 's/^v//; s/\..*//')" = "$want" ] \
    || die "this machine's node is $(node --version), deploy/Dockerfile wants NODE_VERSION=$want"
  npm="$(dirname "$(readlink -f "$(command -v npm)")")/.."
  ctx="$CACHE/node-context"
  rm -rf "$ctx" && mkdir -p "$ctx/bin" "$ctx/lib/node_modules" "$ctx/etc"
  machine_ca "$ctx/ca"
  cp -L "$node" "$ctx/bin/node"
  cp -a "$(readlink -f "$npm")" "$ctx/lib/node_modules/npm"
  # npm's global config on this machine (its CA bundle, say), where npm looks in the image.
  touch "$ctx/etc/npmrc"
  [ ! -f "$(npm config get globalconfig)" ] || cp "$(npm config get globalconfig)" "$ctx/etc/npmrc"
  standin "node:${want}-$(dockerfile_arg DEBIAN_RELEASE)-slim" "$HERE/standins/node.Dockerfile" "$ctx" \
    <(node --version; npm --version; cat "$ctx"/ca/* "$ctx/etc/npmrc")
  rm -rf "$ctx"
}

build_standins() {
  mkdir -p "$CACHE"
  local s="$HERE/standins"
  debian_base
  rust_image
  node_image
  standin "$(dockerfile_arg RUNTIME_IMAGE)" "$s/distroless-cc.Dockerfile" "$s"
  standin "$(dockerfile_arg BUSYBOX_IMAGE)" "$s/busybox.Dockerfile" "$s"
  standin "$(compose_image postgres)" "$s/postgres.Dockerfile" "$s" "$s/postgres-entrypoint.sh"
  standin "$(compose_image redis)" "$s/redis.Dockerfile" "$s" "$s/redis-entrypoint.sh"
  standin "$(compose_image nginx)" "$s/nginx.Dockerfile" "$s"
  standin "$(compose_image otel-collector)" "$s/otel-collector.Dockerfile" "$s" "$s/otlp_standin.py"
  standin "$(compose_image jaeger)" "$s/jaeger.Dockerfile" "$s" "$s/otlp_standin.py"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  build_standins
fi

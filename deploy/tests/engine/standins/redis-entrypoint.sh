#!/bin/sh
# The stand-in redis image's entrypoint: `redis-server …` (or only its
# options) runs as the redis user in /data; any other command runs as given.
set -e
case "$1" in -* | *.conf) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi
exec "$@"

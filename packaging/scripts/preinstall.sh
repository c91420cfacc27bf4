#!/bin/sh
# Before install or upgrade (deb preinst: install|upgrade; rpm %pre: 1|2): the service's system
# user, with no login and no home of its own but the state directory.
set -e
if ! getent group otelcol-iclens >/dev/null; then
    groupadd --system otelcol-iclens
fi
if ! getent passwd otelcol-iclens >/dev/null; then
    nologin=$(command -v nologin || echo /bin/false)
    useradd --system --gid otelcol-iclens --no-create-home --home-dir /var/lib/otelcol-iclens \
        --shell "$nologin" --comment "otelcol-iclens collector" otelcol-iclens
fi

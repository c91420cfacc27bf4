#!/bin/sh
# After install or upgrade (deb postinst: configure [old-version]; rpm %post: 1 install, 2 upgrade).
set -e
# The state directory (persistent queue, write-ahead log); systemd's StateDirectory= keeps it, and
# it is there for a run outside systemd too.
install -d -o otelcol-iclens -g otelcol-iclens -m 0700 /var/lib/otelcol-iclens
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    first=no
    case "$1" in
        configure) [ -z "$2" ] && first=yes ;;
        1) first=yes ;;
    esac
    if [ "$first" = yes ]; then
        # A node agent: on at boot and now. The default configuration serves on loopback only.
        systemctl enable --now otelcol-iclens.service || true
    else
        systemctl try-restart otelcol-iclens.service || true
    fi
fi

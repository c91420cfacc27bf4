#!/bin/sh
# Before removal (deb prerm: remove|upgrade|deconfigure; rpm %preun: 0 erase, 1 upgrade): stop the
# service unless this is an upgrade, which restarts it afterwards.
set -e
case "$1" in
    remove|0)
        if [ -d /run/systemd/system ]; then
            systemctl disable --now otelcol-iclens.service || true
        fi
        ;;
esac

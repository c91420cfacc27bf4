#!/bin/sh
# After removal (deb postrm: remove|purge|upgrade|...; rpm %postun: 0 erase, 1 upgrade).
set -e
case "$1" in
    purge)
        # dpkg --purge: the queue's data and the user go with the package (dpkg removes the
        # configuration files itself). A plain remove keeps both.
        rm -rf /var/lib/otelcol-iclens
        if getent passwd otelcol-iclens >/dev/null; then userdel otelcol-iclens; fi
        if getent group otelcol-iclens >/dev/null; then groupdel otelcol-iclens; fi
        ;;
esac
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi

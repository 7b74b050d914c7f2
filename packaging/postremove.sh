#!/bin/sh
# gpuprobe post-removal: tell systemd its units are gone. dpkg --purge (and
# rpm -e, for unmodified files) removes the configuration files itself; the
# directory is removed here once empty.
#   deb: postrm remove | purge | upgrade ...
#   rpm: %postun with $1 = 0 (erase) or 1 (upgrade)
set -e

case "$1" in
  remove | purge | 0)
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      systemctl daemon-reload >/dev/null 2>&1 || true
    fi
    ;;
esac
if [ "$1" = purge ]; then
  rmdir /etc/gpuprobe 2>/dev/null || true
fi
exit 0

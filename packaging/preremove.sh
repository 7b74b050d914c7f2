#!/bin/sh
# gpuprobe pre-removal: on removal (not upgrade) stop the daemon and drop the
# enablement links the admin made, so nothing dangles in /etc/systemd once
# the units are gone.
#   deb: prerm remove | upgrade NEW-VERSION | deconfigure ...
#   rpm: %preun with $1 = 0 (erase) or 1 (upgrade)
set -e

case "$1" in
  remove | 0) ;;
  *) exit 0 ;;
esac
if command -v systemctl >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    systemctl stop gpuprobe.socket gpuprobe.service >/dev/null 2>&1 || true
  fi
  # disable works offline too (it only removes symlinks).
  systemctl disable gpuprobe.socket gpuprobe.service >/dev/null 2>&1 || true
fi
exit 0

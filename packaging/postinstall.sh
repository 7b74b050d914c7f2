#!/bin/sh
# gpuprobe post-install. Enables nothing: whether the daemon runs on a node
# is the admin's call (systemctl enable --now gpuprobe, or gpuprobe.socket).
# On an upgrade a running daemon is restarted onto the new binary; a stopped
# one stays stopped.
#   deb: postinst configure [OLD-VERSION]   (OLD-VERSION set on upgrade)
#   rpm: %post with $1 = 1 (install) or 2 (upgrade)
set -e

upgrade=false
case "$1" in
  configure) [ -n "${2:-}" ] && upgrade=true ;;
  abort-upgrade | abort-remove | abort-deconfigure) exit 0 ;;
  2) upgrade=true ;;
esac

# Only talk to systemd when it is the running init (not in a chroot, an
# image build or a container without it).
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload >/dev/null 2>&1 || true
  if [ "$upgrade" = true ]; then
    # try-restart: restart only if running.
    systemctl try-restart gpuprobe.service >/dev/null 2>&1 || true
  fi
fi
exit 0

#!/usr/bin/env bash
# Sourced by the other scripts: apt_install PKG... installs Debian packages
# with one `apt-get update` per machine session (a stamp in /tmp remembers it),
# then `apt-get install -y`. Needs root.
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    echo "apt: need root to install $*; run: apt-get install -y $*" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  local stamp=/tmp/.gpuprobe-apt-updated
  if [ ! -e "$stamp" ]; then
    apt-get update -qq && touch "$stamp"
  fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

#!/usr/bin/env bash
# Installs what the build and the test suite need on Debian/Ubuntu, only when
# missing: gcc for go-nvml's cgo, curl and python3 for the e2e scripts, and
# podman with runc for the container e2e (Slurm, Prometheus and systemd are
# installed by their own scripts). One
# apt-get update, then apt-get install -y.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v git >/dev/null 2>&1 || need+=(git)
command -v curl >/dev/null 2>&1 || need+=(curl ca-certificates)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)

if ((${#need[@]})); then
  echo "deps: installing ${need[*]}"
  # shellcheck source=scripts/apt.sh
  . "$(dirname "$0")/apt.sh"
  apt_install "${need[@]}"
fi
command -v go >/dev/null 2>&1 || { echo "deps: Go is not installed (https://go.dev/dl/, 1.26 or later)" >&2; exit 1; }

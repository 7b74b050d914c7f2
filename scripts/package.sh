#!/usr/bin/env bash
# package.sh ARCH...: build gpuprobe's .deb and .rpm for each Linux ARCH
# (amd64, arm64) into dist/. Run through `make package` (all arches) or
# `make package-ARCH`, which export the version stamp:
#   VERSION      what --version prints (the Makefile's git-derived version)
#   PKG_VERSION  the same, spelled for dpkg/rpm ordering
#   LDFLAGS      the -X stamps of prometheus/common/version
# cgo is on (go-nvml): a foreign ARCH is built with Debian's cross compiler
# (gcc-aarch64-linux-gnu / gcc-x86-64-linux-gnu), installed here if missing.
# nfpm is a pinned Go tool fetched through the module proxy (NFPM_VERSION);
# its dependencies never enter gpuprobe's go.mod.
set -euo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
NFPM_VERSION=${NFPM_VERSION:-v2.45.0}
: "${VERSION:?run through make package}" "${PKG_VERSION:?run through make package}" "${LDFLAGS:?run through make package}"
[ $# -gt 0 ] || set -- amd64 arm64
export CGO_ENABLED=1
export CGO_CFLAGS=${CGO_CFLAGS:-"-O2 -g -Wno-deprecated-declarations"}
host=$("$GO" env GOHOSTARCH)

cross_cc() {
  case $1 in
    amd64) echo x86_64-linux-gnu-gcc gcc-x86-64-linux-gnu libc6-dev-amd64-cross ;;
    arm64) echo aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu libc6-dev-arm64-cross ;;
    *) echo "package.sh: unsupported architecture $1 (amd64, arm64)" >&2; return 1 ;;
  esac
}

build() { # ARCH CC
  mkdir -p "dist/linux-$1"
  echo "package.sh: building linux/$1 with $2" >&2
  CC=$2 GOOS=linux GOARCH=$1 "$GO" build -trimpath -ldflags "$LDFLAGS" -o "dist/linux-$1/gpuprobe" ./cmd/gpuprobe
}

mkdir -p dist/stage
# Generated once per run, from the host's build: the unit with the packaged
# binary's path, the man page and the completions (kingpin writes them).
build "$host" "${CC:-cc}"
cp "dist/linux-$host/gpuprobe" dist/stage/gpuprobe-host
sed 's|^ExecStart=/usr/local/bin/gpuprobe |ExecStart=/usr/bin/gpuprobe |' systemd/gpuprobe.service >dist/stage/gpuprobe.service
grep -q '^ExecStart=/usr/bin/gpuprobe ' dist/stage/gpuprobe.service || { echo "package.sh: ExecStart not rewritten" >&2; exit 1; }
# kingpin puts the multi-line --version text in .TH; man wants one line.
dist/stage/gpuprobe-host --help-man |
  awk -v v="$VERSION" 'NR == 1 { print ".TH gpuprobe 1 \"\" \"gpuprobe " v "\" \"gpuprobe manual\""; skip = 1; next }
       skip && /^\.SH/ { skip = 0 } !skip' | gzip -9n >dist/stage/gpuprobe.1.gz
# The contrib Slurm scripts default to /usr/local/bin/gpuprobe (a hand
# install); the packaged copies default to the packaged binary.
mkdir -p dist/stage/slurm
for f in contrib/slurm/*; do
  sed 's|^GPUPROBE=${GPUPROBE:-/usr/local/bin/gpuprobe}|GPUPROBE=${GPUPROBE:-/usr/bin/gpuprobe}|' "$f" >"dist/stage/slurm/${f##*/}"
done
grep -q 'GPUPROBE:-/usr/bin/gpuprobe' dist/stage/slurm/healthcheck.sh || { echo "package.sh: healthcheck.sh default binary not rewritten" >&2; exit 1; }
dist/stage/gpuprobe-host --completion-script-bash >dist/stage/gpuprobe.bash
dist/stage/gpuprobe-host --completion-script-zsh >dist/stage/_gpuprobe

for arch in "$@"; do
  read -r cc pkg libc < <(cross_cc "$arch")
  if [ "$arch" = "$host" ]; then
    cc=${CC:-cc}
  elif ! command -v "$cc" >/dev/null; then
    echo "package.sh: $cc missing: installing $pkg" >&2
    # shellcheck source=scripts/apt.sh
    . scripts/apt.sh
    apt_install "$pkg" "$libc"
  fi
  [ "$arch" = "$host" ] || build "$arch" "$cc"
  # A foreign binary is run once where qemu-user is installed (Debian's
  # qemu-user; not installed here: the packages build without it).
  if [ "$arch" = arm64 ] && [ "$host" != arm64 ] && command -v qemu-aarch64 >/dev/null; then
    qemu-aarch64 -L /usr/aarch64-linux-gnu "dist/linux-$arch/gpuprobe" --version 2>&1 | grep -qF "version $VERSION " ||
      { echo "package.sh: the arm64 binary does not run under qemu-aarch64" >&2; exit 1; }
    echo "package.sh: arm64 binary runs under qemu-aarch64 (--version: $VERSION)" >&2
  fi
  # nfpm expands no variables in contents' src: write the config per arch.
  sed -e "s|\${GOARCH}|$arch|g" -e "s|\${PKG_VERSION}|$PKG_VERSION|g" packaging/nfpm.yaml >"dist/stage/nfpm-$arch.yaml"
  for fmt in deb rpm; do
    NFPM_VERSION=$NFPM_VERSION bash scripts/nfpm.sh run \
      package --config "dist/stage/nfpm-$arch.yaml" --packager "$fmt" --target dist/ >&2
  done
done
ls -l dist/*.deb dist/*.rpm

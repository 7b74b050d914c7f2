#!/usr/bin/env bash
# package-test.sh: the amd64 .deb on this Debian machine, as an admin meets it
# (run through `make test-package`, which exports the version stamp). Needs
# root (dpkg).
#
#   1. builds the .deb (scripts/package.sh amd64) and records a file listing
#      of /etc, /usr, /opt and /var/lib/systemd;
#   2. dpkg -i: every path dpkg -L lists exists; /etc/default/gpuprobe and
#      /etc/gpuprobe/config.yml are conffiles; `gpuprobe --version` prints the
#      Makefile's version; systemd-analyze verify prints nothing for the
#      installed gpuprobe.service and gpuprobe.socket; the example config
#      loads, commented and uncommented; the packaged Slurm scripts point at
#      /usr/bin/gpuprobe;
#   3. post-install enabled nothing (no symlink under /etc/systemd/system,
#      no enable/start in the systemctl calls it made) and only reloaded;
#   4. an upgrade to a newer version try-restarts the service (restarts it
#      only if it runs) and keeps an edited /etc/default/gpuprobe;
#   5. dpkg --purge removes every path dpkg -L listed, and the file listing
#      afterwards equals the one before (paths naming gpuprobe, so packages
#      other jobs install meanwhile do not count).
# systemctl calls are observed through a stub on PATH that logs them; where
# systemd is not PID 1 (containers, CI VMs) /run/systemd/system is created for
# the test so the maintainer scripts take their "systemd running" branch, and
# removed again. One PASS/FAIL line per assertion; exit 1 on any failure.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
GO=${GO:-go}
# shellcheck source=scripts/e2e-lib.sh
. scripts/e2e-lib.sh
e2e_init package-test
: "${VERSION:?run through make test-package}" "${PKG_VERSION:?run through make test-package}" "${LDFLAGS:?run through make test-package}"
[ "$(id -u)" = 0 ] || die "needs root (dpkg -i)"
command -v dpkg >/dev/null || die "not a Debian system (no dpkg)"
command -v systemd-analyze >/dev/null || { . scripts/apt.sh; apt_install systemd || die "could not install systemd"; }
if dpkg -s gpuprobe >/dev/null 2>&1; then die "gpuprobe is already installed here; remove it first (dpkg --purge gpuprobe)"; fi

made_run_systemd=false
cleanup_pkg() {
  dpkg --purge gpuprobe >/dev/null 2>&1 || true
  if $made_run_systemd; then rmdir /run/systemd/system 2>/dev/null; fi
  e2e_cleanup
}
trap cleanup_pkg EXIT

listing() { find /etc /usr /opt /var/lib/systemd -xdev 2>/dev/null | grep -i gpuprobe | sort; }

log "building the amd64 package ($PKG_VERSION)"
rm -f dist/gpuprobe_*_amd64.deb dist/gpuprobe-*.x86_64.rpm # a stale .rpm from an earlier version would be the one compared
bash scripts/package.sh amd64 >"$W/build.log" 2>&1 || die "package.sh amd64 failed: $(tail -5 "$W/build.log")"
DEB=$(ls dist/gpuprobe_*_amd64.deb) || die "no .deb in dist/"
pass "built $DEB ($(stat -c %s "$DEB") bytes)"
listing >"$W/before.txt"

# The .rpm built beside it: the same files (zsh completion where Fedora/RHEL
# look for it), the same two config files, the same maintainer scripts.
RPM=$(ls dist/gpuprobe-*.x86_64.rpm 2>/dev/null | head -1)
command -v rpm >/dev/null || { . scripts/apt.sh; apt_install rpm || fail "could not install rpm to inspect the .rpm"; }
if [ -n "$RPM" ] && command -v rpm >/dev/null; then
  dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {sub(/^\./, "", $6); print $6}' | sed 's|/usr/share/zsh/vendor-completions/|/usr/share/zsh/site-functions/|' | sort >"$W/deb-files.txt"
  rpm -qpl "$RPM" 2>/dev/null | sort >"$W/rpm-files.txt"
  if diff "$W/deb-files.txt" "$W/rpm-files.txt" >"$W/pkgdiff.txt"; then pass "the .rpm holds the same $(wc -l <"$W/rpm-files.txt") files"; else fail ".rpm and .deb differ: $(tr '\n' ' ' <"$W/pkgdiff.txt")"; fi
  [ "$(rpm -qpc "$RPM" 2>/dev/null | sort | tr '\n' ' ')" = "/etc/default/gpuprobe /etc/gpuprobe/config.yml " ] && pass ".rpm config files: /etc/default/gpuprobe /etc/gpuprobe/config.yml" || fail ".rpm config files: $(rpm -qpc "$RPM" | tr '\n' ' ')"
  rpm -qp --scripts "$RPM" 2>/dev/null | grep -q 'try-restart gpuprobe.service' && pass ".rpm post-install try-restarts on upgrade" || fail ".rpm scripts lack the upgrade restart"
else
  fail "no .rpm built beside the .deb, or no rpm tool to read it"
fi

# systemctl stub: log every call, succeed.
mkdir -p "$W/bin"
printf '#!/bin/sh\necho "$*" >>%s/systemctl.log\nexit 0\n' "$W" >"$W/bin/systemctl"
chmod 0755 "$W/bin/systemctl"
if [ ! -d /run/systemd/system ]; then mkdir -p /run/systemd/system && made_run_systemd=true; fi
dpkg_() { PATH="$W/bin:$PATH" dpkg "$@"; }

# --- install -------------------------------------------------------------------
dpkg_ -i "$DEB" >"$W/install.log" 2>&1 || die "dpkg -i failed: $(tail -5 "$W/install.log")"
pass "dpkg -i $DEB"
dpkg -L gpuprobe | sort >"$W/owned.txt"
missing=0
while read -r p; do [ -e "$p" ] || { fail "dpkg -L lists $p but it is not there"; missing=1; }; done <"$W/owned.txt"
[ $missing = 0 ] && pass "all $(wc -l <"$W/owned.txt") paths dpkg -L lists exist"
for f in /usr/bin/gpuprobe /usr/lib/systemd/system/gpuprobe.service /usr/lib/systemd/system/gpuprobe.socket \
  /etc/default/gpuprobe /etc/gpuprobe/config.yml /usr/share/gpuprobe/prometheus/gpuprobe.rules.yml \
  /usr/share/gpuprobe/grafana/gpuprobe-dashboard.json /usr/share/gpuprobe/slurm/healthcheck.sh \
  /usr/share/man/man1/gpuprobe.1.gz /usr/share/bash-completion/completions/gpuprobe; do
  grep -qxF "$f" "$W/owned.txt" || fail "package lacks $f"
done
conf=$(dpkg-query -W -f='${Conffiles}' gpuprobe | awk '{print $1}' | sort | tr '\n' ' ')
[ "$conf" = "/etc/default/gpuprobe /etc/gpuprobe/config.yml " ] && pass "conffiles: $conf" || fail "conffiles: '$conf'"

out=$(/usr/bin/gpuprobe --version 2>&1)
case $out in
  *"version $VERSION "*) pass "gpuprobe --version: $(echo "$out" | head -1)" ;;
  *) fail "gpuprobe --version does not say $VERSION: $out" ;;
esac
for u in gpuprobe.service gpuprobe.socket; do
  v=$(systemd-analyze verify --man=no "/usr/lib/systemd/system/$u" 2>&1)
  [ -z "$v" ] && pass "systemd-analyze verify $u: clean" || fail "systemd-analyze verify $u: $v"
done
grep -q '^ExecStart=/usr/bin/gpuprobe serve ' /usr/lib/systemd/system/gpuprobe.service && pass "unit runs /usr/bin/gpuprobe" || fail "unit ExecStart is not /usr/bin/gpuprobe"
grep -q 'GPUPROBE:-/usr/bin/gpuprobe' /usr/share/gpuprobe/slurm/healthcheck.sh && pass "Slurm health check defaults to /usr/bin/gpuprobe" || fail "healthcheck.sh does not default to /usr/bin/gpuprobe"
zcat /usr/share/man/man1/gpuprobe.1.gz | head -1 | grep -q "^\.TH gpuprobe 1 .*$VERSION" && pass "man page header names $VERSION" || fail "man page header: $(zcat /usr/share/man/man1/gpuprobe.1.gz | head -1)"
bash -n /usr/share/bash-completion/completions/gpuprobe && pass "bash completion parses" || fail "bash completion does not parse"
for cfg in plain uncommented; do
  f=/etc/gpuprobe/config.yml
  if [ $cfg = uncommented ]; then sed -E 's/^#([a-z_]+:|  [a-z_]+:)/\1/; /^#/d' /etc/gpuprobe/config.yml >"$W/config.yml"; f=$W/config.yml; fi
  /usr/bin/gpuprobe check --simulate dgx-h100 --config "$f" --checks gpu >"$W/check.out" 2>&1
  rc=$?
  [ $rc = 0 ] && pass "example config ($cfg) loads; check exit 0" || fail "example config ($cfg): exit $rc: $(tail -3 "$W/check.out")"
done

# --- post-install enabled nothing --------------------------------------------
links=$(find /etc/systemd/system -name 'gpuprobe*' 2>/dev/null)
[ -z "$links" ] && pass "nothing enabled (no gpuprobe link under /etc/systemd/system)" || fail "post-install enabled units: $links"
calls=$(cat "$W/systemctl.log" 2>/dev/null | tr '\n' ';')
[ "$calls" = "daemon-reload;" ] && pass "post-install only ran systemctl daemon-reload" || fail "post-install systemctl calls: '$calls'"

# --- upgrade -------------------------------------------------------------------
echo 'GPUPROBE_ARGS="--web.listen-address=127.0.0.1:10495"  # edited by the admin' >/etc/default/gpuprobe
: >"$W/systemctl.log"
NEXT="${PKG_VERSION}.1"
(export PKG_VERSION=$NEXT && sed -e "s|\${GOARCH}|amd64|g" -e "s|\${PKG_VERSION}|$NEXT|g" packaging/nfpm.yaml >dist/stage/nfpm-upgrade.yaml &&
  bash scripts/nfpm.sh run package --config dist/stage/nfpm-upgrade.yaml --packager deb --target "$W/" >>"$W/build.log" 2>&1) ||
  die "building the upgrade package failed: $(tail -3 "$W/build.log")"
dpkg --compare-versions "$NEXT" gt "$PKG_VERSION" || fail "$NEXT does not sort after $PKG_VERSION"
dpkg_ --force-confold -i "$W"/gpuprobe_*.deb >"$W/upgrade.log" 2>&1 || die "upgrade failed: $(tail -5 "$W/upgrade.log")"
[ "$(dpkg-query -W -f='${Version}' gpuprobe)" = "$NEXT-1" ] && pass "upgraded to $NEXT-1" || fail "version after upgrade: $(dpkg-query -W -f='${Version}' gpuprobe)"
calls=$(tr '\n' ';' <"$W/systemctl.log")
case $calls in
  *"try-restart gpuprobe.service"*) pass "upgrade try-restarted the service (systemctl: $calls)" ;;
  *) fail "upgrade did not restart a running service (systemctl: '$calls')" ;;
esac
case $calls in *enable* | *" start"* | "start"*) fail "upgrade enabled or started something: $calls" ;; esac
grep -q 'edited by the admin' /etc/default/gpuprobe && pass "upgrade kept the edited /etc/default/gpuprobe" || fail "upgrade overwrote /etc/default/gpuprobe"

# --- purge ---------------------------------------------------------------------
dpkg -L gpuprobe | sort >"$W/owned.txt"
: >"$W/systemctl.log"
dpkg_ --purge gpuprobe >"$W/purge.log" 2>&1 || die "dpkg --purge failed: $(tail -5 "$W/purge.log")"
pass "dpkg --purge gpuprobe"
grep -q "disable gpuprobe.socket gpuprobe.service" "$W/systemctl.log" && pass "removal disabled the units" || fail "removal did not disable the units: $(tr '\n' ';' <"$W/systemctl.log")"
left=0
while read -r p; do
  if [ -e "$p" ] && ! grep -qxF "$p" "$W/before.txt"; then
    case $p in /etc | /usr | /usr/* | /etc/default) [ -d "$p" ] && [ "${p#*gpuprobe}" = "$p" ] && continue ;; esac
    fail "left behind: $p"
    left=1
  fi
done <"$W/owned.txt"
[ $left = 0 ] && pass "every path dpkg -L listed is gone (shared directories aside)"
listing >"$W/after.txt"
if diff "$W/before.txt" "$W/after.txt" >"$W/diff.txt"; then
  pass "file listing after purge equals the one before ($(wc -l <"$W/after.txt") gpuprobe paths either way)"
else
  fail "file listing changed: $(tr '\n' ' ' <"$W/diff.txt")"
fi

[ "$FAILS" -eq 0 ] || exit 1
log "all package checks passed"

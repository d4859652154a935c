#!/usr/bin/env bash
# Checks the systemd units in systemd/ without a running systemd:
#  - `make units` renders them (no @placeholder@ left);
#  - `systemd-analyze verify` accepts the system and the user units, and an
#    instance of the component template mediator-component@.service, with no
#    warning at all (it exits 0 on unknown keys and bad values and only
#    prints, so any stderr output is a failure), and it does catch a bad unit;
#  - the units keep what mediatord relies on (FileDescriptorName=mediator,
#    Type=notify, SWIFT_BACKTRACE=enable=no) and none of the settings that were
#    tried and break it (see docs/systemd.md);
#  - `systemd-analyze security --offline=true` rates the system service and a
#    component instance OK or better (exposure below 5.0; figures printed);
#  - `make install` into a DESTDIR puts the binaries, units, docs, man pages
#    and shell completion in place, and `make uninstall` leaves no file behind.
# Needs make and systemd-analyze (package systemd), and the binaries of
# `swift build` (the man pages and completion come from their help). The
# last line is "N passed, M failed"; the exit status is non-zero when
# anything failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "verify-units: PASS $1"; }
fail() { failed=$((failed + 1)); echo "verify-units: FAIL $1"; [ $# -gt 1 ] && printf '%s\n' "${2%$'\n'}" | sed 's/^/    /'; }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

for tool in make systemd-analyze sed; do
  if ! command -v "$tool" >/dev/null; then
    fail "tools" "$tool not found (apt-get install -y make systemd)"
    finish
  fi
done
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat LC_ALL=C.UTF-8

tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-units.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# verify checks that ExecStart's program exists and is executable: use a built
# mediatord when there is one, else a stand-in.
bindir=
for d in "${MEDIATORD_BINDIR:-}" "$top/.build/release" "$top/.build/debug"; do
  if [ -n "$d" ] && [ -x "$d/mediatord" ]; then bindir=$d; break; fi
done
if [ -z "$bindir" ]; then
  bindir=$tmp/bin
  mkdir -p "$bindir"
  printf '#!/bin/sh\nexit 0\n' >"$bindir/mediatord"
  chmod +x "$bindir/mediatord"
fi
echo "verify-units: ExecStart uses $bindir/mediatord"
# The component template runs LIBEXECDIR/mediator/components/%i: a stand-in
# component for the instance checked below.
libexecdir=$tmp/libexec
mkdir -p "$libexecdir/mediator/components"
printf '#!/bin/sh\nexit 0\n' >"$libexecdir/mediator/components/Notes"
chmod +x "$libexecdir/mediator/components/Notes"

stage=$tmp/stage
sysdir=$stage/system
userdir=$stage/user
if out=$(make -s --no-print-directory units DESTDIR="$stage" BINDIR="$bindir" LIBEXECDIR="$libexecdir" DOCDIR="$top/docs" \
      SYSTEMDSYSTEMUNITDIR=/system SYSTEMDUSERUNITDIR=/user 2>&1) \
    && [ -f "$sysdir/mediatord.service" ] && [ -f "$userdir/mediatord.service" ] \
    && [ -f "$sysdir/mediator-component@.service" ]; then
  left=$(grep -n '@[a-z_]*@' "$sysdir"/* "$userdir"/*)
  if [ -z "$left" ]; then pass "make units renders 5 units"; else fail "make units left placeholders" "$left"; fi
else
  fail "make units" "$out"
  finish
fi

# Runs systemd-analyze; passes only with exit status 0 and nothing on stderr.
# $1: name of the check, then the arguments.
analyze_clean() {
  local name=$1; shift
  local err rc
  err=$( { systemd-analyze "$@" >"$tmp/out"; } 2>&1 )
  rc=$?
  if [ $rc -eq 0 ] && [ -z "$err" ]; then
    pass "$name"
  else
    fail "$name (exit $rc)" "$err$(cat "$tmp/out")"
  fi
}

analyze_clean "systemd-analyze verify: system mediatord.socket + mediatord.service" \
  verify --no-pager "$sysdir/mediatord.socket" "$sysdir/mediatord.service"

# A template is verified through an instance: a link named like one.
mkdir "$tmp/instance"
ln -s "$sysdir/mediator-component@.service" "$tmp/instance/mediator-component@Notes.service"
analyze_clean "systemd-analyze verify: mediator-component@Notes.service (the template's instance)" \
  verify --no-pager "$tmp/instance/mediator-component@Notes.service" "$sysdir/mediatord.socket"

# A user manager's view needs XDG_RUNTIME_DIR (%t); no user manager has to run.
mkdir -m 0700 "$tmp/xdg"
export XDG_RUNTIME_DIR=$tmp/xdg
analyze_clean "systemd-analyze --user verify: user mediatord.socket + mediatord.service" \
  --user verify --no-pager "$userdir/mediatord.socket" "$userdir/mediatord.service"

# The check above must be able to fail: a unit with an unknown key and a bad
# value still exits 0 on some versions, but it must print something.
mkdir "$tmp/bad"
printf '[Service]\nType=notify\nExecStart=%s/mediatord\nNoSuchKey=1\nWatchdogSec=soon\n' "$bindir" >"$tmp/bad/bad.service"
err=$(systemd-analyze verify --no-pager "$tmp/bad/bad.service" 2>&1 >/dev/null)
if printf '%s' "$err" | grep -q 'NoSuchKey' && printf '%s' "$err" | grep -q 'soon'; then
  pass "systemd-analyze verify reports an unknown key and a bad value"
else
  fail "systemd-analyze verify did not report the broken unit" "$err"
fi

# What mediatord relies on, and settings that were tried and break it.
problems=
need() { grep -q -x -e "$2" "$1" || problems+="$(basename "$(dirname "$1")")/$(basename "$1"): missing $2"$'\n'; }
forbid() { grep -q -e "$2" "$1" && problems+="$(basename "$(dirname "$1")")/$(basename "$1"): has $2 ($3)"$'\n'; }
for d in "$sysdir" "$userdir"; do
  need "$d/mediatord.socket" 'FileDescriptorName=mediator'
  need "$d/mediatord.service" 'Type=notify'
  need "$d/mediatord.service" 'Environment=SWIFT_BACKTRACE=enable=no'
  need "$d/mediatord.service" 'Requires=mediatord.socket'
  need "$d/mediatord.service" "ExecStart=$bindir/mediatord.*--log-target journal.*"
  # A crash keeps the connections (issue 28): each is stored in the fd store.
  need "$d/mediatord.service" "ExecStart=$bindir/mediatord.* --fd-store.*"
  need "$d/mediatord.service" 'FileDescriptorStoreMax=[1-9][0-9]*'
  # Managed components survive a restart; the daemon ends them at a stop (docs/systemd.md).
  need "$d/mediatord.service" 'KillMode=process'
done
# The system service owns /run/mediator but must never delete it (the socket
# lives there), and must not be DynamicUser (a preserved runtime directory
# would move to /run/private, mode 0700, out of every other user's reach).
need "$sysdir/mediatord.service" 'RuntimeDirectory=mediator'
need "$sysdir/mediatord.service" 'RuntimeDirectoryMode=0755'
need "$sysdir/mediatord.service" 'RuntimeDirectoryPreserve=yes'
need "$sysdir/mediatord.service" 'User=mediator'
forbid "$sysdir/mediatord.service" '^DynamicUser=yes' 'a preserved RuntimeDirectory would be hidden in /run/private'
forbid "$userdir/mediatord.service" '^RuntimeDirectory' 'stopping the service would delete the socket'
need "systemd/sysusers.d/mediator.conf" 'u mediator - "Mediator component broker" - -' 
forbid "$sysdir/mediatord.service" '^PrivateUsers=yes' 'SO_PEERCRED would report uid 65534 for every peer'
need "$sysdir/mediatord.socket" 'ListenStream=/run/mediator/mediator.sock'
# The component template: the program named after the target, the broker's
# socket and target in the environment, started after the broker's socket.
comp=$sysdir/mediator-component@.service
need "$comp" "ExecStart=$libexecdir/mediator/components/%i"
need "$comp" 'Environment=MEDIATOR_SOCKET=/run/mediator/mediator.sock MEDIATOR_TARGET=%i'
need "$comp" 'Requires=mediatord.socket'
need "$comp" 'After=mediatord.socket'
need "$comp" 'Type=exec'
need "$comp" 'DynamicUser=yes'
forbid "$comp" '^Restart=' 'the next call that needs the component starts it again'
need "$userdir/mediatord.socket" 'ListenStream=%t/mediator/mediator.sock'
if [ -z "$problems" ]; then pass "units keep what mediatord relies on"; else fail "units and mediatord disagree" "$problems"; fi

# Exposure: printed; below 5.0 ("OK", "SAFE" or "PERFECT") passes.
sec=$(systemd-analyze security --no-pager --offline=true "$sysdir/mediatord.service" 2>&1)
line=$(printf '%s\n' "$sec" | grep 'Overall exposure level' | tail -1)
echo "verify-units: ${line:-no exposure line}"
score=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9][0-9]*\)\.\([0-9]\) .*/\1\2/p')
if [ -n "$score" ] && [ "$score" -lt 50 ]; then
  pass "systemd-analyze security: exposure below 5.0"
else
  fail "systemd-analyze security: exposure 5.0 or worse, or not found" "$(printf '%s\n' "$sec" | grep -E '✗|Overall')"
fi

sec=$(systemd-analyze security --no-pager --offline=true "$tmp/instance/mediator-component@Notes.service" 2>&1)
line=$(printf '%s\n' "$sec" | grep 'Overall exposure level' | tail -1)
echo "verify-units: ${line:-no exposure line}"
score=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9][0-9]*\)\.\([0-9]\) .*/\1\2/p')
if [ -n "$score" ] && [ "$score" -lt 50 ]; then
  pass "systemd-analyze security: component instance exposure below 5.0"
else
  fail "systemd-analyze security: component instance exposure 5.0 or worse, or not found" "$(printf '%s\n' "$sec" | grep -E '✗|Overall')"
fi

# make install + make uninstall into a DESTDIR: binaries, units, docs, man
# pages and shell completion where the .deb has them (under PREFIX), then
# nothing left behind. The real binaries of `swift build` (run-tests builds
# them first): the man pages and the completion come from their help.
bin=$(swift build --show-bin-path 2>/dev/null)
dest=$tmp/dest
share=$dest/usr/local/share
installed="$dest/usr/local/bin/mediatord $dest/usr/local/bin/mediatorctl
$share/man/man1/mediatorctl.1.gz $share/man/man8/mediatord.8.gz
$share/bash-completion/completions/mediatorctl $share/zsh/site-functions/_mediatorctl
$share/fish/vendor_completions.d/mediatorctl.fish"
if [ -z "$bin" ] || [ ! -x "$bin/mediatord" ] || [ ! -x "$bin/mediatorctl" ]; then
  fail "make install" "no mediatord and mediatorctl in '${bin}' (swift build first)"
elif out=$(make -s --no-print-directory install DESTDIR="$dest" BIN_PATH="$bin" SWIFT_BUILD_FLAGS= 2>&1); then
  n=$(find "$dest" -type f | wc -l)
  missing=$(for f in $installed; do [ -s "$f" ] || echo "missing or empty: $f"; done)
  gzip -dc "$share/man/man1/mediatorctl.1.gz" | grep -q '^\.Dt MEDIATORCTL 1' || missing+=$'\nmediatorctl.1 is not section 1 of mediatorctl'
  gzip -dc "$share/man/man8/mediatord.8.gz" | grep -q '^\.Dt MEDIATORD 8' || missing+=$'\nmediatord.8 is not section 8 of mediatord'
  grep -q '^#compdef mediatorctl' "$share/zsh/site-functions/_mediatorctl" || missing+=$'\n_mediatorctl is no zsh completion'
  if head -n 1 "$share/bash-completion/completions/mediatorctl" | grep -q '^#!' \
    || ! grep -q 'complete .*mediatorctl' "$share/bash-completion/completions/mediatorctl"; then
    missing+=$'\nthe bash completion has a #! line or no complete command'
  fi
  out2=$(make -s --no-print-directory uninstall DESTDIR="$dest" 2>&1)
  left=$(find "$dest" -type f)
  if [ "$n" -eq 18 ] && [ -z "$missing" ] && [ -z "$left" ]; then
    pass "make install puts 18 files (man pages and completion too), make uninstall removes them"
  else
    fail "make install/uninstall ($n files installed, 18 expected)" "$missing${out2:+$'\n'$out2}${left:+$'\n'left: $left}"
  fi
else
  fail "make install" "$out"
fi
finish

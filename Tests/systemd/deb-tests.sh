#!/usr/bin/env bash
# The Debian package on a Debian without Swift: boots systemd as PID 1 in a
# systemd-nspawn container whose root is a plain Debian 12 (debootstrap
# --variant=minbase with systemd, from Debian's own packages; no toolchain,
# nothing of the host's /usr), installs dist/mediator_*.deb there with apt
# as an administrator would, and checks:
#
#   1 no Swift         the root has no Swift toolchain or runtime
#  1a previous        (with MEDIATOR_PREVIOUS_DEB, as run-tests passes it:
#                      scripts/build-previous-deb) the package of the last
#                      release installs, and its daemon serves a component
#  1b upgrade from it `apt-get install` of this package over it while a
#                      component is registered, a subscriber listens and a
#                      client calls in a loop: postinst's reload re-executes
#                      the new binary in place from the old one's hand-over
#                      (same MainPID, no restart, the new binary running, the
#                      component and subscriber kept, no event lost, every
#                      call of the loop answered, none failed)
#   2 apt install      `apt-get install ./mediator_*.deb` succeeds offline
#   3 libraries        mediatord and mediatorctl need only what the base
#                      system has (no libswift*, no libstdc++, nothing
#                      "not found"), and the package depends on neither
#   4 user             the package created the mediator system user
#   5 socket           mediatord.socket is enabled and listening
#   6 call             a component (`mediatorctl serve --exec` of a shell
#                      script) registers through the socket-activated
#                      daemon, and `mediatorctl call` gets its answer
#   7 no libnats       the root has no libnats (the package recommends
#                      it), and the daemon that served maps neither it
#                      nor OpenSSL: NATS is loaded only when configured
#   8 journal          mediatord logs to the journal
#   9 man pages        mediatord(8) and mediatorctl(1) are installed
#  10 upgrade          `apt-get install` of a newer package (the same
#                      files under a higher version, unpacked as dpkg does:
#                      new files under the old names) re-executes the
#                      running daemon in place through postinst's reload:
#                      same MainPID, no restart, the new binary running,
#                      the component and a subscriber kept on their
#                      connections, no event lost
#  11 remove           `apt-get remove` stops the socket and the daemon
#
# The root is cached under .build-rootfs/ (MEDIATOR_ROOTFS_CACHE), named by
# a hash of what debootstrap is asked for, so a change of packages makes a
# new one; a fresh clone (CI) builds it, which takes under a minute with a
# nearby mirror. The container writes into a tmpfs overlay
# (--volatile=overlay): the cached root is never changed.
#
# Run as root after `make deb`:   bash Tests/systemd/deb-tests.sh
# Needs debootstrap, systemd-nspawn (systemd-container), nsenter and unshare
# (util-linux). Prints `ok - NAME` / `not ok - NAME` lines, `#` diagnostics,
# and `deb-tests: N passed, M failed`; exits 1 if any failed. Bounded by
# MEDIATOR_DEB_BUDGET seconds (default 300, the root's first build included).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1

BUDGET=${MEDIATOR_DEB_BUDGET:-300}
SUITE=bookworm
MIRROR=${MEDIATOR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# No libnats: the package only recommends it (mediatord loads it when NATS is configured).
PACKAGES=systemd,systemd-sysv,dbus,libsystemd0,libstdc++6,init-system-helpers,procps
CACHE=${MEDIATOR_ROOTFS_CACHE:-$REPO/.build-rootfs}
ARCH=$(dpkg --print-architecture)
DEB=${MEDIATOR_DEB:-$(ls -t "$REPO"/dist/mediator_*_"$ARCH".deb 2>/dev/null | head -n 1)}
PREVIOUS=${MEDIATOR_PREVIOUS_DEB:-}

PASSED=0
FAILED=0
NSPAWN_PID=
LEADER=
GUARD_PID=
W=$(mktemp -d /tmp/mediator-deb-tests.XXXXXX)
T_START=$(date +%s)

say() { printf '# %s\n' "$*"; }
ok() { echo "ok - $1"; PASSED=$((PASSED + 1)); }
not_ok() { echo "not ok - $1"; shift; for line in "$@"; do say "$line"; done; FAILED=$((FAILED + 1)); }
check() {  # NAME COMMAND...: ok when the command succeeds, else its output
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "$(printf '%s' "$out" | tail -n 15)"; fi
}
finish() {
    [ -n "$LEADER" ] && kill -KILL "$LEADER" 2>/dev/null
    [ -n "$NSPAWN_PID" ] && { kill "$NSPAWN_PID" 2>/dev/null; wait "$NSPAWN_PID" 2>/dev/null; }
    [ -n "$GUARD_PID" ] && kill "$GUARD_PID" 2>/dev/null
    if [ "$FAILED" -gt 0 ] && [ -f "$W/nspawn.log" ]; then sed 's/^/#   nspawn: /' "$W/nspawn.log" | tail -n 20; fi
    rm -rf "$W"
    echo "deb-tests: $PASSED passed, $FAILED failed ($(( $(date +%s) - T_START )) s)"
    [ "$FAILED" -eq 0 ]
}
trap 'finish; exit $?' EXIT

for tool in debootstrap systemd-nspawn nsenter unshare; do
    command -v "$tool" >/dev/null || { not_ok "prerequisites" "missing $tool"; exit 1; }
done
[ "$(id -u)" = 0 ] || { not_ok "prerequisites" "needs root"; exit 1; }
[ -n "$DEB" ] && [ -f "$DEB" ] || { not_ok "prerequisites" "no dist/mediator_*_$ARCH.deb: run 'make deb' first"; exit 1; }
say "package: $DEB"
if [ -n "$PREVIOUS" ]; then
    [ -f "$PREVIOUS" ] || { not_ok "prerequisites" "MEDIATOR_PREVIOUS_DEB=$PREVIOUS is not a file"; exit 1; }
    say "previous package: $PREVIOUS ($(dpkg-deb -f "$PREVIOUS" Version))"
    PREVIOUS_DIR=$(dirname "$PREVIOUS")
else
    say "no previous package (MEDIATOR_PREVIOUS_DEB): the upgrade from the last release is not checked"
    PREVIOUS_DIR=$W
fi

# ------------------------------------------------------------ the cached root
key=$(printf '%s %s %s minbase v1' "$SUITE" "$MIRROR" "$PACKAGES" | sha256sum | cut -c1-12)
ROOT="$CACHE/$SUITE-$key"
if [ ! -x "$ROOT/lib/systemd/systemd" ]; then
    say "building the root $ROOT (debootstrap $SUITE from $MIRROR)"
    mkdir -p "$CACHE"
    rm -rf "$ROOT.partial"
    if ! timeout "$BUDGET" debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT.partial" "$MIRROR" \
        >"$W/debootstrap.log" 2>&1; then
        not_ok "root" "debootstrap failed:" "$(tail -n 10 "$W/debootstrap.log")"
        exit 1
    fi
    # No unit waits for a console or the network in a test container.
    rm -f "$ROOT.partial/etc/systemd/system/getty.target.wants/"* 2>/dev/null
    mv "$ROOT.partial" "$ROOT"
else
    say "root: $ROOT (cached)"
fi

# A newer package for the upgrade check: the one under test with its
# version raised, so that apt upgrades to it.
UPGRADE="$W/upgrade"
mkdir -p "$UPGRADE"
if dpkg-deb -R "$DEB" "$W/unpacked" &&
    sed -i -E 's/^Version: (.*)$/Version: \1+upgrade1/' "$W/unpacked/DEBIAN/control" &&
    dpkg-deb --build -Zgzip "$W/unpacked" "$UPGRADE/mediator-upgrade.deb" >"$W/upgrade-build.log" 2>&1; then
    UPGRADE_VERSION=$(dpkg-deb -f "$UPGRADE/mediator-upgrade.deb" Version)
    rm -rf "$W/unpacked"
else
    UPGRADE_VERSION=
fi

# --------------------------------------------------------------- the container
# nspawn in a mount namespace of its own with a tmpfs on /run, so that its
# bookkeeping never lands on the host's /run; the root read-only under a
# tmpfs overlay; the package's folder bound read-only at /mnt/dist.
unshare --mount --propagation private -- sh -c '
    mount -t tmpfs -o mode=0755,size=16m mediator-deb-run /run || exit 1
    exec "$@"' nspawn \
    systemd-nspawn -D "$ROOT" --volatile=overlay --register=no --keep-unit \
        --console=read-only --quiet --kill-signal=SIGRTMIN+3 \
        --bind-ro="$(dirname "$DEB"):/mnt/dist" --bind-ro="$UPGRADE:/mnt/upgrade" \
        --bind-ro="$PREVIOUS_DIR:/mnt/previous" \
        -b systemd.firstboot=off \
    </dev/null >"$W/nspawn.log" 2>&1 &
NSPAWN_PID=$!
# A guard: past the budget the container is killed, so every command fails fast.
(
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "$BUDGET" >/dev/null 2>&1 & s=$!
    wait "$s"
    echo "# budget of $BUDGET s exhausted: killing the container" >&2
    kill -KILL "$NSPAWN_PID" 2>/dev/null
) &
GUARD_PID=$!

mine=$(readlink /proc/self/ns/pid)
for _ in $(seq 300); do
    for child in $(cat /proc/"$NSPAWN_PID"/task/*/children 2>/dev/null); do
        if [ "$(readlink /proc/"$child"/ns/pid 2>/dev/null)" != "$mine" ] && [ "$(cat /proc/"$child"/comm 2>/dev/null)" = systemd ]; then
            LEADER=$child
        fi
    done
    [ -n "$LEADER" ] && break
    kill -0 "$NSPAWN_PID" 2>/dev/null || break
    sleep 0.05
done
[ -n "$LEADER" ] || { not_ok "boot" "no container PID 1 within 15 s"; exit 1; }

# Runs a command inside the container, with a clean environment and a time limit.
cx() {
    timeout --kill-after=2 "${CX_TIMEOUT:-30}" nsenter -t "$LEADER" -m -p -- \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SYSTEMD_PAGER= DEBIAN_FRONTEND=noninteractive "$@"
}
wait_for() {  # SECONDS COMMAND...
    local deadline=$(( $(date +%s) + $1 ))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}
booted() { case $(cx systemctl is-system-running 2>/dev/null) in running | degraded) return 0 ;; *) return 1 ;; esac; }
wait_for 60 booted || { not_ok "boot" "systemd did not finish booting: $(cx systemctl is-system-running 2>&1)"; exit 1; }
say "container PID 1 is host pid $LEADER"

# The instance numbers of TARGET's registrations, from `mediatorctl list`.
instances() {
    cx mediatorctl --json list 2>/dev/null | python3 -c '
import json, sys
print([i["instance"] for t in json.load(sys.stdin)["targets"] if t["target"] == sys.argv[1] for i in t["instances"]])' "$1"
}
# Starts `mediatorctl listen 'PREFIX.*'` in the container (its output in
# $W/PREFIX-listen.out and .err, its pid in LISTEN_PID) and waits until an
# event of PREFIX reaches it.
listening() {
    local prefix=$1
    nsenter -t "$LEADER" -m -p -- env -i PATH=/usr/bin:/bin setsid mediatorctl listen "$prefix.*" \
        </dev/null >"$W/$prefix-listen.out" 2>"$W/$prefix-listen.err" &
    LISTEN_PID=$!
    subscribed() { cx mediatorctl --json emit "$prefix.probe" | grep -q '"delivered":[1-9]'; }
    wait_for 10 subscribed || { echo "mediatorctl listen did not subscribe: $(cat "$W/$prefix-listen.err")"; return 1; }
}
. "$REPO/Tests/systemd/deb-upgrade-from-previous.sh"

# ------------------------------------------------------------------ the checks
check "no Swift in the root" cx sh -c '! ls -d /opt/swift /usr/lib/swift /usr/share/swift 2>/dev/null && ! command -v swift'

if [ -n "$PREVIOUS" ]; then
    check "apt installs the previous package ($(dpkg-deb -f "$PREVIOUS" Version))" previous_installed
    check "apt upgrades it to this package in place under load (re-exec, nothing closed, every call answered)" \
        upgraded_from_previous
    [ -f "$W/previous-summary" ] && say "$(cat "$W/previous-summary")"
fi
# After an upgrade from the previous package this finds it installed already.
check "apt installs the package" cx apt-get install -y --no-install-recommends "/mnt/dist/$(basename "$DEB")"

libraries() {
    local out
    out=$(cx ldd /usr/bin/mediatord /usr/bin/mediatorctl) || { echo "$out"; return 1; }
    # libstdc++ is linked in (scripts/build-static); the root has it only because apt needs it.
    if printf '%s\n' "$out" | grep -E 'not found|libswift|Foundation|libstdc\+\+'; then return 1; fi
    out=$(cx dpkg-query -W -f '${Depends}' mediator) || { echo "$out"; return 1; }
    if printf '%s\n' "$out" | grep -E 'libstdc\+\+|libswift'; then return 1; fi
}
check "the binaries need only the base system" libraries

check "the mediator user exists" cx getent passwd mediator

socket() {
    [ "$(cx systemctl is-enabled mediatord.socket)" = enabled ] || { cx systemctl status mediatord.socket; return 1; }
    wait_for 10 cx systemctl is-active mediatord.socket || { cx systemctl status mediatord.socket; return 1; }
    cx test -S /run/mediator/mediator.sock
}
check "mediatord.socket is enabled and listening" socket

call() {
    cx sh -c 'printf "#!/bin/sh\nexec cat\n" >/tmp/echo.sh && chmod 0755 /tmp/echo.sh' || return 1
    nsenter -t "$LEADER" -m -p -- env -i PATH=/usr/bin:/bin setsid mediatorctl serve Echo --exec /tmp/echo.sh --action echo \
        </dev/null >"$W/serve.out" 2>"$W/serve.err" &
    if ! wait_for 20 cx mediatorctl describe Echo; then
        cat "$W/serve.err"; cx systemctl status mediatord.service; return 1
    fi
    local answer
    answer=$(cx mediatorctl call Echo echo text=hi --json) || { echo "$answer"; return 1; }
    [ "$answer" = '{"text":"hi"}' ] || { echo "unexpected answer: $answer"; return 1; }
    [ "$(cx systemctl is-active mediatord.service)" = active ] || { cx systemctl status mediatord.service; return 1; }
    [ "$(cx systemctl show -p User --value mediatord.service)" = mediator ]
}
check "a call through the socket-activated daemon" call

no_nats() {
    local pid
    pid=$(cx systemctl show -p MainPID --value mediatord.service) || return 1
    [ -n "$pid" ] && [ "$pid" != 0 ] || { echo "no main pid"; return 1; }
    ! cx dpkg -s libnats3.4 >/dev/null 2>&1 || { echo "libnats3.4 is installed in the root"; return 1; }
    if cx grep -E 'libnats|libssl|libcrypto' "/proc/$pid/maps"; then return 1; fi
}
check "without libnats installed, mediatord serves and maps neither it nor OpenSSL" no_nats

check "mediatord logs to the journal" wait_for 10 sh -c "nsenter -t $LEADER -m -p -- journalctl -u mediatord.service --no-pager | grep -q 'registered'"

check "man pages" cx test -f /usr/share/man/man8/mediatord.8.gz -a -f /usr/share/man/man1/mediatorctl.1.gz

upgraded() {
    [ -n "$UPGRADE_VERSION" ] || { cat "$W/upgrade-build.log"; echo "the newer package could not be made"; return 1; }
    local pid0 nr0 before after listen_pid exe
    pid0=$(cx systemctl show -p MainPID --value mediatord.service)
    nr0=$(cx systemctl show -p NRestarts --value mediatord.service)
    [ -n "$pid0" ] && [ "$pid0" != 0 ] || { echo "no daemon running before the upgrade"; return 1; }
    before=$(instances Echo)
    [ "$before" != "[]" ] && [ -n "$before" ] || { echo "Echo is not registered before the upgrade"; return 1; }
    listening upgrade || return 1
    listen_pid=$LISTEN_PID
    cx apt-get install -y --no-install-recommends /mnt/upgrade/mediator-upgrade.deb || return 1
    [ "$(cx dpkg-query -W -f '${Version}' mediator)" = "$UPGRADE_VERSION" ] || { echo "not upgraded to $UPGRADE_VERSION"; return 1; }
    runs_new() { [ "$(cx readlink "/proc/$pid0/exe")" = /usr/bin/mediatord ]; }
    wait_for 10 runs_new || { echo "pid $pid0 runs '$(cx readlink "/proc/$pid0/exe")' after the upgrade"; cx journalctl -u mediatord.service -n 20 --no-pager; return 1; }
    wait_for 5 cx mediatorctl ping || { echo "the daemon does not answer after the upgrade"; return 1; }
    [ "$(cx systemctl show -p MainPID --value mediatord.service)" = "$pid0" ] || { echo "MainPID changed from $pid0"; return 1; }
    [ "$(cx systemctl show -p NRestarts --value mediatord.service)" = "$nr0" ] || { echo "the daemon was restarted"; return 1; }
    after=$(instances Echo)
    [ "$after" = "$before" ] || { echo "Echo registered again: instances $before -> $after"; return 1; }
    kill -0 "$listen_pid" 2>/dev/null || { echo "the subscriber's connection closed: $(cat "$W/upgrade-listen.err")"; return 1; }
    cx mediatorctl emit upgrade.after >/dev/null || return 1
    wait_for 5 grep -q upgrade.after "$W/upgrade-listen.out" || { echo "the subscriber missed an event sent after the upgrade"; return 1; }
    exe=$(cx mediatorctl call Echo echo text=upgraded --json) || { echo "$exe"; return 1; }
    [ "$exe" = '{"text":"upgraded"}' ] || { echo "unexpected answer after the upgrade: $exe"; return 1; }
    if cx journalctl -u mediatord.service --no-pager | grep -E 'clean restart|re-exec failed'; then return 1; fi
    kill -TERM "$listen_pid" 2>/dev/null
    return 0
}
check "apt upgrades a running daemon in place (re-exec, nothing closed)" upgraded

removed() {
    cx apt-get remove -y mediator || return 1
    local state
    state=$(cx systemctl is-active mediatord.socket mediatord.service)
    [ "$(printf '%s\n' "$state" | grep -vc '^inactive$\|^failed$')" = 0 ] || { echo "still: $state"; return 1; }
    ! cx test -e /usr/bin/mediatord
}
check "apt-get remove stops the socket and the daemon" removed

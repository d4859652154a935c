#!/usr/bin/env bash
# mediatord under a real systemd: boots systemd as PID 1 in a systemd-nspawn
# container (the host's /usr, read-only, on a throwaway root), installs the
# units rendered by `make units` (bound over /etc/systemd/system) and the
# sysusers.d file (over /etc/sysusers.d; systemd-sysusers runs at boot), and
# checks what the units promise:
#
#   1 socket activation   the socket unit alone listens; the first client
#                         starts mediatord.service, which adopts systemd's socket
#   2 component call      the Python Notes component registers and answers
#   3 reload              `systemctl reload` (SIGHUP, RELOADING=1 + READY=1)
#                         keeps connections, registrations and state
#   3b re-exec            `mediatorctl daemon-reexec` ten times in a row
#                         (RELOADING=1, then READY=1 from the new image):
#                         same MainPID, no restart, connections,
#                         registrations and subscriptions kept
#   3c crash              kill -SEGV: systemd starts a new daemon, which adopts
#                         the connections kept in the fd store; the Notes
#                         component (no --reconnect: a lost connection ends
#                         it) registers again on its connection, a subscriber
#                         keeps getting events, a call in flight is answered
#                         component_unavailable
#   3d upgrade by reload  the binary the unit runs is replaced on disk (a new
#                         file under its name, as dpkg does); `systemctl
#                         reload` re-executes it in place: same MainPID, the
#                         new inode running, a component and a subscriber
#                         kept on their connections
#   3e restart            `systemctl restart` ten times in a row under load
#                         (twenty callers in a loop on an exclusive Notes
#                         component and a pool of two, two managed
#                         components, a subscriber of numbered events): a new MainPID
#                         each time, the old one hands everything over
#                         through the fd store; no connection closed, every
#                         call answered once, no re-register, no event lost;
#                         the managed components keep their pids
#                         (KillMode=process), and one killed from outside
#                         afterwards is restarted by the new daemon
#   3f stop               `systemctl stop` still ends the peers' connections
#                         (after mediator.restarting) and leaves no managed
#                         component running; a start serves afresh
#   3g restart fallback   a hand-over whose snapshot the new daemon cannot
#                         read (version 999, a test hook): every peer gets
#                         mediator.restarting and is closed; it serves afresh
#   3h crash under load   kill -SEGV three times while callers, a publisher
#                         and a subscriber run on kept connections: each gets
#                         mediator.reregister, the Notes component registers
#                         again within 1 s, each call in flight fails once
#                         (component_unavailable), no connection closes; a
#                         managed component, called in a loop too, keeps
#                         its pid and connection: each new daemon takes it
#                         back as it registers again
#   4 journal fields      MEDIATOR_TARGET, MEDIATOR_PEER_PID, PRIORITY,
#                         CODE_FILE, CODE_LINE on the registration record
#   5 restart on SIGKILL  systemd restarts the daemon; clients pinging all
#                         along are never refused (the socket stays open)
#   6 watchdog            a blocked event loop is killed by the watchdog and
#                         the service is restarted
#   7 clean stop          stopping service and socket ends with Result=success
#   8 unit activation     a manifest with "unit": "mediator-component@UnitNotes.service"
#                         makes the first call start that unit through systemd's
#                         D-Bus API (StartUnit, as user mediator, allowed by a
#                         polkit rule); a unit outside the rule is refused
#
# Run as root from the repository root after `swift build`:
#
#     bash Tests/systemd/nspawn-tests.sh
#
# Needs systemd-nspawn (apt-get install -y systemd-container), nsenter
# (util-linux) and python3; scenario 8 also needs a D-Bus system bus and
# polkit on the host's /usr (apt-get install -y dbus polkitd). Systemd need not be PID 1 on the host. Nothing on
# the host's /run or /tmp is touched: the container's root, /tmp and /run are
# its own tmpfs, and systemd-nspawn itself runs in a private mount namespace
# whose /run is a tmpfs (nspawn keeps its bookkeeping under /run/systemd).
# The container lives in a cgroup of its own, removed at the end, so that two
# runs at once on one machine do not share mediatord.service's cgroup.
#
# Prints one `ok - NAME` or `not ok - NAME` line per scenario, diagnostics
# as `#` lines, and ends with `systemd-tests: N passed, M failed`; exits 1 if
# any failed. The whole run is bounded (MEDIATOR_NSPAWN_BUDGET, default 200 s).
#
# Environment:
#   MEDIATOR_BIN_DIR          folder with mediatord and mediatorctl
#                             (default: `swift build --show-bin-path`; run-tests
#                             passes the static ones of `make deb`, so that no
#                             toolchain is bound into the container)
#   MEDIATOR_NSPAWN_BUDGET    seconds for the whole run (default 200)
#   MEDIATOR_NSPAWN_KEEP=1    keep the work folder (logs, rendered units)
#   MEDIATOR_NSPAWN_ONLY      scenario names to run, e.g. "component-call
#                             restart-keeps-everything" (the others are
#                             skipped; later ones may need earlier ones)
set -uo pipefail
# Like `grep -q`, but reads to the end: `grep -q` exits at the first match,
# and under pipefail the writer's SIGPIPE would then fail the whole pipeline.
has() { grep "$@" >/dev/null; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1

BUDGET=${MEDIATOR_NSPAWN_BUDGET:-200}
IN_BIN=/opt/mediator/bin            # where the binaries appear in the container
IN_EXAMPLES=/opt/mediator/Examples    # and the Python package beside it (notes_component.py imports it)
SOCK=/run/mediator/mediator.sock
UNIT=mediatord.service

PASSED=0
FAILED=0
REASONS=()
BG_PIDS=()
NSPAWN_PID=
LEADER=
CONTAINER_PIDNS=
GUARD_PID=
W=
T_START=$(date +%s%N)

say() { printf '# %s\n' "$*"; }
why() { REASONS+=("$*"); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
elapsed() { echo "$(( ($(date +%s%N) - T_START) / 1000000 )) ms"; }

# ---------------------------------------------------------------- prerequisites

precheck() {
    local missing=()
    [ "$(id -u)" = 0 ] || missing+=("root (run as root)")
    command -v systemd-nspawn >/dev/null || missing+=("systemd-nspawn (apt-get install -y systemd-container)")
    command -v nsenter >/dev/null || missing+=("nsenter (util-linux)")
    command -v unshare >/dev/null || missing+=("unshare (util-linux)")
    command -v python3 >/dev/null || missing+=("python3")
    [ -x /usr/lib/systemd/systemd ] || [ -x /lib/systemd/systemd ] || missing+=("systemd (apt-get install -y systemd)")
    if [ ${#missing[@]} -gt 0 ]; then
        echo "not ok - prerequisites"
        for m in "${missing[@]}"; do echo "#   missing: $m"; done
        echo "systemd-tests: 0 passed, 1 failed"
        exit 1
    fi
}

find_binaries() {
    if [ -n "${MEDIATOR_BIN_DIR:-}" ]; then
        BIN=$MEDIATOR_BIN_DIR
    else
        BIN=$(PATH="/opt/swift/usr/bin:$PATH" swift build --show-bin-path 2>/dev/null) || BIN=
    fi
    if [ -z "$BIN" ] || [ ! -x "$BIN/mediatord" ] || [ ! -x "$BIN/mediatorctl" ]; then
        echo "not ok - prerequisites"
        echo "#   no mediatord/mediatorctl in '${BIN}': run 'swift build' first (or set MEDIATOR_BIN_DIR)"
        echo "systemd-tests: 0 passed, 1 failed"
        exit 1
    fi
    BIN=$(cd "$BIN" && pwd -P)
    say "binaries: $BIN"
    # Static binaries (make deb, .build-static) need no toolchain; others
    # find the Swift runtime under /opt/swift, which is then bound in.
    TOOLCHAIN_BIND=()
    if ldd "$BIN/mediatord" 2>/dev/null | has /opt/swift; then
        TOOLCHAIN_BIND=(--bind-ro=/opt/swift)
        say "the binaries load the Swift runtime from /opt/swift: binding it into the container"
    fi
    if "$BIN/mediatord" --help 2>&1 | has -- '--log-target'; then
        say "mediatord has --log-target (systemd integration present)"
    else
        say "mediatord has no --log-target: systemd integration not built in yet; expect failures"
    fi
}

# ------------------------------------------------------------------- the units

# Renders the units into $W/units, which is bound (read-write, it is a scratch
# copy: `systemctl enable` writes its links there) over /etc/systemd/system.
render_units() {
    local out=$W/units
    mkdir -p "$out"
    if [ -f Makefile ] && grep -qE '^units:' Makefile && command -v make >/dev/null; then
        say "units: make units DESTDIR=$W/dest BINDIR=$IN_BIN"
        if ! make -s units DESTDIR="$W/dest" BINDIR="$IN_BIN" >"$W/make.log" 2>&1; then
            sed 's/^/#   make: /' "$W/make.log"
            return 1
        fi
        local f
        for name in mediatord.service mediatord.socket; do
            f=$(find "$W/dest" -path '*/user/*' -prune -o -name "$name" -type f -print | head -1)
            [ -n "$f" ] || { say "make units produced no $name"; return 1; }
            cp "$f" "$out/$name"
        done
    elif [ -f systemd/mediatord.service.in ] && [ -f systemd/mediatord.socket ]; then
        say "units: systemd/mediatord.service.in rendered with sed (no 'make units' yet)"
        sed -e "s|@bindir@|$IN_BIN|g" -e "s|@docdir@|/usr/share/doc/mediator|g" \
            systemd/mediatord.service.in >"$out/mediatord.service"
        cp systemd/mediatord.socket "$out/mediatord.socket"
    else
        say "units: no systemd/ folder yet, using stand-in units"
        cat >"$out/mediatord.socket" <<EOF
[Socket]
ListenStream=$SOCK
FileDescriptorName=mediator
SocketMode=0666
RemoveOnStop=yes
[Install]
WantedBy=sockets.target
EOF
        local type=simple extra=
        if "$BIN/mediatord" --help 2>&1 | has -- '--log-target'; then
            type=notify extra=" --log-target journal"
        fi
        cat >"$out/mediatord.service" <<EOF
[Unit]
Requires=mediatord.socket
After=mediatord.socket
[Service]
Type=$type
ExecStart=$IN_BIN/mediatord$extra
ExecReload=/bin/kill -HUP \$MAINPID
WatchdogSec=10s
Restart=on-failure
RestartSec=100ms
Environment=SWIFT_BACKTRACE=enable=no
DynamicUser=yes
[Install]
Also=mediatord.socket
EOF
    fi
    # The service's system user (sysusers.d), bound over /etc/sysusers.d and
    # created at boot by systemd-sysusers.service, as on a real system.
    mkdir -p "$W/sysusers.d"
    if [ -f Makefile ] && grep -qE '^install-sysusers:' Makefile && command -v make >/dev/null; then
        if ! make -s install-sysusers DESTDIR="$W/dest" >"$W/make-sysusers.log" 2>&1; then
            sed 's/^/#   make: /' "$W/make-sysusers.log"
            return 1
        fi
        find "$W/dest" -path '*/sysusers.d/*.conf' -type f -exec cp {} "$W/sysusers.d/" \;
    elif [ -d systemd/sysusers.d ]; then
        cp systemd/sysusers.d/*.conf "$W/sysusers.d/" 2>/dev/null
    fi
    [ -n "$(ls "$W/sysusers.d")" ] && say "sysusers.d: $(cd "$W/sysusers.d" && echo *)"
    # The boot target: journald and the system users. Our units are started
    # by the tests.
    cat >"$out/mediator-test.target" <<'EOF'
[Unit]
Description=Mediator systemd tests (journald and system users only)
Wants=systemd-journald.socket systemd-journald.service systemd-sysusers.service
After=systemd-journald.socket systemd-journald.service systemd-sysusers.service
AllowIsolate=yes
EOF
    say "ExecStart: $(grep -m1 '^ExecStart=' "$out/mediatord.service")"
}

# --------------------------------------------------------------- the container

# With --keep-unit, systemd-nspawn puts the container under the caller's own
# cgroup (in payload/ and supervisor/ below it), and the container's systemd
# makes system.slice/mediatord.service there. Two containers started from the
# same cgroup (two runs at once on one machine, where systemd is not PID 1 and
# everything sits in the root cgroup) would then share the service's cgroup:
# `systemctl kill` or a stop would reach the other container's daemon. Each
# run therefore starts nspawn in a cgroup of its own, in the unified
# hierarchy and, on a hybrid layout, in name=systemd, removed at the end.
CG_DIRS=()
setup_cgroups() {
    local name="mediator-nspawn-$$" rel root
    rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
    root=
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        root=/sys/fs/cgroup
    elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
        root=/sys/fs/cgroup/unified
    fi
    if [ -n "$root" ] && [ -n "$rel" ]; then
        CG_DIRS+=("${root}${rel%/}/$name")
    fi
    rel=$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
    if [ -n "$rel" ] && [ -d /sys/fs/cgroup/systemd ]; then
        CG_DIRS+=("/sys/fs/cgroup/systemd${rel%/}/$name")
    fi
    local d
    for d in "${CG_DIRS[@]}"; do
        if ! mkdir "$d" 2>/dev/null; then
            say "could not create cgroup $d: runs at the same time on this machine may disturb each other"
            CG_DIRS=()
            return 0
        fi
    done
    [ ${#CG_DIRS[@]} -gt 0 ] && say "container cgroups: ${CG_DIRS[*]}"
}

# Processes left in the run's cgroups (host pids).
cgroup_procs() {
    local d
    for d in "${CG_DIRS[@]}"; do
        [ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
    done | sort -u
}

remove_cgroups() {
    local d
    for d in "${CG_DIRS[@]}"; do
        [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    done
}

boot() {
    # nspawn runs in its own mount namespace with a tmpfs on /run, so that its
    # bookkeeping (/run/systemd/nspawn/...) never lands on the host's /run.
    # The container's root is a tmpfs (--volatile=yes) with the host's /usr
    # read-only: its /etc, /var, /run and /tmp are its own.
    CG_LIST="${CG_DIRS[*]}" unshare --mount --propagation private -- sh -c '
        for d in $CG_LIST; do echo $$ >"$d/cgroup.procs" || exit 1; done
        mount -t tmpfs -o mode=0755,size=16m mediator-nspawn-run /run || exit 1
        exec "$@"' nspawn \
        systemd-nspawn -D / --volatile=yes --register=no --keep-unit \
            --console=read-only --quiet --kill-signal=SIGRTMIN+3 \
            "${TOOLCHAIN_BIND[@]}" \
            --bind-ro="$BIN:$IN_BIN" \
            --bind-ro="$REPO/Examples:$IN_EXAMPLES" \
            --bind-ro="$REPO/python:/opt/mediator/python" \
            --bind="$W/units:/etc/systemd/system" \
            --bind-ro="$W/sysusers.d:/etc/sysusers.d" \
            -b systemd.firstboot=off systemd.unit=mediator-test.target \
        </dev/null >"$W/nspawn.log" 2>&1 &
    NSPAWN_PID=$!
    say "systemd-nspawn pid $NSPAWN_PID"

    # A guard: past the budget, kill the container (SIGKILL to its PID 1 ends
    # every process in it), so every command inside fails fast and the
    # script ends.
    (
        trap 'kill "$s" 2>/dev/null; exit 0' TERM
        sleep "$BUDGET" & s=$!
        wait "$s"
        echo "# budget of ${BUDGET} s exhausted: killing the container" >&2
        [ -n "$(cat "$W/leader" 2>/dev/null)" ] && kill -KILL "$(cat "$W/leader")" 2>/dev/null
        kill -KILL "$NSPAWN_PID" 2>/dev/null
    ) &
    GUARD_PID=$!

    # The leader (the container's PID 1) is nspawn's child in another pid
    # namespace.
    local deadline=$(( $(now_ms) + 15000 )) mine child
    mine=$(readlink /proc/self/ns/pid)
    while [ "$(now_ms)" -lt $deadline ]; do
        kill -0 "$NSPAWN_PID" 2>/dev/null || break
        for child in $(cat /proc/"$NSPAWN_PID"/task/*/children 2>/dev/null); do
            local ns
            ns=$(readlink /proc/"$child"/ns/pid 2>/dev/null) || continue
            if [ "$ns" != "$mine" ] && [ "$(cat /proc/"$child"/comm 2>/dev/null)" = systemd ]; then
                LEADER=$child
                CONTAINER_PIDNS=$ns
                echo "$LEADER" >"$W/leader"
                break 2
            fi
        done
        sleep 0.05
    done
    if [ -z "$LEADER" ]; then
        why "no container PID 1 within 15 s"
        return 1
    fi
    say "container PID 1 is host pid $LEADER"

    # Up when the boot job is done: is-system-running says running (or
    # degraded, which we report but accept).
    local state=
    deadline=$(( $(now_ms) + 20000 ))
    while [ "$(now_ms)" -lt $deadline ]; do
        state=$(CX_TIMEOUT=5 cx systemctl is-system-running 2>/dev/null)
        case $state in running | degraded) break ;; esac
        kill -0 "$LEADER" 2>/dev/null || break
        sleep 0.05
    done
    case $state in
        running) ;;
        degraded)
            say "system degraded; failed units:"
            cx systemctl --failed --no-legend --plain 2>&1 | sed 's/^/#   /' ;;
        *) why "systemd did not finish booting within 20 s (is-system-running: '$state')"; return 1 ;;
    esac
    return 0
}

# Runs a command inside the container (its mount and pid namespaces), with a
# clean environment and a time limit (CX_TIMEOUT, default 20 s).
cx() {
    timeout --kill-after=2 "${CX_TIMEOUT:-20}" \
        nsenter -t "$LEADER" -m -p -- \
        env -i PATH=$IN_BIN:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
            SYSTEMD_PAGER= SYSTEMD_COLORS=0 SYSTEMD_LOG_COLOR=0 "$@"
}

# Starts a command inside the container in the background, output to files;
# prints nothing, sets BG (its host pid, in a process group of its own).
cx_bg() {
    local out=$1 err=$2
    shift 2
    setsid nsenter -t "$LEADER" -m -p -- \
        env -i PATH=$IN_BIN:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@" \
        </dev/null >"$out" 2>"$err" &
    BG=$!
    BG_PIDS+=("$BG")
}

# prop PROPERTY [UNIT]: one property's value.
prop() { cx systemctl show -p "$1" --value "${2:-$UNIT}" 2>/dev/null; }

# wait_for SECONDS COMMAND...: polls every 50 ms until the command succeeds.
wait_for() {
    local deadline=$(( $(now_ms) + $1 * 1000 ))
    shift
    while :; do
        "$@" && return 0
        [ "$(now_ms)" -ge $deadline ] && return 1
        sleep 0.05
    done
}

is_active() { [ "$(cx systemctl is-active "${1:-$UNIT}" 2>/dev/null)" = active ]; }
ping_ok() { cx mediatorctl ping --timeout 5 >/dev/null 2>&1; }
file_has() { grep -q -- "$2" "$1" 2>/dev/null; }

# Writes FILE (in the container) from stdin.
cx_write() { cx sh -c 'mkdir -p "$(dirname "$1")" && cat >"$1"' sh "$1"; }

# ------------------------------------------------------------------ scenarios

s1_socket_activation() {
    local out
    out=$(cx systemctl enable --now mediatord.socket 2>&1) || { why "enable --now mediatord.socket failed: $out"; return 1; }
    is_active mediatord.socket || { why "mediatord.socket is not active"; return 1; }
    local enabled
    enabled=$(cx systemctl is-enabled mediatord.socket 2>&1)
    [ "$enabled" = enabled ] || { why "is-enabled mediatord.socket: $enabled"; return 1; }
    local state
    state=$(cx systemctl is-active $UNIT 2>/dev/null)
    [ "$state" = inactive ] || { why "mediatord.service is '$state' before any client connected"; return 1; }
    local inode_before
    inode_before=$(cx stat -c %i "$SOCK" 2>/dev/null) || { why "no socket file $SOCK after starting the socket unit"; return 1; }

    local t0 rc
    t0=$(now_ms)
    out=$(cx mediatorctl ping --timeout 15 2>&1); rc=$?
    [ $rc = 0 ] || { why "first ping exited $rc: $out"; return 1; }
    say "first ping (activation + start) took $(( $(now_ms) - t0 )) ms"
    wait_for 10 is_active || { why "mediatord.service not active after the first ping ($(prop ActiveState)/$(prop SubState))"; return 1; }

    local pid env
    pid=$(prop MainPID)
    [ -n "$pid" ] && [ "$pid" != 0 ] || { why "no MainPID"; return 1; }
    env=$(cx sh -c 'tr "\0" "\n" </proc/$1/environ' sh "$pid" 2>&1)
    grep -qx 'LISTEN_FDS=1' <<<"$env" || { why "main pid $pid has no LISTEN_FDS=1 in its environment"; return 1; }
    grep -qx 'LISTEN_FDNAMES=mediator' <<<"$env" || { why "main pid $pid has no LISTEN_FDNAMES=mediator"; return 1; }
    local inode_after
    inode_after=$(cx stat -c %i "$SOCK" 2>/dev/null)
    [ "$inode_before" = "$inode_after" ] || { why "the socket file was replaced (inode $inode_before -> $inode_after): the daemon bound its own socket instead of adopting systemd's"; return 1; }
    # The daemon's fd 3 is the listening socket systemd made.
    local fd3
    fd3=$(cx readlink /proc/"$pid"/fd/3 2>&1)
    [[ $fd3 == socket:* ]] || { why "fd 3 of the daemon is '$fd3', not a socket"; return 1; }
    # Not root, and any local user can connect (the socket and /run/mediator
    # stay open to others).
    local uid
    # (No awk inside: /usr/bin/awk goes through /etc/alternatives, and the
    # container's /etc is empty.)
    uid=$(cx sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/"$pid"/status 2>/dev/null)
    [ -n "$uid" ] && [ "$uid" != 0 ] || { why "the daemon runs as uid '$uid'"; return 1; }
    out=$(cx setpriv --reuid=65534 --regid=65534 --clear-groups mediatorctl ping --timeout 5 2>&1) ||
        { why "an unprivileged client (uid 65534) cannot ping: $out"; return 1; }
    say "MainPID $pid (uid $uid), fd 3 $fd3, NRestarts $(prop NRestarts); uid 65534 can connect"
    local status
    status=$(prop StatusText)
    [ -n "$status" ] && say "StatusText: $status"
    return 0
}

NOTES_PID_IN=   # the component's pid inside the container

s2_component_call() {
    cx_bg "$W/notes.out" "$W/notes.err" python3 "$IN_EXAMPLES/python/notes_component.py" --socket "$SOCK"
    NOTES_BG=$BG
    wait_for 10 file_has "$W/notes.out" ready || {
        why "the Notes component did not print ready within 10 s"
        why "stderr: $(tail -3 "$W/notes.err" 2>/dev/null | tr '\n' ' ')"
        return 1
    }
    local out rc
    out=$(cx mediatorctl --json call Notes add text=hi 2>&1); rc=$?
    [ $rc = 0 ] || { why "call Notes add exited $rc: $out"; return 1; }
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert isinstance(r.get("id"), int), r' "$out" 2>/dev/null ||
        { why "call Notes add answered '$out', expected {\"id\": n}"; return 1; }
    say "Notes add -> $out"
    out=$(cx mediatorctl --json call Notes whoami 2>&1) || { why "call Notes whoami: $out"; return 1; }
    NOTES_PID_IN=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$out" 2>/dev/null)
    return 0
}

# Prints "instance pid" of the Notes target from `mediatorctl list --json`.
notes_instance() {
    cx mediatorctl --json list 2>/dev/null | python3 -c '
import json, sys
for t in json.load(sys.stdin)["targets"]:
    if t["target"] == "Notes":
        print(" ".join("%s/%s" % (i["instance"], i["pid"]) for i in t["instances"]))'
}

s3_reload() {
    kill -0 "${NOTES_BG:-0}" 2>/dev/null || { why "the Notes component from scenario 2 is not running"; return 1; }
    # A second connection held open across the reload: a subscriber.
    cx_bg "$W/listen.out" "$W/listen.err" mediatorctl listen 'test.*'
    local listen_bg=$BG
    delivered_to_listener() {
        cx mediatorctl --json emit test.probe 2>/dev/null | has '"delivered":[1-9]'
    }
    wait_for 10 delivered_to_listener || { why "mediatorctl listen did not subscribe within 10 s"; return 1; }

    local before pid_before cursor
    cursor=$(journal_cursor)
    before=$(notes_instance)
    pid_before=$(prop MainPID)
    [ -n "$before" ] || { why "Notes is not registered before the reload"; return 1; }

    local t0 out rc
    t0=$(now_ms)
    out=$(cx systemctl reload $UNIT 2>&1); rc=$?
    local took=$(( $(now_ms) - t0 ))
    [ $rc = 0 ] || { why "systemctl reload exited $rc after $took ms: $out"; journal_tail; return 1; }
    say "systemctl reload took $took ms"

    # systemd 252 may end the reload job when kill(1) exits, before the
    # daemon's RELOADING=1 arrives: then SubState is "reload" until READY=1.
    running() { [ "$(prop ActiveState)/$(prop SubState)" = active/running ]; }
    wait_for 5 running || { why "5 s after the reload: $(prop ActiveState)/$(prop SubState)"; return 1; }
    local pid_after
    pid_after=$(prop MainPID)
    [ "$pid_after" = "$pid_before" ] || { why "MainPID changed across the reload ($pid_before -> $pid_after)"; return 1; }
    local after
    after=$(notes_instance)
    [ "$after" = "$before" ] || { why "Notes instances changed across the reload: '$before' -> '$after'"; return 1; }
    out=$(cx mediatorctl --json call Notes list 2>&1) || { why "call Notes list after reload: $out"; return 1; }
    grep -q '"hi"' <<<"$out" || { why "the note added before the reload is gone: $out"; return 1; }
    kill -0 "$NOTES_BG" 2>/dev/null || { why "the Notes component exited during the reload"; return 1; }
    kill -0 "$listen_bg" 2>/dev/null || { why "mediatorctl listen exited during the reload: $(cat "$W/listen.err")"; return 1; }
    cx mediatorctl emit test.after_reload >/dev/null 2>&1
    wait_for 5 file_has "$W/listen.out" test.after_reload ||
        { why "the subscriber connected before the reload missed an event sent after it"; return 1; }
    # The daemon handled SIGHUP: it re-read its settings and said so (it
    # sends RELOADING=1 before and READY=1 after).
    reload_logged() { journal_since "$cursor" | has 'configuration reloaded'; }
    wait_for 5 reload_logged || { why "no 'configuration reloaded' from the daemon after the reload"; journal_tail; return 1; }
    if journal_since "$cursor" | has 'reload failed'; then
        why "the daemon logged 'reload failed'"; journal_tail; return 1
    fi
    journal_since "$cursor" | has "Reloaded" || { why "systemd did not log 'Reloaded' for $UNIT"; journal_tail; return 1; }
    say "Notes instance $after kept, MainPID $pid_after kept, status '$(prop StatusText)'"
    return 0
}

# Starts `mediatorctl listen 'PREFIX.*'` (output in $W/PREFIX-listen.out)
# and waits until it is subscribed; $BG is its pid.
listen_for() {
    local prefix=$1 bg
    cx_bg "$W/$prefix-listen.out" "$W/$prefix-listen.err" mediatorctl listen "$prefix.*"
    bg=$BG
    subscribed() { cx mediatorctl --json emit "$prefix.probe" 2>/dev/null | has '"delivered":[1-9]'; }
    wait_for 10 subscribed || { why "mediatorctl listen did not subscribe within 10 s"; return 1; }
    BG=$bg
}

s3b_reexec() {
    kill -0 "${NOTES_BG:-0}" 2>/dev/null || { why "the Notes component from scenario 2 is not running"; return 1; }
    listen_for reexec || return 1
    local listen_bg=$BG
    local before pid_before restarts_before cursor
    cursor=$(journal_cursor)
    before=$(notes_instance)
    pid_before=$(prop MainPID)
    restarts_before=$(prop NRestarts)
    running() { [ "$(prop ActiveState)/$(prop SubState)" = active/running ]; }
    local i out rc t0 longest=0 took
    for i in 1 2 3 4 5 6 7 8 9 10; do
        t0=$(now_ms)
        out=$(cx mediatorctl --json daemon-reexec --timeout 10 2>&1); rc=$?
        took=$(( $(now_ms) - t0 ))
        [ $took -gt $longest ] && longest=$took
        [ $rc = 0 ] || { why "daemon-reexec $i exited $rc after $took ms: $out"; journal_tail; return 1; }
        has "\"pid\":$pid_before" <<<"$out" || { why "daemon-reexec $i answered '$out', not from pid $pid_before"; return 1; }
        wait_for 5 running || { why "after re-exec $i: $(prop ActiveState)/$(prop SubState)"; journal_tail; return 1; }
    done
    say "10 re-execs, the longest daemon-reexec (mediatorctl included) $longest ms"
    [ "$(prop MainPID)" = "$pid_before" ] || { why "MainPID changed ($pid_before -> $(prop MainPID))"; return 1; }
    [ "$(prop NRestarts)" = "$restarts_before" ] || { why "NRestarts went from $restarts_before to $(prop NRestarts)"; return 1; }
    [ "$(notes_instance)" = "$before" ] || { why "Notes instances changed: '$before' -> '$(notes_instance)'"; return 1; }
    out=$(cx mediatorctl --json call Notes list 2>&1) || { why "call Notes list after the re-execs: $out"; return 1; }
    grep -q '"hi"' <<<"$out" || { why "the note added before the re-execs is gone: $out"; return 1; }
    kill -0 "$NOTES_BG" 2>/dev/null || { why "the Notes component exited during the re-execs"; return 1; }
    kill -0 "$listen_bg" 2>/dev/null || { why "mediatorctl listen exited: $(cat "$W/reexec-listen.err")"; return 1; }
    cx mediatorctl emit reexec.after >/dev/null 2>&1
    wait_for 5 file_has "$W/reexec-listen.out" reexec.after || { why "the subscriber missed an event sent after the re-execs"; return 1; }
    if journal_since "$cursor" | has -e 'clean restart' -e 're-exec failed'; then
        why "the daemon fell back or failed"; journal_tail; return 1
    fi
    kill -TERM "$listen_bg" 2>/dev/null
    return 0
}

s3c_crash() {
    kill -0 "${NOTES_BG:-0}" 2>/dev/null || { why "the Notes component from scenario 2 is not running"; return 1; }
    listen_for crash || return 1
    local listen_bg=$BG
    cx_bg "$W/crash-call.out" "$W/crash-call.err" mediatorctl call Notes sleep ms=5000 --timeout 20
    local call_bg=$BG
    in_flight() { cx mediatorctl --json stats 2>/dev/null | has '"in_flight":[1-9]'; }
    wait_for 5 in_flight || { why "the sleep call is not in flight"; return 1; }
    local pid0 nr0 t0
    pid0=$(prop MainPID)
    nr0=$(prop NRestarts)
    t0=$(now_ms)
    cx kill -SEGV "$pid0"
    new_daemon() { local p; p=$(prop MainPID); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$pid0" ] && is_active; }
    wait_for 10 new_daemon || { why "no new daemon 10 s after SIGSEGV: $(prop ActiveState)/$(prop SubState)"; journal_tail; return 1; }
    registered_again() { [ -n "$(notes_instance)" ]; }
    wait_for 5 registered_again || { why "Notes did not register again"; journal_tail; return 1; }
    say "Notes registered again $(( $(now_ms) - t0 )) ms after the SIGSEGV (new MainPID $(prop MainPID), NRestarts $nr0 -> $(prop NRestarts))"
    kill -0 "$NOTES_BG" 2>/dev/null || { why "the Notes component lost its connection (it exits then)"; return 1; }
    call_done() { ! kill -0 "$call_bg" 2>/dev/null; }
    wait_for 10 call_done || { why "the call in flight was not answered"; return 1; }
    has component_unavailable <"$W/crash-call.err" ||
        { why "the call in flight ended with: $(cat "$W/crash-call.out" "$W/crash-call.err" | tr '\n' ' ')"; return 1; }
    kill -0 "$listen_bg" 2>/dev/null || { why "mediatorctl listen exited: $(cat "$W/crash-listen.err")"; return 1; }
    cx mediatorctl emit crash.after >/dev/null 2>&1
    wait_for 5 file_has "$W/crash-listen.out" crash.after ||
        { why "the subscriber connected before the crash missed an event sent after it"; return 1; }
    out=$(cx mediatorctl --json call Notes list 2>&1) || { why "call Notes list after the crash: $out"; return 1; }
    kill -TERM "$listen_bg" 2>/dev/null
    return 0
}

s3d_upgrade_by_reload() {
    local dir=/etc/mediator-upgrade dropin=/etc/systemd/system/$UNIT.d/upgrade.conf out
    cx mkdir -p "$dir" && cx cp "$IN_BIN/mediatord" "$dir/mediatord" || { why "cannot copy mediatord to $dir"; return 1; }
    printf '[Service]\nExecStart=\nExecStart=%s/mediatord --log-target journal --fd-store\n' "$dir" | cx_write "$dropin"
    cx systemctl daemon-reload
    out=$(cx systemctl restart $UNIT 2>&1) || { why "restart with the copied binary: $out"; journal_tail; return 1; }
    wait_for 10 is_active || { why "not active on the copied binary"; return 1; }
    cx_bg "$W/upgrade-notes.out" "$W/upgrade-notes.err" python3 "$IN_EXAMPLES/python/notes_component.py" --socket "$SOCK" --target Upgraded
    local notes_bg=$BG
    wait_for 10 file_has "$W/upgrade-notes.out" ready || { why "the Upgraded component did not register"; return 1; }
    listen_for upgrade || return 1
    local listen_bg=$BG pid0 nr0 before
    pid0=$(prop MainPID)
    nr0=$(prop NRestarts)
    before=$(cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; print([i["instance"] for t in json.load(sys.stdin)["targets"] if t["target"]=="Upgraded" for i in t["instances"]])')
    # The upgrade: a new file under the old name; the running inode is then deleted.
    cx cp "$IN_BIN/mediatord" "$dir/mediatord.new" && cx mv "$dir/mediatord.new" "$dir/mediatord"
    has '(deleted)' <<<"$(cx readlink /proc/"$pid0"/exe)" || { why "the running binary is not seen as replaced"; return 1; }
    out=$(cx systemctl reload $UNIT 2>&1) || { why "systemctl reload: $out"; journal_tail; return 1; }
    runs_new() { [ "$(cx readlink /proc/"$pid0"/exe 2>/dev/null)" = "$dir/mediatord" ]; }
    wait_for 10 runs_new || { why "after the reload pid $pid0 runs '$(cx readlink /proc/"$pid0"/exe)'"; journal_tail; return 1; }
    running() { [ "$(prop ActiveState)/$(prop SubState)" = active/running ]; }
    wait_for 5 running || { why "after the upgrade: $(prop ActiveState)/$(prop SubState)"; return 1; }
    [ "$(prop MainPID)" = "$pid0" ] || { why "MainPID changed ($pid0 -> $(prop MainPID))"; return 1; }
    [ "$(prop NRestarts)" = "$nr0" ] || { why "NRestarts went from $nr0 to $(prop NRestarts)"; return 1; }
    local after
    after=$(cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; print([i["instance"] for t in json.load(sys.stdin)["targets"] if t["target"]=="Upgraded" for i in t["instances"]])')
    [ "$after" = "$before" ] || { why "Upgraded instances changed: $before -> $after"; return 1; }
    kill -0 "$notes_bg" 2>/dev/null || { why "the Upgraded component lost its connection"; return 1; }
    cx mediatorctl emit upgrade.after >/dev/null 2>&1
    wait_for 5 file_has "$W/upgrade-listen.out" upgrade.after || { why "the subscriber missed an event sent after the upgrade"; return 1; }
    say "upgraded in place: MainPID $pid0 runs the new $dir/mediatord, instance $after kept"
    # Back to the unit as rendered, for the scenarios after this one.
    kill -TERM "$listen_bg" "$notes_bg" 2>/dev/null
    cx rm -f "$dropin"
    cx systemctl daemon-reload
    cx systemctl restart $UNIT >/dev/null 2>&1
    wait_for 10 is_active || { why "not active again on the rendered unit"; return 1; }
    return 0
}

# Starts restart-load.py MODE ... in the container (results in /run/restart-load).
RL_DIR=/run/restart-load
restart_load() {
    local name=$1
    shift
    cx_bg "$W/load-$name.out" "$W/load-$name.err" python3 /opt/mediator-restart-load.py "$@"
    BG=$BG
}

s3e_restart() {
    # The Notes component of scenario 2, under a target of its own (scenario
    # 3d's last restart, before the bus runs, was a stop: that one is gone).
    cx_bg "$W/rnotes.out" "$W/rnotes.err" python3 "$IN_EXAMPLES/python/notes_component.py" --socket "$SOCK" --target RNotes
    local rnotes_bg=$BG
    wait_for 10 file_has "$W/rnotes.out" ready || { why "the RNotes component did not register"; return 1; }
    cx mediatorctl call RNotes add text=hi >/dev/null 2>&1 || { why "call RNotes add failed"; return 1; }
    # A pool of two, beside the exclusive RNotes.
    local pool_bgs=() p
    for p in 1 2; do
        cx_bg "$W/rpool$p.out" "$W/rpool$p.err" python3 "$IN_EXAMPLES/python/notes_component.py" --socket "$SOCK" --target RPool --mode pool
        pool_bgs+=("$BG")
        wait_for 10 file_has "$W/rpool$p.out" ready || { why "RPool member $p did not register"; return 1; }
    done
    # The daemon asks PID 1 over the system bus which job it runs at SIGTERM.
    local out
    # dbus.service itself, not only its socket: the first restart's question
    # would otherwise wait for the bus daemon's activation (about 130 ms).
    out=$(cx systemctl start dbus.socket dbus.service 2>&1) || { why "cannot start the system bus: $out"; return 1; }
    is_active || { why "mediatord.service is not active at the start"; return 1; }
    cx mkdir -p "$RL_DIR" && cx sh -c "rm -f $RL_DIR/*" &&
        cx_write /opt/mediator-restart-load.py <"$REPO/Tests/systemd/restart-load.py" ||
        { why "cannot install restart-load.py in the container"; return 1; }
    # Managed components (the daemon starts them): with KillMode=process they
    # run on across every restart, handed over with their pidfds and pipes
    # (docs/systemd.md), so their pids must not change.
    local m
    for m in Managed Managed2; do
        printf '{"target":"%s","actions":["echo","whoami"],"exec":["/usr/bin/python3","%s/python/notes_component.py","--target","%s","--socket","%s"]}\n' \
            "$m" "$IN_EXAMPLES" "$m" "$SOCK" | cx_write /etc/mediator/components.d/$m.json || { why "cannot write the $m manifest"; return 1; }
    done
    # Gated: a managed component that cannot register until $RL_DIR/gate
    # exists, so that calls to it are held (by the daemon) across the first
    # restarts: the snapshot carries them and the new daemon forwards them.
    printf '{"target":"Gated","actions":["echo"],"start_timeout_s":60,"exec":["/bin/sh","-c","while [ ! -e %s/gate ]; do sleep 0.05; done; exec /usr/bin/python3 %s/python/notes_component.py --target Gated --socket %s"]}\n' \
        "$RL_DIR" "$IN_EXAMPLES" "$SOCK" | cx_write /etc/mediator/components.d/Gated.json || { why "cannot write the Gated manifest"; return 1; }
    cx chmod -R a+rX /etc/mediator || { why "cannot make the manifests readable"; return 1; }
    out=$(cx systemctl reload $UNIT 2>&1) || { why "systemctl reload (manifests): $out"; return 1; }
    managed_pid() { cx mediatorctl --json call "${1:-Managed}" whoami --timeout 10 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null; }
    local managed_before managed2_before
    managed_before=$(wait_for 10 managed_pid >/dev/null && managed_pid)
    managed2_before=$(wait_for 10 managed_pid Managed2 >/dev/null && managed_pid Managed2)
    [ -n "$managed_before" ] && [ -n "$managed2_before" ] ||
        { why "the managed components did not answer before the restarts"; journal_tail; return 1; }
    # Twenty callers: ten on the exclusive RNotes, ten on the RPool pool.
    local i t bgs=() callers=""
    for i in $(seq 1 20); do
        if [ "$i" -le 10 ]; then t=RNotes; else t=RPool; fi
        restart_load call$i call "$SOCK" "$RL_DIR/call$i.json" "$RL_DIR/stop" "$t" echo; bgs+=("$BG")
        callers="$callers call$i"
    done
    restart_load ping call "$SOCK" "$RL_DIR/ping.json" "$RL_DIR/stop" mediator ping; bgs+=("$BG")
    restart_load listen listen "$SOCK" "$RL_DIR/listen.json" "$RL_DIR/stop" rs; bgs+=("$BG")
    subscribed() { cx mediatorctl --json emit rs.probe 2>/dev/null | has '"delivered":[1-9]'; }
    wait_for 10 subscribed || { why "the subscriber did not subscribe within 10 s"; return 1; }
    restart_load emit emit "$SOCK" "$RL_DIR/emit.json" "$RL_DIR/stop" rs; bgs+=("$BG")
    # Streams in progress: a component answering each call with 20 partials
    # 10 ms apart, and a client asking for one stream after another.
    restart_load stream-serve stream-serve "$SOCK" "$RL_DIR/stream-serve.json" "$RL_DIR/stop" RStream; bgs+=("$BG")
    rstream_registered() { cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if any(t["target"]=="RStream" and t["instances"] for t in json.load(sys.stdin)["targets"]) else 1)'; }
    wait_for 10 rstream_registered || { why "the RStream component did not register"; return 1; }
    restart_load stream stream "$SOCK" "$RL_DIR/stream.json" "$RL_DIR/stop" RStream; bgs+=("$BG")
    sleep 0.5
    local before cursor nr0 pids pid prev t0 took longest=0
    rnotes_instance() { cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; print([(i["instance"], i["pid"]) for t in json.load(sys.stdin)["targets"] if t["target"]=="RNotes" for i in t["instances"]])'; }
    before=$(rnotes_instance)
    rpool_instances() { cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; print(sorted((i["instance"], i["pid"]) for t in json.load(sys.stdin)["targets"] if t["target"]=="RPool" for i in t["instances"]))'; }
    local pool_before
    pool_before=$(rpool_instances)
    # Three calls held for Gated while it starts, across restarts 1 and 2.
    local held_bgs=() k
    for k in 1 2 3; do
        cx_bg "$W/held$k.out" "$W/held$k.err" mediatorctl --json call Gated echo text=held$k --timeout 60
        held_bgs+=("$BG")
    done
    gated_held() { cx mediatorctl --json call mediator status target=Gated 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("held_calls") == 3 else 1)'; }
    wait_for 10 gated_held || { why "the calls to Gated were not held: $(cx mediatorctl --json call mediator status target=Gated 2>&1)"; return 1; }
    cursor=$(journal_cursor)
    nr0=$(prop NRestarts)
    prev=$(prop MainPID)
    pids=$prev
    : >"$W/restart-times"
    for i in 1 2 3 4 5 6 7 8 9 10; do
        if [ "$i" = 3 ]; then
            gated_held || { why "after two restarts the new daemon does not hold the calls to Gated: $(cx mediatorctl --json call mediator status target=Gated 2>&1)"; return 1; }
            cx touch "$RL_DIR/gate"
        fi
        t0=$(date +%s%N)
        out=$(cx systemctl restart $UNIT 2>&1) || { why "systemctl restart $i: $out"; journal_tail; return 1; }
        took=$(( ($(date +%s%N) - t0) / 1000000 ))
        [ $took -gt $longest ] && longest=$took
        echo "$t0" >>"$W/restart-times"
        pid=$(prop MainPID)
        [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != "$prev" ] || { why "restart $i: MainPID $prev -> $pid"; return 1; }
        is_active || { why "restart $i: $(prop ActiveState)/$(prop SubState)"; journal_tail; return 1; }
        prev=$pid
        pids="$pids $pid"
        # systemd's default start limit (more than 5 starts in 10 s fail,
        # docs/systemd.md "Crash loops") counts restarts too: 2.1 s apart.
        sleep 2.1
    done
    say "10 restarts, MainPIDs $pids; the longest systemctl restart $longest ms"
    held_done() { local b; for b in "${held_bgs[@]}"; do kill -0 "$b" 2>/dev/null && return 1; done; return 0; }
    wait_for 30 held_done || { why "the calls held for Gated were not answered"; journal_tail; return 1; }
    for k in 1 2 3; do
        grep -q "\"text\": *\"held$k\"" "$W/held$k.out" ||
            { why "the call held for Gated across two restarts got '$(cat "$W/held$k.out")' $(cat "$W/held$k.err")"; journal_tail; return 1; }
    done
    say "three calls held for the starting Gated across two restarts: carried, forwarded once it registered, each answered"
    cx touch "$RL_DIR/stop"
    local name
    results_in() { for name in $callers ping listen emit stream stream-serve; do cx test -s "$RL_DIR/$name.json" || return 1; done; }
    wait_for 15 results_in || { why "the load did not report: $(cat "$W"/load-*.err | tail -5 | tr '\n' ' ')"; return 1; }
    for name in $callers ping listen emit stream stream-serve; do cx cat "$RL_DIR/$name.json" >"$W/rl-$name.json"; done
    cx journalctl -u $UNIT --after-cursor="$cursor" --no-pager -o short-unix >"$W/restart-journal" 2>/dev/null
    cx journalctl -u $UNIT --after-cursor="$cursor" --no-pager -o json >"$W/restart-journal.json" 2>/dev/null
    local check
    check=$(python3 - "$W" $callers <<'PY'
import json, sys, re
w = sys.argv[1]
bad = []
calls = {n: json.load(open("%s/rl-%s.json" % (w, n))) for n in sys.argv[2:] + ["ping"]}
listen = json.load(open(w + "/rl-listen.json"))
emit = json.load(open(w + "/rl-emit.json"))
for n, r in calls.items():
    if r["closed"]: bad.append("%s: its connection closed" % n)
    if r["unanswered"] or r["duplicates"]: bad.append("%s: %d unanswered, %d answered twice" % (n, r["unanswered"], r["duplicates"]))
    if r["errors"]: bad.append("%s: errors %s" % (n, sorted(set(r["errors"]))))
    if r["answered"] != r["calls"]: bad.append("%s: %d calls, %d answered" % (n, r["calls"], r["answered"]))
    if r["daemon_events"]: bad.append("%s: got %s" % (n, r["daemon_events"]))
if listen["closed"] or emit["closed"]: bad.append("the subscriber or the emitter lost its connection")
if listen["daemon_events"]: bad.append("the subscriber got %s" % listen["daemon_events"])
got = [int(e.split(".")[1]) for e in listen["events"] if re.fullmatch(r"rs\.\d+", e)]
want = list(range(1, emit["emitted"] + 1))
if sorted(got) != want:
    missing = sorted(set(want) - set(got)); twice = len(got) - len(set(got))
    bad.append("events: %d emitted, %d received, missing %s, %d twice" % (len(want), len(got), missing[:10], twice))
if emit.get("failed") or emit["delivered_zero"]: bad.append("emitter: %s failed, %d delivered to nobody" % (emit.get("failed"), emit["delivered_zero"]))
stream = json.load(open(w + "/rl-stream.json"))
serve = json.load(open(w + "/rl-stream-serve.json"))
if stream["closed"] or serve["closed"]: bad.append("the stream client or its component lost its connection")
if stream["bad"]: bad.append("streams: %s" % stream["bad"][:3])
if stream["errors"] or stream["unanswered"]: bad.append("streams: errors %s, %d unanswered" % (sorted(set(stream["errors"])), stream["unanswered"]))
if stream["complete"] != stream["streams"]: bad.append("streams: %d asked, %d complete" % (stream["streams"], stream["complete"]))
if stream["daemon_events"] or serve["daemon_events"]: bad.append("the stream peers got %s" % (stream["daemon_events"] + serve["daemon_events"]))
# The figures: the longest call, and per restart the first answer after the new daemon said it carries on.
resumed, stopping, handed = [], [], []
for line in open(w + "/restart-journal"):
    t = float(line.split()[0]) * 1000.0
    if "carrying on after a restart" in line: resumed.append(t)
    elif "Stopping mediatord.service" in line: stopping.append(t)
    elif "everything handed to the next daemon" in line: handed.append(t)
starts = [int(x) / 1e6 for x in open(w + "/restart-times").read().split()]
answers = sorted(a[0] for r in calls.values() for a in r["answers"])
if len(resumed) != len(starts): bad.append("%d restarts, %d 'carrying on after a restart' in the journal" % (len(starts), len(resumed)))
first, from_term, gap = [], [], []
for t0, t_resume, t_term, t_handed in zip(starts, resumed, stopping, handed):
    after = [a for a in answers if a >= t_resume]
    if after:
        first.append(after[0] - t0)
        from_term.append(after[0] - t_term)
        gap.append(after[0] - t_handed)
total = sum(r["calls"] for r in calls.values())
longest = max(r["max_ms"] for r in calls.values())
def span(v):
    v = sorted(v)
    return "median %.0f, max %.0f ms" % (v[len(v) // 2], v[-1]) if v else "none"
print("%s|calls %d, every one answered once; the longest call %.1f ms; the first call served by the new daemon after: the restart command %s, SIGTERM %s, the old daemon's hand-over %s (n=%d); %d events, none lost; %d streams of 20 partials, each whole and in order (the longest wait between two answers of a stream %.1f ms)" % (
    "; ".join(bad), total, longest, span(first), span(from_term), span(gap), len(first), len(got), stream["complete"], stream["max_gap_ms"]))
PY
)
    local problems=${check%%|*} figures=${check#*|}
    say "$figures"
    if [ -n "$problems" ]; then
        why "$problems"
        # The errors the daemons logged (the metadata the short form leaves out).
        python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "MEDIATOR_ERROR" in r or "MEDIATOR_REASON" in r:
        print("%s: %s (%s)" % (r.get("_PID"), r.get("MESSAGE"), r.get("MEDIATOR_ERROR") or r.get("MEDIATOR_REASON")))' \
            "$W/restart-journal.json" 2>/dev/null | head -5 | while IFS= read -r line; do why "  $line"; done
        return 1
    fi
    [ "$(rnotes_instance)" = "$before" ] || { why "RNotes instances changed: '$before' -> '$(rnotes_instance)'"; return 1; }
    kill -0 "$rnotes_bg" 2>/dev/null || { why "the RNotes component exited (its connection closed)"; return 1; }
    if has -e 'clean restart' -e 'without a hand-over' -e 'is a stop' <"$W/restart-journal"; then
        why "the journal shows a fallback:"; why "$(grep -m3 -e 'clean restart' -e 'without a hand-over' -e 'is a stop' "$W/restart-journal")"; return 1
    fi
    out=$(cx mediatorctl --json call RNotes list 2>&1) || { why "call RNotes list after the restarts: $out"; return 1; }
    grep -q '"hi"' <<<"$out" || { why "the note added before the restarts is gone: $out"; return 1; }
    local managed_after managed2_after
    managed_after=$(managed_pid)
    managed2_after=$(managed_pid Managed2)
    [ -n "$managed_after" ] && [ -n "$managed2_after" ] ||
        { why "the managed components do not answer after the restarts"; journal_tail; return 1; }
    [ "$managed_after" = "$managed_before" ] && [ "$managed2_after" = "$managed2_before" ] || {
        why "the managed components did not survive the restarts: pids $managed_before and $managed2_before before, $managed_after and $managed2_after after"
        journal_tail; return 1
    }
    if has -e 'ended during the restart' -e 'component processes a predecessor left' <"$W/restart-journal"; then
        why "a managed component was lost in a restart: $(grep -m2 -e 'ended during the restart' -e 'predecessor left' "$W/restart-journal")"; return 1
    fi
    local leftover
    leftover=$(grep -c 'Found left-over process' "$W/restart-journal")
    say "the managed components kept their pids $managed_before and $managed2_before across the restarts, and answer ($leftover of systemd's 'Found left-over process' notices)"
    # Still supervised by a daemon that is not their parent: an end it did
    # not ask for (SIGKILL from outside) has no exit status and counts as
    # a failure, so Managed2 (restart: on-failure) is restarted.
    status2() { cx mediatorctl --json call mediator status target=Managed2 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("restarts"), "|", r.get("last_exit"))' 2>/dev/null; }
    local restarts2 now2
    restarts2=$(status2); restarts2=${restarts2%% |*}
    cx kill -KILL "$managed2_after"
    restarted2() { now2=$(status2); [ "${now2%% |*}" = "$((restarts2 + 1))" ] && has 'no exit status' <<<"$now2"; }
    wait_for 10 restarted2 || { why "Managed2 was not restarted after an unexplained end: '$restarts2' -> '$(status2)'"; journal_tail; return 1; }
    managed2_restarted() { local p; p=$(managed_pid Managed2); [ -n "$p" ] && [ "$p" != "$managed2_after" ]; }
    wait_for 10 managed2_restarted || { why "Managed2 does not answer after its restart"; return 1; }
    say "Managed2 killed from outside: restarted by the new daemon (status: $(status2))"
    for p in "${pool_bgs[@]}"; do kill -0 "$p" 2>/dev/null || { why "an RPool member exited (its connection closed)"; return 1; }; done
    [ "$(rpool_instances)" = "$pool_before" ] || { why "RPool instances changed: '$pool_before' -> '$(rpool_instances)'"; return 1; }
    kill -TERM "${pool_bgs[@]}" 2>/dev/null
    return 0
}

# A crash under load (issue 28): SIGSEGV three times while four clients
# call an external component in a loop, one pings, a publisher publishes and
# a subscriber listens, all on connections the fd store keeps. Each peer
# gets mediator.reregister from the new daemon: the component (the Python
# library) registers again by itself, the subscriber subscribes again, and
# the call each client had in flight is failed once, as the protocol
# says (component_unavailable), its late answer, if any, dropped; a call
# made before the component is back waits for it (the re-registration
# hold). Required: no connection closed, every call answered exactly once
# with its result or that error, at most one such error per client per
# crash, no target_not_found, the component
# registered again within 1 s of each SIGSEGV, and events flowing again.
# A managed component (CManaged, the daemon starts it from a manifest),
# called in a loop by a fifth client, survives each crash
# (KillMode=process) and registers again on its connection: each new
# daemon takes it back as that component's process (claimed by its pid),
# so it keeps its pid and its connection and is supervised again.
s3h_crash_under_load() {
    is_active || { why "mediatord.service is not active at the start"; return 1; }
    cx_bg "$W/cnotes.out" "$W/cnotes.err" python3 "$IN_EXAMPLES/python/notes_component.py" --socket "$SOCK" --target CNotes
    local cnotes_bg=$BG
    wait_for 10 file_has "$W/cnotes.out" ready || { why "the CNotes component did not register"; return 1; }
    local dir=$RL_DIR/crash
    cx mkdir -p "$dir" && cx sh -c "rm -f $dir/*" &&
        cx_write /opt/mediator-restart-load.py <"$REPO/Tests/systemd/restart-load.py" ||
        { why "cannot install restart-load.py in the container"; return 1; }
    # A managed component (the daemon starts it), called in a loop too: it
    # survives each crash (KillMode=process) and registers again on its
    # kept connection, and the next daemon supervises it again (claimed by
    # its pid), so its pid must not change and its connection must stay
    # open (without --reconnect a lost connection would end it).
    local out
    printf '{"target":"CManaged","actions":["echo","whoami"],"exec":["/usr/bin/python3","%s/python/notes_component.py","--target","CManaged","--socket","%s"]}\n' \
        "$IN_EXAMPLES" "$SOCK" | cx_write /etc/mediator/components.d/CManaged.json || { why "cannot write the CManaged manifest"; return 1; }
    cx chmod -R a+rX /etc/mediator || { why "cannot make the manifests readable"; return 1; }
    out=$(cx systemctl reload $UNIT 2>&1) || { why "systemctl reload (manifests): $out"; return 1; }
    managed_pid_of() { cx mediatorctl --json call "$1" whoami --timeout 10 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null; }
    local cmanaged_pid
    cmanaged_pid=$(wait_for 10 managed_pid_of CManaged >/dev/null && managed_pid_of CManaged)
    [ -n "$cmanaged_pid" ] || { why "the managed CManaged component did not answer"; journal_tail; return 1; }
    local i
    for i in 1 2 3 4; do restart_load crash-call$i call "$SOCK" "$dir/call$i.json" "$dir/stop" CNotes echo; done
    restart_load crash-mcall call "$SOCK" "$dir/mcall.json" "$dir/stop" CManaged echo
    restart_load crash-ping call "$SOCK" "$dir/ping.json" "$dir/stop" mediator ping
    restart_load crash-listen listen "$SOCK" "$dir/listen.json" "$dir/stop" cr
    subscribed() { cx mediatorctl --json emit cr.probe 2>/dev/null | has '"delivered":[1-9]'; }
    wait_for 10 subscribed || { why "the subscriber did not subscribe within 10 s"; return 1; }
    restart_load crash-emit emit "$SOCK" "$dir/emit.json" "$dir/stop" cr
    sleep 0.5
    cnotes_registered() { cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if any(t["target"]=="CNotes" and t["instances"] for t in json.load(sys.stdin)["targets"]) else 1)'; }
    cmanaged_registered() { cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if any(t["target"]=="CManaged" and t["instances"] for t in json.load(sys.stdin)["targets"]) else 1)'; }
    local pid0 t0 pids="" cursor status
    # The managed components of scenario 3e, when it ran: kept the same way.
    local m managed_before=""
    for m in Managed Managed2; do
        cx test -f /etc/mediator/components.d/$m.json && managed_before="$managed_before $m=$(managed_pid_of $m)"
    done
    : >"$W/crash-times"
    cursor=$(journal_cursor)
    for i in 1 2 3; do
        pid0=$(prop MainPID)
        t0=$(now_ms)
        echo "$t0" >>"$W/crash-times"
        cx kill -SEGV "$pid0"
        new_daemon() { local p; p=$(prop MainPID); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$pid0" ] && is_active; }
        wait_for 10 new_daemon || { why "crash $i: no new daemon 10 s after SIGSEGV: $(prop ActiveState)/$(prop SubState)"; journal_tail; return 1; }
        wait_for 5 cnotes_registered || { why "crash $i: CNotes did not register again within 5 s"; journal_tail; return 1; }
        wait_for 5 cmanaged_registered || { why "crash $i: CManaged did not register again within 5 s"; journal_tail; return 1; }
        pids="$pids $pid0->$(prop MainPID)"
        # systemd's start limit (5 starts in 10 s) counts these restarts too.
        sleep 2.5
    done
    say "3 crashes ($pids)"
    # Each daemon after a crash took CManaged back as it registered again.
    local claimed
    claimed=$(journal_since "$cursor" | grep -c 'a component process left by the crash registered again')
    [ "$claimed" -ge 3 ] || {
        why "the daemons after the crashes took back a left-over component $claimed times for 3 crashes"
        journal_since "$cursor" | grep -e 'left' -e 'component process' -e 'fd store' | tail -12 | while IFS= read -r line; do why "  $line"; done
        return 1
    }
    if journal_since "$cursor" | has -e 'ending component processes a predecessor left' -e 'did not register again in time'; then
        why "a daemon after a crash ended a managed component: $(journal_since "$cursor" | grep -m2 -e 'predecessor left' -e 'in time')"; return 1
    fi
    local managed_after=""
    for m in Managed Managed2; do
        cx test -f /etc/mediator/components.d/$m.json && managed_after="$managed_after $m=$(managed_pid_of $m)"
    done
    [ "$managed_after" = "$managed_before" ] || { why "the managed components of scenario 3e changed:$managed_before ->$managed_after"; return 1; }
    say "the managed CManaged (pid $cmanaged_pid) was taken back after each crash ($claimed times)${managed_before:+; those of scenario 3e kept too:$managed_before}"
    cx touch "$dir/stop"
    local name
    results_in() { for name in call1 call2 call3 call4 mcall ping listen emit; do cx test -s "$dir/$name.json" || return 1; done; }
    wait_for 15 results_in || { why "the load did not report: $(cat "$W"/load-crash-*.err | tail -5 | tr '\n' ' ')"; return 1; }
    for name in call1 call2 call3 call4 mcall ping listen emit; do cx cat "$dir/$name.json" >"$W/cr-$name.json"; done
    cx journalctl -u $UNIT --after-cursor="$cursor" --no-pager -o json >"$W/crash-journal.json" 2>/dev/null
    local check
    check=$(python3 - "$W" 3 <<'PY'
import json, re, sys
w, crashes = sys.argv[1], int(sys.argv[2])
bad = []
calls = {n: json.load(open("%s/cr-%s.json" % (w, n))) for n in ["call1", "call2", "call3", "call4", "mcall", "ping"]}
listen = json.load(open(w + "/cr-listen.json"))
emit = json.load(open(w + "/cr-emit.json"))
failed = unknown = 0
for n, r in calls.items():
    if r["closed"]: bad.append("%s: its connection closed" % n)
    if r["unanswered"] or r["duplicates"]: bad.append("%s: %d unanswered, %d answered twice" % (n, r["unanswered"], r["duplicates"]))
    if r["answered"] != r["calls"]: bad.append("%s: %d calls, %d answered" % (n, r["calls"], r["answered"]))
    other = sorted(set(e for e in r["errors"] if e not in ("component_unavailable", "target_not_found")))
    if other: bad.append("%s: errors %s" % (n, other))
    lost = r["errors"].count("component_unavailable")
    failed += lost
    if lost > crashes: bad.append("%s: %d calls failed over %d crashes" % (n, lost, crashes))
    # A call made after a crash, before the component registered again, is
    # held by the new daemon until it does (reregister_hold_ms): never
    # target_not_found for a component that comes back within the hold.
    unknown += r["errors"].count("target_not_found")
    if "target_not_found" in r["errors"]: bad.append("%s: %d calls answered target_not_found (the re-registration hold should have kept them)" % (n, r["errors"].count("target_not_found")))
    if len(r["reregister_at"]) != crashes: bad.append("%s: mediator.reregister %d times for %d crashes" % (n, len(r["reregister_at"]), crashes))
if listen["closed"] or emit["closed"]: bad.append("the subscriber or the publisher lost its connection")
if len(listen["reregister_at"]) != crashes: bad.append("the subscriber got mediator.reregister %d times for %d crashes" % (len(listen["reregister_at"]), crashes))
got = set(int(e.split(".")[1]) for e in listen["events"] if re.fullmatch(r"cr\.\d+", e))
last = emit["emitted"]
# Events published between a crash and the subscriber's new subscription
# are not delivered (no daemon knew of it); the last ones must be.
tail = [n for n in range(max(1, last - 5), last + 1) if n not in emit["lost"]]
if not tail or any(n not in got for n in tail): bad.append("events after the last crash not delivered: %s" % [n for n in tail if n not in got])
if emit.get("failed"): bad.append("publisher: %s failed" % emit.get("failed"))
total = sum(r["calls"] for r in calls.values())
late = sum(r["late"] for r in calls.values())
# When the new daemon told the peers: the earliest mediator.reregister after each SIGSEGV.
kills = [float(x) for x in open(w + "/crash-times").read().split()]
heard = sorted(t for r in list(calls.values()) + [listen] for t in r["reregister_at"])
told = ["%.0f" % (min([t for t in heard if t >= k] or [float("nan")]) - k) for k in kills]
# When the components registered again, from the daemon's journal.
registered = {"CNotes": [], "CManaged": []}
for line in open(w + "/crash-journal.json"):
    try: r = json.loads(line)
    except ValueError: continue
    if r.get("MESSAGE") == "target registered" and r.get("MEDIATOR_TARGET") in registered:
        registered[r["MEDIATOR_TARGET"]].append(int(r["__REALTIME_TIMESTAMP"]) / 1000.0)
again = {"CNotes": [], "CManaged": []}
for target, times in registered.items():
    for k in kills:
        after = [t for t in times if t >= k]
        if not after: bad.append("%s did not register again after the SIGSEGV at %.0f" % (target, k)); continue
        again[target].append(after[0] - k)
        if after[0] - k > 1000: bad.append("%s registered again %.0f ms after a SIGSEGV (the target is 1 s)" % (target, after[0] - k))
print("%s|the new daemon's mediator.reregister %s ms, CNotes registered again %s ms and the managed CManaged %s ms after each SIGSEGV; %d calls, every one answered once: %d failed component_unavailable at the crashes, %d target_not_found, %d late answers dropped; the longest call %.1f ms; %d of %d events received (%d publishes lost at the crashes)" % (
    "; ".join(bad), "/".join(told), "/".join("%.0f" % t for t in again["CNotes"]), "/".join("%.0f" % t for t in again["CManaged"]), total, failed, unknown, late, max(r["max_ms"] for r in calls.values()), len(got), last, len(emit["lost"])))
PY
)
    local problems=${check%%|*} figures=${check#*|}
    say "$figures"
    [ -z "$problems" ] || { why "$problems"; return 1; }
    kill -0 "$cnotes_bg" 2>/dev/null || { why "the CNotes component exited (its connection closed)"; return 1; }
    out=$(cx mediatorctl --json call CNotes list 2>&1) || { why "call CNotes list after the crashes: $out"; return 1; }
    # The same process, alive, on the connection it had (instances list the peer's pid).
    cx kill -0 "$cmanaged_pid" 2>/dev/null || { why "the managed CManaged (pid $cmanaged_pid) no longer runs"; return 1; }
    local cmanaged_after
    cmanaged_after=$(managed_pid_of CManaged)
    [ "$cmanaged_after" = "$cmanaged_pid" ] || { why "CManaged's pid changed across the crashes: $cmanaged_pid -> $cmanaged_after"; journal_tail; return 1; }
    cx mediatorctl --json list 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if [i["pid"] for t in json.load(sys.stdin)["targets"] if t["target"]=="CManaged" for i in t["instances"]] == [int(sys.argv[1])] else 1)' "$cmanaged_pid" ||
        { why "CManaged is not registered by its one process $cmanaged_pid"; return 1; }
    status=$(cx mediatorctl --json call mediator status target=CManaged 2>/dev/null)
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r.get("state")=="running" and r.get("pids")==[int(sys.argv[2])] else 1)' "$status" "$cmanaged_pid" ||
        { why "the daemon does not supervise CManaged's process: $status"; return 1; }
    say "CManaged kept pid $cmanaged_pid and its connection across the crashes, supervised again (status: $status)"
    kill -TERM "$cnotes_bg" 2>/dev/null
    return 0
}

# A stop is still a stop: peers see their connections end (after
# mediator.restarting), and the next start serves afresh.
s3f_stop_ends_connections() {
    is_active || { why "mediatord.service is not active at the start"; return 1; }
    local dir=$RL_DIR/stop-test
    cx mkdir -p "$dir" && cx sh -c "rm -f $dir/*"
    # The managed components of scenario 3e run (started again if need be): the stop must end them.
    cx mediatorctl call Managed echo --timeout 10 >/dev/null 2>&1 && cx mediatorctl call Managed2 echo --timeout 10 >/dev/null 2>&1 &&
        cx pgrep -f -- '--target Managed2' >/dev/null ||
        { why "the managed component (scenario 3e) does not run before the stop"; return 1; }
    restart_load stop-listen listen "$SOCK" "$dir/listen.json" "$dir/stop" st
    restart_load stop-call call "$SOCK" "$dir/call.json" "$dir/stop" mediator ping
    subscribed() { cx mediatorctl --json emit st.probe 2>/dev/null | has '"delivered":[1-9]'; }
    wait_for 10 subscribed || { why "the subscriber did not subscribe"; return 1; }
    local cursor t0 out
    cursor=$(journal_cursor)
    t0=$(now_ms)
    out=$(cx systemctl stop $UNIT 2>&1) || { why "systemctl stop: $out"; return 1; }
    local took=$(( $(now_ms) - t0 ))
    ended() { cx test -s "$dir/listen.json" && cx test -s "$dir/call.json"; }
    wait_for 5 ended || { why "5 s after systemctl stop a peer still has its connection"; journal_tail; return 1; }
    local listen call
    listen=$(cx cat "$dir/listen.json"); call=$(cx cat "$dir/call.json")
    has '"closed": true' <<<"$listen" || { why "the subscriber was not disconnected: $listen"; return 1; }
    has '"closed": true' <<<"$call" || { why "the caller was not disconnected"; return 1; }
    has 'mediator.restarting' <<<"$listen" || { why "the subscriber got no mediator.restarting before the close: $listen"; return 1; }
    journal_since "$cursor" | has 'is a stop, not a restart' || { why "the daemon did not log the stop as a stop"; journal_tail; return 1; }
    # KillMode=process: systemd ends only the daemon, which must have ended
    # its components (and waited for them) before it exited.
    managed_gone() { ! cx pgrep -f -- '--target Managed' >/dev/null; }
    wait_for 1 managed_gone || { why "a managed component still runs after the stop: $(cx pgrep -af -- '--target Managed')"; return 1; }
    journal_since "$cursor" | has 'every component process ended' ||
        { why "the daemon did not log that its components ended"; journal_tail; return 1; }
    out=$(cx systemctl start $UNIT 2>&1) || { why "systemctl start after the stop: $out"; return 1; }
    ping_ok || { why "no ping after the start"; return 1; }
    journal_since "$cursor" | has 'carrying on after a restart' && { why "the start after a stop resumed a hand-over"; return 1; }
    say "systemctl stop took $took ms; both peers saw their connections end; started again"
    return 0
}

# A new daemon that cannot read the hand-over's snapshot (another version,
# by the test hook) falls back as a re-exec's new image does: every peer
# gets mediator.restarting and its connection ends; the daemon serves afresh.
s3g_restart_fallback() {
    is_active || { why "mediatord.service is not active at the start"; return 1; }
    local exec_line dropin=/run/systemd/system/$UNIT.d/fallback.conf out
    exec_line=$(grep -m1 '^ExecStart=' "$W/units/mediatord.service")
    printf '[Service]\nEnvironment=MEDIATORD_TEST_SNAPSHOT_VERSION=999\nExecStart=\n%s --test-hooks\n' "$exec_line" |
        cx_write "$dropin" && cx systemctl daemon-reload || { why "cannot install the drop-in"; return 1; }
    # This restart is handed over by a daemon without the hook; the next one by one with it.
    out=$(cx systemctl restart $UNIT 2>&1) || { why "systemctl restart onto the hook: $out"; return 1; }
    local dir=$RL_DIR/fallback
    cx mkdir -p "$dir" && cx sh -c "rm -f $dir/*"
    restart_load fb-listen listen "$SOCK" "$dir/listen.json" "$dir/stop" fb
    subscribed() { cx mediatorctl --json emit fb.probe 2>/dev/null | has '"delivered":[1-9]'; }
    wait_for 10 subscribed || { why "the subscriber did not subscribe"; return 1; }
    local cursor
    cursor=$(journal_cursor)
    sleep 2.1   # the start limit
    out=$(cx systemctl restart $UNIT 2>&1) || { why "systemctl restart with the hook: $out"; journal_tail; return 1; }
    ended() { cx test -s "$dir/listen.json"; }
    wait_for 5 ended || { why "the subscriber kept its connection across a hand-over the new daemon cannot read"; journal_tail; return 1; }
    local listen
    listen=$(cx cat "$dir/listen.json")
    has '"closed": true' <<<"$listen" && has 'mediator.restarting' <<<"$listen" ||
        { why "the subscriber did not get mediator.restarting and the close: $listen"; return 1; }
    journal_since "$cursor" | has "state cannot be read; clean restart" ||
        { why "the new daemon did not log the fallback"; journal_tail; return 1; }
    ping_ok || { why "no ping after the fallback"; return 1; }
    cx rm -f "$dropin"
    cx systemctl daemon-reload
    return 0
}

s4_journal_fields() {
    check_journal() {
        cx journalctl -u $UNIT -o json --no-pager 2>/dev/null | python3 -c '
import json, sys
want_pid = sys.argv[1]
best = None
for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("MEDIATOR_TARGET") != "Notes":
        continue
    need = ["MEDIATOR_PEER_PID", "PRIORITY", "CODE_FILE", "CODE_LINE"]
    missing = [k for k in need if not r.get(k)]
    if missing:
        best = best or "record with MEDIATOR_TARGET=Notes lacks %s: %s" % (missing, r.get("MESSAGE"))
        continue
    if want_pid and str(r["MEDIATOR_PEER_PID"]) != want_pid:
        best = best or "MEDIATOR_PEER_PID=%s, the component is pid %s" % (r["MEDIATOR_PEER_PID"], want_pid)
        continue
    print("# MESSAGE=%r PRIORITY=%s MEDIATOR_TARGET=%s MEDIATOR_ACTION=%s MEDIATOR_PEER_PID=%s "
          "MEDIATOR_PEER_UID=%s CODE_FILE=%s CODE_LINE=%s" % (
          r.get("MESSAGE"), r["PRIORITY"], r["MEDIATOR_TARGET"], r.get("MEDIATOR_ACTION"),
          r["MEDIATOR_PEER_PID"], r.get("MEDIATOR_PEER_UID"), r["CODE_FILE"], r["CODE_LINE"]))
    # Read to the end: journalctl would otherwise die of SIGPIPE, which pipefail counts.
    for _ in sys.stdin:
        pass
    sys.exit(0)
print("# " + (best or "no record with MEDIATOR_TARGET=Notes"))
sys.exit(1)' "${NOTES_PID_IN:-}" >"$W/journal-check.out"
    }
    if wait_for 5 check_journal; then
        cat "$W/journal-check.out"
        return 0
    fi
    why "$(sed 's/^# //' "$W/journal-check.out")"
    journal_tail
    return 1
}

s5_restart_on_kill() {
    is_active || { why "mediatord.service is not active at the start"; return 1; }
    local nr0 pid0
    nr0=$(prop NRestarts)
    pid0=$(prop MainPID)
    # Pings every 20 ms for 2.5 s, each line: time_ms exit_status output.
    cx_bg "$W/pings.out" "$W/pings.err" sh -c '
        end=$(( $(date +%s%N) / 1000000 + 2500 ))
        while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
            out=$(mediatorctl ping --timeout 5 2>&1); rc=$?
            echo "$(( $(date +%s%N) / 1000000 )) $rc $out" | tr "\n" " "; echo
            sleep 0.02
        done'
    local loop=$BG
    have_pings() { [ "$(wc -l <"$W/pings.out")" -ge 10 ]; }
    wait_for 5 have_pings || { why "the ping loop did not get going"; return 1; }
    local t_kill
    t_kill=$(now_ms)
    cx systemctl kill -s KILL $UNIT || { why "systemctl kill failed"; return 1; }
    local deadline=$(( $(now_ms) + 10000 ))
    while kill -0 "$loop" 2>/dev/null && [ "$(now_ms)" -lt $deadline ]; do sleep 0.05; done
    kill -0 "$loop" 2>/dev/null && { why "the ping loop did not end"; return 1; }

    restarted() { [ "$(prop NRestarts)" -gt "$nr0" ] && is_active; }
    wait_for 10 restarted || { why "no restart: NRestarts $nr0 -> $(prop NRestarts), $(prop ActiveState)/$(prop SubState), Result=$(prop Result)"; return 1; }
    local pid1
    pid1=$(prop MainPID)
    [ "$pid1" != "$pid0" ] && [ "$pid1" != 0 ] || { why "MainPID did not change ($pid0 -> $pid1)"; return 1; }

    local total failed refused disconnected after
    total=$(wc -l <"$W/pings.out")
    failed=$(awk '$2 != 0' "$W/pings.out" | wc -l)
    # The one ping in flight at the kill ends either way: "disconnected"
    # (accepted by the killed process and not yet in the fd store), or
    # component_unavailable on its kept connection (mediator.reregister).
    refused=$(awk '$2 != 0' "$W/pings.out" | grep -vc -e 'disconnected' -e 'mediator.reregister')
    disconnected=$(awk '$2 != 0' "$W/pings.out" | grep -c -e 'disconnected' -e 'mediator.reregister')
    after=$(awk -v t="$t_kill" '$1 > t' "$W/pings.out" | wc -l)
    say "pings: $total ($after after the kill), failed $failed; NRestarts $nr0 -> $(prop NRestarts); MainPID $pid0 -> $pid1"
    [ "$after" -ge 5 ] || { why "only $after pings after the kill: the loop did not cover the restart"; return 1; }
    if [ "$refused" -gt 0 ]; then
        why "$refused ping(s) failed without a daemon to answer (refused/unreachable):"
        while read -r line; do why "  $line"; done < <(awk '$2 != 0' "$W/pings.out" | grep -v -e disconnected -e 'mediator.reregister' | head -5)
        return 1
    fi
    if [ "$disconnected" -gt 1 ]; then
        why "$disconnected pings failed with the daemon they were on (at most the one in flight at the kill may)"
        return 1
    fi
    [ "$disconnected" = 1 ] && say "note: the ping in flight at the kill ended: $(awk '$2 != 0' "$W/pings.out" | grep -e disconnected -e 'mediator.reregister' | cut -d' ' -f3-)"
    return 0
}

s6_watchdog() {
    local exec_line
    exec_line=$(grep -m1 '^ExecStart=' "$W/units/mediatord.service")
    [ -n "$exec_line" ] || { why "no ExecStart= in the rendered unit"; return 1; }
    printf '[Service]\nWatchdogSec=2s\nExecStart=\n%s --test-hooks\n' "$exec_line" |
        cx_write /run/systemd/system/mediatord.service.d/test.conf || { why "could not write the drop-in"; return 1; }
    cx systemctl daemon-reload || { why "daemon-reload failed"; return 1; }
    local out
    out=$(cx systemctl restart $UNIT 2>&1) || { why "restart with the drop-in failed: $out"; journal_tail; return 1; }
    wait_for 10 is_active || { why "not active after restart with the drop-in"; return 1; }
    local wd
    wd=$(prop WatchdogUSec)
    [ "$wd" = 2s ] || { why "WatchdogUSec=$wd, expected 2s from the drop-in"; return 1; }
    ping_ok || { why "ping fails after the restart with --test-hooks"; return 1; }
    local nr0 pid0 cursor
    nr0=$(prop NRestarts)
    pid0=$(prop MainPID)
    cursor=$(journal_cursor)

    local t0 rc
    t0=$(now_ms)
    out=$(cx mediatorctl call mediator _block_event_loop --timeout 1 2>&1); rc=$?
    [ $rc != 0 ] || { why "_block_event_loop answered: $out"; return 1; }
    # component_unavailable: the connection outlived the kill (fd store) and
    # the new daemon's mediator.reregister failed the lost call.
    if ! grep -qiE 'timeout|unreachable|disconnected|component_unavailable' <<<"$out"; then
        why "_block_event_loop failed otherwise (exit $rc): $out"
        return 1
    fi
    say "_block_event_loop: exit $rc ($out)"

    # Result=watchdog lasts only until the restart (RestartSec=100ms), so it
    # is sampled, and the journal's "Failed with result 'watchdog'" decides.
    local seen_result=no deadline=$(( $(now_ms) + 15000 )) result nr pid state
    while [ "$(now_ms)" -lt $deadline ]; do
        result=$(prop Result); nr=$(prop NRestarts); pid=$(prop MainPID); state=$(prop ActiveState)
        [ "$result" = watchdog ] && seen_result=yes
        if [ "$nr" -gt "$nr0" ] && [ "$state" = active ] && [ "$pid" != "$pid0" ] && [ "$pid" != 0 ]; then break; fi
        sleep 0.05
    done
    local took=$(( $(now_ms) - t0 ))
    local journal
    journal=$(journal_since "$cursor")
    local wd_line=no failed_wd=no
    grep -q 'Watchdog timeout' <<<"$journal" && wd_line=yes
    grep -q "Failed with result 'watchdog'" <<<"$journal" && failed_wd=yes
    say "watchdog: Result=watchdog sampled: $seen_result; journal 'Watchdog timeout': $wd_line, \"Failed with result 'watchdog'\": $failed_wd; NRestarts $nr0 -> $nr; MainPID $pid0 -> $pid; back in $took ms"
    [ "$wd_line" = yes ] || [ "$seen_result" = yes ] || { why "no watchdog timeout seen (Result=$result)"; journal_tail; return 1; }
    [ "$failed_wd" = yes ] || [ "$seen_result" = yes ] || { why "the service did not fail with result 'watchdog'"; journal_tail; return 1; }
    [ "$nr" -gt "$nr0" ] || { why "no restart after the watchdog within 15 s (NRestarts $nr, $state, Result=$result)"; return 1; }
    [ "$state" = active ] && [ "$pid" != "$pid0" ] || { why "not back: $state, MainPID $pid0 -> $pid"; return 1; }
    ping_ok || { why "ping fails after the watchdog restart"; return 1; }
    return 0
}

s7_clean_stop() {
    is_active || { why "mediatord.service is not active before the stop ($(prop ActiveState))"; return 1; }
    # Back to the unit as shipped.
    cx rm -rf /run/systemd/system/mediatord.service.d && cx systemctl daemon-reload
    local t0 out rc
    t0=$(now_ms)
    out=$(cx systemctl stop $UNIT mediatord.socket 2>&1); rc=$?
    local took=$(( $(now_ms) - t0 ))
    [ $rc = 0 ] || { why "systemctl stop exited $rc after $took ms: $out"; return 1; }
    local result status code state sstate
    result=$(prop Result); status=$(prop ExecMainStatus); code=$(prop ExecMainCode)
    state=$(prop ActiveState); sstate=$(prop ActiveState mediatord.socket)
    say "stop took $took ms: Result=$result ExecMainCode=$code ExecMainStatus=$status ActiveState=$state socket=$sstate"
    [ "$result" = success ] || { why "Result=$result"; journal_tail; return 1; }
    # ExecMainCode 1 is CLD_EXITED: the daemon exited by itself (status 0), it
    # was not ended by a signal.
    [ "$code" = 1 ] && [ "$status" = 0 ] || { why "ExecMainCode=$code ExecMainStatus=$status, expected an exit with status 0"; journal_tail; return 1; }
    [ "$state" = inactive ] || { why "ActiveState=$state"; return 1; }
    [ "$sstate" = inactive ] || { why "socket ActiveState=$sstate"; return 1; }
    return 0
}

# Scenario 8. mediatord runs as the user mediator: systemd asks polkit whether
# it may start a unit, and this rule (the one the component template's comment
# shows) allows exactly start and stop of mediator-component@*.service.
# The rule the project ships (systemd/polkit/50-mediator.rules).
POLKIT_RULE=$(cat systemd/polkit/50-mediator.rules)

s8_unit_activation() {
    local libexec=/opt/mediator/libexec   # LIBEXECDIR for the template, in the container
    local unit=mediator-component@UnitNotes.service
    local manifests=/etc/mediator/components.d
    "$BIN/mediatord" --help 2>&1 | has -- '--components' ||
        { why "mediatord has no --components option: manifests (issue 4) are not built in"; return 1; }
    cx test -x /usr/bin/dbus-daemon -o -x /usr/bin/dbus-broker-launch ||
        { why "no D-Bus system bus in the container's /usr (apt-get install -y dbus)"; return 1; }
    cx test -x /usr/lib/polkit-1/polkitd -o -x /usr/libexec/polkitd ||
        { why "no polkitd in the container's /usr (apt-get install -y polkitd)"; return 1; }

    # The template, rendered by `make units` with LIBEXECDIR pointing into the
    # container's (writable, throwaway) /opt, added next to the other units.
    local dest=$W/dest-unit-activation
    make -s units DESTDIR="$dest" BINDIR="$IN_BIN" LIBEXECDIR="$libexec" >"$W/make-unit.log" 2>&1 ||
        { why "make units: $(tr '\n' ' ' <"$W/make-unit.log")"; return 1; }
    local template
    template=$(find "$dest" -path '*/user/*' -prune -o -name 'mediator-component@.service' -type f -print | head -1)
    [ -n "$template" ] || { why "make units produced no mediator-component@.service"; return 1; }
    cp "$template" "$W/units/"
    # The component that the template runs for the target UnitNotes.
    printf '#!/bin/sh\nexec python3 %s/python/notes_component.py --target "$MEDIATOR_TARGET" --socket "$MEDIATOR_SOCKET"\n' \
        "$IN_EXAMPLES" | cx_write "$libexec/mediator/components/UnitNotes" &&
        cx chmod 0755 "$libexec/mediator/components/UnitNotes" || { why "could not write the component"; return 1; }
    # Its manifest, and one for a unit that the polkit rule does not cover.
    printf '{"target":"UnitNotes","actions":["add","list","echo","whoami"],"unit":"%s"}\n' "$unit" |
        cx_write "$manifests/UnitNotes.json" || { why "could not write the manifest"; return 1; }
    printf '{"target":"UnitDenied","actions":["echo"],"unit":"systemd-hostnamed.service","start_timeout_s":10}\n' |
        cx_write "$manifests/UnitDenied.json" || { why "could not write the second manifest"; return 1; }
    cx chmod -R a+rX /etc/mediator
    printf '%s\n' "$POLKIT_RULE" | cx_write /etc/polkit-1/rules.d/50-mediator.rules ||
        { why "could not write the polkit rule"; return 1; }
    cx systemctl daemon-reload || { why "daemon-reload failed"; return 1; }
    # The system bus (polkit is started by it on demand), and a fresh daemon
    # (scenario 7 stopped it) that reads the manifests when it starts.
    local out
    out=$(cx systemctl start dbus.socket 2>&1) || { why "cannot start dbus.socket: $out"; return 1; }
    cx systemctl stop $UNIT >/dev/null 2>&1
    out=$(cx systemctl start mediatord.socket 2>&1) || { why "cannot start mediatord.socket: $out"; return 1; }
    local state
    state=$(cx systemctl is-active $unit 2>/dev/null)
    [ "$state" = inactive ] || { why "$unit is '$state' before any call"; return 1; }

    local t0 rc took
    t0=$(now_ms)
    out=$(cx mediatorctl --json call UnitNotes add text=hi --timeout 20 2>&1); rc=$?
    took=$(( $(now_ms) - t0 ))
    if [ $rc != 0 ]; then
        why "call UnitNotes add exited $rc after $took ms: $out"
        why "$unit: $(prop ActiveState $unit)/$(prop SubState $unit), Result=$(prop Result $unit)"
        journal_tail
        return 1
    fi
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert isinstance(r.get("id"), int), r' "$out" 2>/dev/null ||
        { why "call UnitNotes add answered '$out', expected {\"id\": n}"; return 1; }
    say "UnitNotes add -> $out in $took ms (daemon start, StartUnit, component start and registration)"
    state=$(cx systemctl is-active $unit 2>/dev/null)
    [ "$state" = active ] || { why "$unit is '$state' after the call"; return 1; }
    # The component that answered is the unit's main process, running as a
    # dynamic user, and systemd logged the start.
    local main_pid who_pid uid
    main_pid=$(prop MainPID $unit)
    out=$(cx mediatorctl --json call UnitNotes whoami 2>&1) || { why "call UnitNotes whoami: $out"; return 1; }
    who_pid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$out" 2>/dev/null)
    [ -n "$who_pid" ] && [ "$who_pid" = "$main_pid" ] ||
        { why "UnitNotes answers from pid '$who_pid', the unit's MainPID is $main_pid"; return 1; }
    uid=$(cx sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/"$main_pid"/status 2>/dev/null)
    [ -n "$uid" ] && [ "$uid" != 0 ] || { why "the component runs as uid '$uid'"; return 1; }
    cx journalctl -u $unit --no-pager -o cat 2>/dev/null | has '^Started ' ||
        { why "no 'Started' line in the journal of $unit"; return 1; }
    say "$unit active, MainPID $main_pid (uid $uid) answers whoami"

    # The rule lets mediatord start its components and nothing else: the
    # call fails at once with systemd's answer, and the unit stays inactive.
    t0=$(now_ms)
    out=$(cx mediatorctl --json call UnitDenied echo --timeout 20 2>&1); rc=$?
    took=$(( $(now_ms) - t0 ))
    say "UnitDenied (systemd-hostnamed.service): exit $rc after $took ms: $out"
    [ $rc != 0 ] || { why "a call for a unit outside the polkit rule succeeded: $out"; return 1; }
    grep -qi 'authentication' <<<"$out" ||
        { why "the refusal does not carry systemd's reason (Interactive authentication required): $out"; return 1; }
    state=$(cx systemctl is-active systemd-hostnamed.service 2>/dev/null)
    [ "$state" = inactive ] || { why "systemd-hostnamed.service is '$state'"; return 1; }
    return 0
}

# The journal's cursor now, and the unit's messages after a cursor.
journal_cursor() {
    cx journalctl -u $UNIT -n 0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p'
}
journal_since() {
    if [ -n "$1" ]; then
        cx journalctl -u $UNIT --after-cursor="$1" --no-pager -o cat 2>/dev/null
    else
        cx journalctl -u $UNIT --no-pager -o cat 2>/dev/null
    fi
}

# Adds the unit's last journal lines to the reasons printed under `not ok`.
journal_tail() {
    local line
    why "journal of $UNIT, last lines:"
    while IFS= read -r line; do
        why "  $line"
    done < <(cx journalctl -u $UNIT --no-pager -n 15 -o short-monotonic 2>/dev/null)
}

# ------------------------------------------------------------------- running

run() {
    local name=$1 t0
    shift
    if [ -n "${MEDIATOR_NSPAWN_ONLY:-}" ] && ! has -w -- "$name" <<<"$MEDIATOR_NSPAWN_ONLY"; then
        echo "ok - $name # SKIP not in MEDIATOR_NSPAWN_ONLY"
        return
    fi
    REASONS=()
    t0=$(now_ms)
    if [ -z "$LEADER" ] || ! kill -0 "$LEADER" 2>/dev/null; then
        FAILED=$((FAILED + 1))
        echo "not ok - $name"
        echo "#   the container is not running"
        return
    fi
    if "$@"; then
        PASSED=$((PASSED + 1))
        echo "ok - $name # $(( $(now_ms) - t0 )) ms"
    else
        FAILED=$((FAILED + 1))
        echo "not ok - $name # $(( $(now_ms) - t0 )) ms"
        local r
        for r in "${REASONS[@]}"; do echo "#   $r"; done
    fi
}

# Stops the container and checks that nothing of it is left.
stop_container() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null
    done
    if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
        kill -TERM "$NSPAWN_PID" 2>/dev/null  # nspawn sends SIGRTMIN+3: halt
        local deadline=$(( $(now_ms) + 8000 ))
        while kill -0 "$NSPAWN_PID" 2>/dev/null && [ "$(now_ms)" -lt $deadline ]; do sleep 0.05; done
        if kill -0 "$NSPAWN_PID" 2>/dev/null; then
            say "the container did not halt within 8 s: SIGKILL to its PID 1"
            [ -n "$LEADER" ] && kill -KILL "$LEADER" 2>/dev/null
            deadline=$(( $(now_ms) + 3000 ))
            while kill -0 "$NSPAWN_PID" 2>/dev/null && [ "$(now_ms)" -lt $deadline ]; do sleep 0.05; done
            kill -KILL "$NSPAWN_PID" 2>/dev/null
        fi
    fi
    [ -n "$NSPAWN_PID" ] && wait "$NSPAWN_PID" 2>/dev/null
    for pid in "${BG_PIDS[@]}"; do
        kill -KILL -- "-$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    BG_PIDS=()
}

# Host pids of processes still in the container's pid namespace.
survivors() {
    [ -n "$CONTAINER_PIDNS" ] || return 0
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$CONTAINER_PIDNS" ] && echo "${p#/proc/} $(cat "$p/comm" 2>/dev/null)"
    done
}

CLEANED=no
cleanup() {
    [ $CLEANED = yes ] && return
    CLEANED=yes
    stop_container
    local left
    left=$(cgroup_procs)
    if [ -z "$left" ]; then
        remove_cgroups
    else
        say "processes left in ${CG_DIRS[*]}: $left (cgroups not removed)"
    fi
    if [ -n "$GUARD_PID" ]; then
        kill -TERM "$GUARD_PID" 2>/dev/null
        wait "$GUARD_PID" 2>/dev/null
    fi
    if [ -n "$W" ] && [ -d "$W" ]; then
        if [ "${MEDIATOR_NSPAWN_KEEP:-0}" = 1 ]; then
            say "kept $W"
        else
            rm -rf "$W"
        fi
    fi
}
trap cleanup EXIT
trap 'cleanup; echo "systemd-tests: interrupted"; exit 130' INT TERM

main() {
    precheck
    find_binaries
    W=$(mktemp -d "${TMPDIR:-/tmp}/mediator-nspawn.XXXXXX") || exit 1
    chmod 755 "$W"
    if ! render_units; then
        echo "not ok - render units"
        echo "systemd-tests: 0 passed, 1 failed"
        exit 1
    fi
    setup_cgroups
    local t0
    t0=$(now_ms)
    REASONS=()
    if boot; then
        say "booted in $(( $(now_ms) - t0 )) ms"
    else
        echo "not ok - boot"
        for r in "${REASONS[@]}"; do echo "#   $r"; done
        tail -20 "$W/nspawn.log" | sed 's/^/#   nspawn: /'
        FAILED=$((FAILED + 1))
    fi

    run socket-activation s1_socket_activation
    run component-call s2_component_call
    run reload-keeps-connections s3_reload
    run reexec-keeps-everything s3b_reexec
    run crash-keeps-connections s3c_crash
    run upgrade-by-reload s3d_upgrade_by_reload
    run restart-keeps-everything s3e_restart
    run stop-ends-connections s3f_stop_ends_connections
    run restart-fallback s3g_restart_fallback
    run crash-under-load s3h_crash_under_load
    run journal-fields s4_journal_fields
    run restart-on-sigkill s5_restart_on_kill
    run watchdog s6_watchdog
    run clean-stop s7_clean_stop
    run unit-activation s8_unit_activation

    t0=$(now_ms)
    stop_container
    local left
    left=$(survivors; for p in $(cgroup_procs); do echo "$p $(cat /proc/"$p"/comm 2>/dev/null) (in the run's cgroup)"; done)
    if [ -z "$left" ] && [ -n "$NSPAWN_PID" ] && ! kill -0 "$NSPAWN_PID" 2>/dev/null; then
        PASSED=$((PASSED + 1))
        echo "ok - container-stopped # $(( $(now_ms) - t0 )) ms"
    else
        FAILED=$((FAILED + 1))
        echo "not ok - container-stopped"
        while read -r line; do [ -n "$line" ] && echo "#   left running: $line"; done <<<"$left"
    fi
    cleanup
    say "total $(elapsed)"
    echo "systemd-tests: $PASSED passed, $FAILED failed"
    [ "$FAILED" = 0 ]
}

main "$@"

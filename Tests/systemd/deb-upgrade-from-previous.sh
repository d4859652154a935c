# The upgrade from the last release's package (deb-tests.sh sources this;
# it uses that script's cx, wait_for, instances, listening, $LEADER, $W, $DEB and
# $PREVIOUS). The previous package is the one scripts/build-previous-deb
# built from the commit Tests/systemd/previous-package names: its own
# binary, units and maintainer scripts, so the hand-over is read by a
# daemon of a different build from the one that wrote it.

# Installs the previous package and makes its daemon serve Echo.
previous_installed() {
    cx apt-get install -y --no-install-recommends "/mnt/previous/$(basename "$PREVIOUS")" || return 1
    cx sh -c 'printf "#!/bin/sh\nexec cat\n" >/tmp/echo.sh && chmod 0755 /tmp/echo.sh' || return 1
    nsenter -t "$LEADER" -m -p -- env -i PATH=/usr/bin:/bin setsid mediatorctl serve Echo --exec /tmp/echo.sh --action echo \
        </dev/null >"$W/previous-serve.out" 2>"$W/previous-serve.err" &
    wait_for 20 cx mediatorctl describe Echo || { cat "$W/previous-serve.err"; cx systemctl status mediatord.service; return 1; }
    local answer
    answer=$(cx mediatorctl call Echo echo text=previous --json) || { echo "$answer"; return 1; }
    [ "$answer" = '{"text":"previous"}' ] || { echo "unexpected answer: $answer"; return 1; }
}

# Lines of the call loop's log: "ok N", or "failed N: ..." / "wrong N: ...".
loop_lines() { wc -l <"$W/loop.out" 2>/dev/null || echo 0; }

upgraded_from_previous() {
    local pid0 nr0 before after listen_pid loop_pid at_install at_end out
    pid0=$(cx systemctl show -p MainPID --value mediatord.service)
    nr0=$(cx systemctl show -p NRestarts --value mediatord.service)
    [ -n "$pid0" ] && [ "$pid0" != 0 ] || { echo "the previous package's daemon is not running"; return 1; }
    before=$(instances Echo)
    [ "$before" != "[]" ] && [ -n "$before" ] || { echo "Echo is not registered on the previous daemon"; return 1; }
    listening previous || return 1
    listen_pid=$LISTEN_PID
    # A client calling in a loop through the whole upgrade, one connection
    # per call (mediatorctl); every call must come back with its own text.
    cx sh -c 'cat >/tmp/call-loop.sh <<"EOF"
#!/bin/sh
i=0
while [ ! -e /tmp/call-loop.stop ]; do
    i=$((i + 1))
    if out=$(mediatorctl call Echo echo text=n$i --json --timeout 10 2>&1); then
        if [ "$out" = "{\"text\":\"n$i\"}" ]; then echo "ok $i"; else echo "wrong $i: $out"; fi
    else
        echo "failed $i: $out"
    fi
done
EOF
chmod 0755 /tmp/call-loop.sh; rm -f /tmp/call-loop.stop' || return 1
    nsenter -t "$LEADER" -m -p -- env -i PATH=/usr/bin:/bin setsid /tmp/call-loop.sh \
        </dev/null >"$W/loop.out" 2>"$W/loop.err" &
    loop_pid=$!
    wait_for 10 grep -q '^ok ' "$W/loop.out" || { echo "the call loop did not get an answer: $(cat "$W/loop.out" "$W/loop.err")"; return 1; }

    at_install=$(loop_lines)
    CX_TIMEOUT=120 cx apt-get install -y --no-install-recommends "/mnt/dist/$(basename "$DEB")" || return 1
    [ "$(cx dpkg-query -W -f '${Version}' mediator)" = "$(dpkg-deb -f "$DEB" Version)" ] ||
        { echo "not upgraded to $(dpkg-deb -f "$DEB" Version)"; return 1; }
    runs_new() { [ "$(cx readlink "/proc/$pid0/exe")" = /usr/bin/mediatord ]; }
    wait_for 10 runs_new || { echo "pid $pid0 runs '$(cx readlink "/proc/$pid0/exe")' after the upgrade"; cx journalctl -u mediatord.service -n 20 --no-pager; return 1; }
    # The loop goes on past the upgrade: a few more answers from the new binary.
    at_end=$(( $(loop_lines) + 5 ))
    progressed() { [ "$(loop_lines)" -ge "$at_end" ]; }
    wait_for 20 progressed || { echo "the call loop stalled after the upgrade: $(tail -n 3 "$W/loop.out")"; return 1; }
    cx touch /tmp/call-loop.stop
    wait_for 15 sh -c "! kill -0 $loop_pid" || { echo "the call loop did not stop"; return 1; }

    out=$(grep -v '^ok ' "$W/loop.out")
    [ -z "$out" ] || { echo "calls of the loop that failed across the upgrade:"; printf '%s\n' "$out" | head -n 5; return 1; }
    echo "the call loop made $(loop_lines) calls, $(( $(loop_lines) - at_install )) of them from the start of apt-get install on, all answered" \
        >"$W/previous-summary"
    [ "$(cx systemctl show -p MainPID --value mediatord.service)" = "$pid0" ] || { echo "MainPID changed from $pid0"; return 1; }
    [ "$(cx systemctl show -p NRestarts --value mediatord.service)" = "$nr0" ] || { echo "the daemon was restarted"; return 1; }
    after=$(instances Echo)
    [ "$after" = "$before" ] || { echo "Echo registered again: instances $before -> $after"; return 1; }
    kill -0 "$listen_pid" 2>/dev/null || { echo "the subscriber's connection closed: $(cat "$W/previous-listen.err")"; return 1; }
    cx mediatorctl emit previous.after >/dev/null || return 1
    wait_for 5 grep -q previous.after "$W/previous-listen.out" ||
        { echo "the subscriber missed an event sent after the upgrade"; return 1; }
    if cx journalctl -u mediatord.service --no-pager | grep -E 'clean restart|re-exec failed'; then return 1; fi
    # The checks after this one start their own component and subscriber.
    cx pkill -TERM -f 'mediatorctl (serve Echo|listen previous)' >/dev/null 2>&1
    gone() { [ "$(instances Echo)" = "[]" ]; }
    wait_for 10 gone || { echo "Echo is still registered after its component was stopped"; return 1; }
    return 0
}

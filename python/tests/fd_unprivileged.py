"""The unprivileged side of test_fds_daemon: run as another uid (setpriv)
against the test's mediatord, it prints one JSON line of what it saw.

    fd_unprivileged.py open SOCKET PATH   call Files/open for PATH, read the file it gets
    fd_unprivileged.py flood SOCKET PAD   send calls with a descriptor each to Stuck until refused
    fd_unprivileged.py calls SOCKET N     N calls one after the other to Sink/take, a descriptor each
"""
import json
import os
import select
import sys

from support import RawPeer

import mediator

#: Calls `flood` sends at most before it gives up on a refusal.
FLOOD_LIMIT = 200
#: Calls it sends after the first refusal, each of which must be refused too.
AFTER_REFUSAL = 3
#: How long a refused call's pipe may take to show that the daemon closed its end.
EOF_TIMEOUT = 5.0


def open_file(socket_path, path):
    try:
        os.close(os.open(path, os.O_RDONLY))
        can_open = True
    except PermissionError:
        can_open = False
    with mediator.connect(socket_path, timeout=10, fds=True) as client:
        result = client.call("Files", "open", {"path": path})
        with result["file"] as opened:
            status = os.fstat(opened.fileno())
            content = os.pread(opened.fileno(), 1000, 0)
    return {"uid": os.getuid(), "can_open": can_open, "content": content.decode(),
            "file": [status.st_dev, status.st_ino]}


def closed_elsewhere(fd, timeout):
    """Whether every write end of the pipe whose read end is `fd` is closed (EOF)."""
    readable, _, _ = select.select([fd], [], [], timeout)
    return bool(readable) and os.read(fd, 1) == b""


def flood(socket_path, pad):
    peer = RawPeer(socket_path)
    outcomes = []  # per call: its pipe's read end and the refusal (None: forwarded)
    refusals = 0
    while len(outcomes) < FLOOD_LIMIT and refusals <= AFTER_REFUSAL:
        r, w = os.pipe()
        call = peer.request("Stuck", "take", {"pad": "x" * pad, "f": {"$fd": 0}}, fds=[w])
        os.close(w)
        # The daemon answers lines in order: a refusal comes before the ping's answer.
        ping = peer.request("mediator", "ping")
        message, _ = peer.wait_for(lambda m: m.get("id") in (call, ping) and "target" not in m)
        if message["id"] == call:
            peer.answer(ping)
            refusals += 1
            outcomes.append((r, message["error"]))
        else:
            outcomes.append((r, None))
    report = {
        "uid": os.getuid(),
        "forwarded": sum(1 for _, error in outcomes if error is None),
        "errors": [error for _, error in outcomes if error is not None],
        "refused_closed": all(closed_elsewhere(r, EOF_TIMEOUT) for r, error in outcomes if error is not None),
        "forwarded_open": not any(closed_elsewhere(r, 0) for r, error in outcomes if error is None),
    }
    for r, _ in outcomes:
        os.close(r)
    peer.close()
    return report


def calls(socket_path, count):
    peer = RawPeer(socket_path)
    null = os.open("/dev/null", os.O_RDONLY)
    answers = [peer.call("Sink", "take", {"f": {"$fd": 0}}, [null])[0] for _ in range(count)]
    os.close(null)
    peer.close()
    return {"uid": os.getuid(), "answers": answers}


if __name__ == "__main__":
    command, socket_path, argument = sys.argv[1:4]
    if command == "open":
        print(json.dumps(open_file(socket_path, argument)))
    elif command == "calls":
        print(json.dumps(calls(socket_path, int(argument))))
    else:
        print(json.dumps(flood(socket_path, int(argument))))
    sys.stdout.flush()

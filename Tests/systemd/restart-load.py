#!/usr/bin/env python3
"""Load for the nspawn suite's restart scenario (issue 28): one connection
each, kept for the whole run; written to OUT as JSON when STOPFILE appears.

  restart-load.py call SOCK OUT STOPFILE TARGET ACTION   calls in a loop, one in flight
  restart-load.py listen SOCK OUT STOPFILE PREFIX        subscribes to PREFIX.*
  restart-load.py emit SOCK OUT STOPFILE PREFIX          publishes PREFIX.N, N = 1, 2, ...

A closed connection ends the loop and is reported (closed: true): the
scenario requires none. Every answer is matched to its id: a call answered
twice, or never, is reported.
"""
import json
import os
import socket
import sys
import time


def now_ms():
    return time.time() * 1000.0


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, obj):
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def read(self, timeout):
        """One message, None on timeout; raises EOFError when closed."""
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                raise EOFError
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line) if line.strip() else self.read(timeout)


def call_loop(conn, out, stop, target, action):
    result = {"calls": 0, "answered": 0, "errors": [], "closed": False, "duplicates": 0,
              "unanswered": 0, "max_ms": 0.0, "answers": []}
    next_id = 1
    events = []
    try:
        while not os.path.exists(stop):
            sent = now_ms()
            conn.send({"id": next_id, "target": target, "action": action, "params": {"n": next_id}, "timeout_ms": 20000})
            result["calls"] += 1
            while True:
                message = conn.read(25)
                if message is None:
                    result["unanswered"] += 1
                    break
                if "event" in message:
                    events.append(message["event"])
                    continue
                if message.get("id") != next_id:
                    result["duplicates"] += 1
                    continue
                took = now_ms() - sent
                result["answered"] += 1
                result["max_ms"] = max(result["max_ms"], took)
                # [answer time, latency]: the scenario finds the first answer of each new daemon.
                result["answers"].append([round(now_ms(), 3), round(took, 3)])
                if "error" in message:
                    result["errors"].append(message["error"].get("code"))
                break
            next_id += 1
        # Late or duplicate answers would arrive now.
        while True:
            message = conn.read(0.2)
            if message is None:
                break
            if "id" in message:
                result["duplicates"] += 1
    except (EOFError, ConnectionError):
        result["closed"] = True
    result["daemon_events"] = sorted(set(e for e in events if e.startswith("mediator.")))
    return result


def listen_loop(conn, out, stop, prefix):
    conn.send({"id": 1, "target": "mediator", "action": "subscribe", "params": {"events": [prefix + ".*"]}})
    result = {"events": [], "closed": False, "daemon_events": []}
    try:
        while not os.path.exists(stop):
            message = conn.read(0.2)
            if message is None or "event" not in message:
                continue
            name = message["event"]
            if name.startswith("mediator."):
                result["daemon_events"].append(name)
            else:
                result["events"].append(name)
    except (EOFError, ConnectionError):
        result["closed"] = True
    return result


def emit_loop(conn, out, stop, prefix):
    result = {"emitted": 0, "closed": False, "delivered_zero": 0}
    n = 0
    try:
        while not os.path.exists(stop):
            n += 1
            conn.send({"id": n, "target": "mediator", "action": "publish", "params": {"event": "%s.%d" % (prefix, n)}})
            message = conn.read(25)
            while message is not None and "id" not in message:
                message = conn.read(25)
            if message is None or "result" not in message:
                result.setdefault("failed", []).append(message)
            elif message["result"].get("delivered", 0) < 1:
                result["delivered_zero"] += 1
            result["emitted"] = n
            time.sleep(0.02)
    except (EOFError, ConnectionError):
        result["closed"] = True
    return result


def main():
    mode, path, out, stop = sys.argv[1:5]
    conn = Conn(path)
    if mode == "call":
        result = call_loop(conn, out, stop, sys.argv[5], sys.argv[6])
    elif mode == "listen":
        result = listen_loop(conn, out, stop, sys.argv[5])
    else:
        result = emit_loop(conn, out, stop, sys.argv[5])
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Load for the nspawn suite's restart scenario (issue 28): one connection
each, kept for the whole run; written to OUT as JSON when STOPFILE appears.

  restart-load.py call SOCK OUT STOPFILE TARGET ACTION   calls in a loop, one in flight
  restart-load.py listen SOCK OUT STOPFILE PREFIX        subscribes to PREFIX.*
  restart-load.py emit SOCK OUT STOPFILE PREFIX          publishes PREFIX.N, N = 1, 2, ...
  restart-load.py stream-serve SOCK OUT STOPFILE TARGET  serves TARGET.count: a stream of
                                                        params.n partials 10 ms apart, then a final
  restart-load.py stream SOCK OUT STOPFILE TARGET        calls TARGET.count (more: true) in a loop

A stream is checked whole: its partials 1..n in order, each once, then its
final answer; a stream in progress across a hand-over must arrive so.

A closed connection ends the loop and is reported (closed: true): the
scenario requires none. Every answer is matched to its id: a call answered
twice, or never, is reported.

After a crash the daemon keeps the connections (systemd's fd store) and
sends `mediator.reregister`; these peers then do what docs/protocol.md asks
of one: the call in flight is lost, so it is failed here as the libraries
fail it (component_unavailable) and an answer to it arriving later is
dropped (counted as late, not as a second answer); the subscriber
subscribes again. The times of the events are reported (reregister_at).
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
              "unanswered": 0, "max_ms": 0.0, "answers": [], "reregister_at": [], "late": 0}
    next_id = 1
    events = []
    lost = set()
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
                    if message["event"] == "mediator.reregister":
                        result["reregister_at"].append(round(now_ms(), 3))
                        # The new daemon does not know this call: failed here, once.
                        result["answered"] += 1
                        result["errors"].append("component_unavailable")
                        result["answers"].append([round(now_ms(), 3), round(now_ms() - sent, 3)])
                        lost.add(next_id)
                        break
                    continue
                if message.get("id") in lost:
                    lost.discard(message.get("id"))
                    result["late"] += 1
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
                    result.setdefault("error_at", []).append([round(now_ms(), 3), message["error"].get("code")])
                break
            next_id += 1
        # Late or duplicate answers would arrive now.
        while True:
            message = conn.read(0.2)
            if message is None:
                break
            if message.get("id") in lost:
                lost.discard(message.get("id"))
                result["late"] += 1
            elif "id" in message:
                result["duplicates"] += 1
    except (EOFError, ConnectionError):
        result["closed"] = True
    result["daemon_events"] = sorted(set(e for e in events if e.startswith("mediator.")))
    return result


def listen_loop(conn, out, stop, prefix):
    subscribe = {"id": 1, "target": "mediator", "action": "subscribe", "params": {"events": [prefix + ".*"]}}
    conn.send(subscribe)
    result = {"events": [], "closed": False, "daemon_events": [], "reregister_at": []}
    try:
        while not os.path.exists(stop):
            message = conn.read(0.2)
            if message is None or "event" not in message:
                continue
            name = message["event"]
            if name.startswith("mediator."):
                result["daemon_events"].append(name)
                if name == "mediator.reregister":
                    result["reregister_at"].append(round(now_ms(), 3))
                    subscribe["id"] += 1
                    conn.send(subscribe)
            else:
                result["events"].append(name)
    except (EOFError, ConnectionError):
        result["closed"] = True
    return result


def emit_loop(conn, out, stop, prefix):
    result = {"emitted": 0, "closed": False, "delivered_zero": 0, "lost": []}
    n = 0
    try:
        while not os.path.exists(stop):
            n += 1
            conn.send({"id": n, "target": "mediator", "action": "publish", "params": {"event": "%s.%d" % (prefix, n)}})
            message = conn.read(25)
            while message is not None and "id" not in message and message.get("event") != "mediator.reregister":
                message = conn.read(25)
            # Older answers (to a publish lost in a crash) are not this one's.
            while message is not None and "id" in message and message["id"] != n:
                message = conn.read(25)
            if message is not None and message.get("event") == "mediator.reregister":
                # A crash: this publish may not have happened.
                result["lost"].append(n)
                result["emitted"] = n
                continue
            if message is None or "result" not in message:
                result.setdefault("failed", []).append(message)
            elif message["result"].get("delivered", 0) < 1:
                result["delivered_zero"] += 1
            result["emitted"] = n
            time.sleep(0.02)
    except (EOFError, ConnectionError):
        result["closed"] = True
    return result


def stream_serve(conn, out, stop, target):
    conn.send({"id": "reg", "target": "mediator", "action": "register",
               "params": {"target": target, "actions": [{"name": "count", "more": True}]}})
    result = {"served": 0, "partials": 0, "closed": False, "registered": False, "daemon_events": []}
    stopped_at = None
    try:
        # Serves 2 s past STOPFILE: a stream asked just before it still gets its answers.
        while stopped_at is None or now_ms() - stopped_at < 2000:
            if stopped_at is None and os.path.exists(stop):
                stopped_at = now_ms()
            message = conn.read(0.2)
            if message is None:
                continue
            if message.get("id") == "reg":
                result["registered"] = "result" in message
                continue
            if "event" in message:
                result["daemon_events"].append(message["event"])
                continue
            if message.get("action") != "count" or "id" not in message:
                continue
            n = int((message.get("params") or {}).get("n", 10))
            for i in range(1, n + 1):
                conn.send({"id": message["id"], "result": {"i": i}, "continues": True})
                result["partials"] += 1
                time.sleep(0.01)
            conn.send({"id": message["id"], "result": {"done": n}})
            result["served"] += 1
    except (EOFError, ConnectionError):
        result["closed"] = True
    return result


def stream_loop(conn, out, stop, target):
    result = {"streams": 0, "complete": 0, "errors": [], "closed": False, "bad": [], "unanswered": 0,
              "partials": 0, "max_gap_ms": 0.0, "daemon_events": []}
    next_id = 1
    n = 20
    try:
        while not os.path.exists(stop):
            conn.send({"id": next_id, "target": target, "action": "count", "params": {"n": n}, "more": True,
                       "timeout_ms": 20000})
            result["streams"] += 1
            expected = 1
            last = now_ms()
            while True:
                message = conn.read(25)
                if message is None:
                    result["unanswered"] += 1
                    break
                if "event" in message:
                    result["daemon_events"].append(message["event"])
                    continue
                if message.get("id") != next_id:
                    result["bad"].append("an answer for id %s during stream %d" % (message.get("id"), next_id))
                    continue
                result["max_gap_ms"] = max(result["max_gap_ms"], now_ms() - last)
                last = now_ms()
                if "error" in message:
                    result["errors"].append(message["error"].get("code"))
                    break
                if message.get("continues"):
                    got = (message.get("result") or {}).get("i")
                    if got != expected:
                        result["bad"].append("stream %d: partial %s where %d was due" % (next_id, got, expected))
                    expected = (got or expected) + 1
                    result["partials"] += 1
                    continue
                if expected != n + 1 or (message.get("result") or {}).get("done") != n:
                    result["bad"].append("stream %d: final %s after partial %d" % (next_id, message.get("result"), expected - 1))
                else:
                    result["complete"] += 1
                break
            next_id += 1
        while True:
            message = conn.read(0.2)
            if message is None:
                break
            if "id" in message:
                result["bad"].append("an answer after the last stream: %s" % message)
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
    elif mode == "stream-serve":
        result = stream_serve(conn, out, stop, sys.argv[5])
    elif mode == "stream":
        result = stream_loop(conn, out, stop, sys.argv[5])
    else:
        result = emit_loop(conn, out, stop, sys.argv[5])
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()

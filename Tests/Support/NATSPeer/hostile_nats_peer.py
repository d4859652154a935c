#!/usr/bin/env python3
"""A hostile peer of the Mediator NATS bridge, for its tests (issue 23).

Speaks NATS's text protocol over TCP itself (no client library), on a
loopback server given by --url, until it is killed:

  announce: announces, as each --host (and --hosts more), --targets targets
            named HOST.T00000...
            every --interval-ms (a host flooding the importers);
  flood:    announces --target with the action "flood" as --host and answers
            each call with --partials partial results of --size bytes as fast
            as it can write them, then a final one (a host flooding a caller).
"""
import argparse
import json
import select
import socket
import time


def connect(url):
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.settimeout(None)
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n')
    return sock


def announcement(host, targets, interval_ms):
    return json.dumps({"host": host, "interval_ms": interval_ms, "instance": "hostile-" + host,
                       "targets": targets}).encode()


def publish(sock, subject, payload):
    sock.sendall(b"PUB %s %d\r\n" % (subject.encode(), len(payload)) + payload + b"\r\n")


class Reader:
    """The messages and PINGs the server sends; answers each PING."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def poll(self, timeout):
        """Reads what came within `timeout` s; returns the reply subjects of calls received."""
        replies = []
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return replies
        data = self.sock.recv(1 << 16)
        if not data:
            raise SystemExit("the server closed the connection")
        self.buffer += data
        while b"\r\n" in self.buffer:
            line, rest = self.buffer.split(b"\r\n", 1)
            words = line.split()
            if not words:
                self.buffer = rest
                continue
            if words[0] in (b"MSG", b"HMSG"):
                size = int(words[-1])
                if len(rest) < size + 2:
                    break  # the payload is not all here yet
                reply = words[3] if len(words) == (6 if words[0] == b"HMSG" else 5) else None
                if reply:
                    replies.append(reply.decode())
                self.buffer = rest[size + 2:]
                continue
            if words[0] == b"PING":
                self.sock.sendall(b"PONG\r\n")
            self.buffer = rest
        return replies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--prefix", default="mediator")
    modes = parser.add_subparsers(dest="mode", required=True)
    announce = modes.add_parser("announce")
    announce.add_argument("--host", action="append", default=[])
    announce.add_argument("--hosts", type=int, default=0, help="also announce as this many hosts h00000...")
    announce.add_argument("--targets", type=int, required=True)
    announce.add_argument("--interval-ms", type=int, default=300)
    flood = modes.add_parser("flood")
    flood.add_argument("--host", required=True)
    flood.add_argument("--target", required=True)
    flood.add_argument("--partials", type=int, required=True)
    flood.add_argument("--size", type=int, required=True)
    arguments = parser.parse_args()

    sock = connect(arguments.url)
    reader = Reader(sock)
    hosts_subject = arguments.prefix + ".hosts"
    if arguments.mode == "announce":
        arguments.host += ["h%05d" % index for index in range(arguments.hosts)]
        targets = {host: [{"target": "%s.T%05d" % (host, index), "actions": [{"name": "echo"}]}
                          for index in range(arguments.targets)] for host in arguments.host}
        while True:
            for host in arguments.host:
                publish(sock, hosts_subject, announcement(host, targets[host], arguments.interval_ms))
            reader.poll(arguments.interval_ms / 1000)

    target = [{"target": arguments.target, "actions": [{"name": "flood"}]}]
    sock.sendall(b"SUB %s.call.%s 1\r\n" % (arguments.prefix.encode(), arguments.target.encode()))
    partial = json.dumps({"result": "x" * arguments.size, "continues": True}).encode()
    next_announcement = 0.0
    while True:
        if time.monotonic() >= next_announcement:
            publish(sock, hosts_subject, announcement(arguments.host, target, 300))
            next_announcement = time.monotonic() + 0.3
        for reply in reader.poll(0.05):
            head = b"PUB %s %d\r\n" % (reply.encode(), len(partial))
            batch = head + partial + b"\r\n"
            for start in range(0, arguments.partials, 100):
                sock.sendall(batch * min(100, arguments.partials - start))
                reader.poll(0)
            publish(sock, reply, json.dumps({"result": {"done": True}}).encode())


if __name__ == "__main__":
    main()

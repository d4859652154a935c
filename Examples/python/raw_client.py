#!/usr/bin/env python3
"""The Mediator protocol by hand: one JSON object per line over a Unix socket.

Says hello, calls Notes/add and Notes/list, and prints every response line.
Start mediatord and Examples/python/notes_component.py first, then:

    python3 Examples/python/raw_client.py --socket /tmp/m.sock "buy milk"
"""
import argparse
import json
import os
import socket


def default_socket():
    if os.environ.get("MEDIATOR_SOCKET"):
        return os.environ["MEDIATOR_SOCKET"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "mediator", "mediator.sock")
    return "/run/mediator/mediator.sock"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", default=None, help="daemon socket path")
    parser.add_argument("text", nargs="?", default="hello from raw_client.py")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args.socket or default_socket())
    lines = sock.makefile("rb")

    def call(request_id, target, action, params):
        request = {"id": request_id, "target": target, "action": action, "params": params}
        line = json.dumps(request, separators=(",", ":"))
        print(">>", line)
        sock.sendall(line.encode() + b"\n")
        for raw in lines:  # read until the response with our id; skip events
            raw = raw.rstrip(b"\r\n")
            message = json.loads(raw) if raw.strip() else {}
            if message.get("id") == request_id and "event" not in message:
                print("<<", raw.decode())
                return message
        raise SystemExit("the daemon closed the connection")

    call(1, "mediator", "hello", {"protocol": 1, "name": "raw-client"})
    call(2, "Notes", "add", {"text": args.text, "tags": ["example"]})
    call(3, "Notes", "list", {})
    sock.close()


if __name__ == "__main__":
    main()

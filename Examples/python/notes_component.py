#!/usr/bin/env python3
"""A Mediator component in plain Python (standard library only).

It connects to mediatord, says hello, registers the target "Notes" and serves
these actions, each call in its own thread:

    add       {"text": str, "tags"?: [str]}  -> {"id": n}
    get       {"id": int}                    -> the note, or error "not_found"
    list      {}                             -> {"notes": [note, ...]}
    echo      any                            -> the params plus "caller"
    sleep     {"ms": int}                    -> {"slept": ms}, unless cancelled
    whoami    {}                             -> {"pid": <this process>}
    notFound  (any undeclared action)        -> {"fallback": action, "params": ...}

Run it against a running daemon:

    .build/debug/mediatord --socket /tmp/m.sock &
    python3 Examples/python/notes_component.py --socket /tmp/m.sock
    .build/debug/mediatorctl --socket /tmp/m.sock call Notes add text=hi

The socket is --socket, else $MEDIATOR_SOCKET, else
$XDG_RUNTIME_DIR/mediator/mediator.sock, else /run/mediator/mediator.sock.
It prints "ready" once registered (again after each re-registration). It exits
0 on SIGTERM/SIGINT, and 1 when the daemon goes away, unless --reconnect is
given, in which case it reconnects with backoff and registers again.
"""
import argparse
import json
import os
import signal
import socket
import sys
import threading

ADD_SPEC = {
    "name": "add",
    "description": "Store a note; returns its id.",
    "params": {
        "type": "object",
        "properties": {"text": {"type": "string"},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["text"],
    },
}
ACTIONS = [ADD_SPEC, "get", "list", "echo", "sleep", "whoami", "notFound"]


class CallError(Exception):
    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code, self.message = code, message


class Connection:
    """One socket to the daemon: a buffered line reader and a locked writer."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.reader = self.sock.makefile("rb")
        self.write_lock = threading.Lock()
        self.cancels = {}  # request id (as JSON text) -> threading.Event
        self.cancels_lock = threading.Lock()
        self.next_id = 0

    def send(self, message):
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self.write_lock:
            try:
                self.sock.sendall(line.encode("utf-8"))
            except OSError:
                pass  # the connection is gone; the reader will notice

    def receive(self):
        """The next JSON object from the daemon, or None at end of stream."""
        while True:
            line = self.reader.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                print("notes: ignoring a line that is not JSON", file=sys.stderr)
                continue
            if isinstance(message, dict):
                return message

    def call(self, action, params):
        """Call the daemon synchronously (used only before serving starts)."""
        self.next_id += 1
        self.send({"id": self.next_id, "target": "mediator", "action": action, "params": params})
        while (message := self.receive()) is not None:
            if message.get("id") == self.next_id and ("result" in message or "error" in message):
                if "error" in message:
                    error = message["error"] or {}
                    raise CallError(error.get("code"), error.get("message"))
                return message["result"]
        raise ConnectionError("connection closed during " + action)

    def shutdown(self):
        """Make a blocked reader see end of stream (safe in a signal handler)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self):
        self.shutdown()
        with self.cancels_lock:
            for event in self.cancels.values():
                event.set()  # wake the sleepers: nobody waits for their answers
            self.cancels.clear()
        self.reader.close()
        self.sock.close()


class Notes:
    def __init__(self):
        self.lock = threading.Lock()
        self.notes = {}

    def handle(self, action, params, request, cancelled):
        if action == "add":
            if not isinstance(params.get("text"), str):
                raise CallError("invalid_params", "'text' must be a string")
            with self.lock:
                note = {"id": len(self.notes) + 1, "text": params["text"],
                        "tags": list(params.get("tags", []))}
                self.notes[note["id"]] = note
            return {"id": note["id"]}
        if action == "get":
            with self.lock:
                note = self.notes.get(integer(params, "id"))
            if note is None:
                raise CallError("not_found", "no note with id %r" % params.get("id"))
            return note
        if action == "list":
            with self.lock:
                return {"notes": list(self.notes.values())}
        if action == "echo":
            return dict(params, caller=request.get("caller"))
        if action == "sleep":
            ms = integer(params, "ms")
            return None if cancelled.wait(max(ms, 0) / 1000) else {"slept": ms}
        if action == "whoami":
            return {"pid": os.getpid()}
        if action == "notFound":
            return {"fallback": params.get("action"), "params": params.get("params", {})}
        raise CallError("action_not_found", "Notes has no action %r" % action)


def integer(params, key):
    """params[key] as an int; digit strings are accepted too (URL form)."""
    value = params.get(key)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            pass
    if not isinstance(value, int) or isinstance(value, bool):
        raise CallError("invalid_params", "%r must be an integer" % key)
    return value


def run_call(conn, notes, request, cancelled):
    request_id = request.get("id")
    params = request.get("params", {})
    try:
        if not isinstance(params, dict):
            raise CallError("invalid_params", "params must be an object")
        response = {"result": notes.handle(request["action"], params, request, cancelled)}
    except CallError as e:
        response = {"error": {"code": e.code, "message": e.message}}
    except Exception as e:  # a bug here must not kill the component
        response = {"error": {"code": "internal", "message": repr(e)}}
    if request_id is None:
        return  # oneway: no response, not even an error
    key = json.dumps(request_id)
    with conn.cancels_lock:
        conn.cancels.pop(key, None)
    if not cancelled.is_set():
        conn.send({"id": request_id, **response})


def serve(conn, notes):
    """Dispatch incoming messages until the connection closes."""
    while (message := conn.receive()) is not None:
        if message.get("event") == "mediator.stop":
            # The daemon has no more use for us (idle, or stopped by hand):
            # leave at once rather than wait for its SIGTERM.
            return True
        if message.get("event") == "mediator.cancel":
            data = message.get("data") or {}
            with conn.cancels_lock:
                event = conn.cancels.pop(json.dumps(data.get("id")), None)
            if event is not None:
                event.set()
        elif "target" in message and "action" in message:
            cancelled = threading.Event()
            if message.get("id") is not None:
                with conn.cancels_lock:
                    conn.cancels[json.dumps(message["id"])] = cancelled
            threading.Thread(target=run_call, args=(conn, notes, message, cancelled),
                             daemon=True).start()
        # Responses and other events are not expected here; ignore them.
    return False


def default_socket():
    if os.environ.get("MEDIATOR_SOCKET"):
        return os.environ["MEDIATOR_SOCKET"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "mediator", "mediator.sock")
    return "/run/mediator/mediator.sock"


def main():
    parser = argparse.ArgumentParser(description="Mediator 'Notes' example component")
    parser.add_argument("--socket", default=None, help="daemon socket path")
    parser.add_argument("--target", default=os.environ.get("MEDIATOR_TARGET") or "Notes",
                        help="target name to register (default: $MEDIATOR_TARGET, else Notes)")
    parser.add_argument("--mode", choices=["exclusive", "pool"], default="exclusive")
    parser.add_argument("--reconnect", action="store_true",
                        help="reconnect with backoff when the daemon goes away")
    args = parser.parse_args()
    path = args.socket or default_socket()

    notes, stopping, current = Notes(), threading.Event(), [None]

    def on_signal(signum, frame):
        stopping.set()
        if current[0] is not None:
            current[0].shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    delay = 0.1
    while not stopping.is_set():
        conn = None
        try:
            current[0] = conn = Connection(path)
            if stopping.is_set():
                conn.shutdown()  # the signal came before current[0] was set
            conn.call("hello", {"protocol": 1, "name": "notes-py"})
            conn.call("register", {"target": args.target, "actions": ACTIONS, "mode": args.mode,
                                   "description": "In-memory notes (Python example)"})
        except (OSError, CallError) as e:  # ConnectionError is an OSError
            if conn is not None:
                conn.close()
            if stopping.is_set():
                break
            print("notes: cannot register %s at %s: %s" % (args.target, path, e), file=sys.stderr)
            if not args.reconnect:
                return 1
            stopping.wait(delay)
            delay = min(delay * 2, 2.0)
            continue
        delay = 0.1
        try:
            print("ready", flush=True)
        except OSError:
            pass  # nobody reads stdout any more
        asked_to_stop = serve(conn, notes)
        conn.close()
        if stopping.is_set() or asked_to_stop:
            break
        print("notes: the daemon closed the connection", file=sys.stderr)
        if not args.reconnect:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

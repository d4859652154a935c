#!/usr/bin/env python3
"""A Mediator component in Python, typed from its interface file.

Notes.mediator.json declares the target "Notes": every action with its params
and result schemas. notes.py is generated from it
(`mediatorctl generate python Examples/python/Notes.mediator.json --output Examples/python`):
dataclasses, NotesClient, NotesService and make_service/serve. This program
subclasses NotesService; the `mediator` package (python/ in this repository,
standard library only) does the protocol, each call in its own thread.

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
import os
import signal
import sys
import threading

# This folder (for the generated notes.py, also under `python3 -I`), and the
# repository's python/ folder, so that this runs from a clone without
# `pip install ./python`; an installed `mediator` is used otherwise.
_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "python")
for _folder in (_HERE, _PACKAGE):
    if os.path.isdir(_folder) and _folder not in sys.path:
        sys.path.insert(0, _folder)

import mediator  # noqa: E402
import notes  # noqa: E402  (generated, next to this file)


class Notes(notes.NotesService):
    """The notes, in memory; every method runs on a call's own thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.notes = {}  # id -> notes.Note

    def add(self, params, ctx):
        with self.lock:
            note = notes.Note(id=len(self.notes) + 1, text=params.text, tags=list(params.tags or []))
            self.notes[note.id] = note
        return notes.AddResult(id=note.id)

    def get(self, params, ctx):
        with self.lock:
            note = self.notes.get(integer(params.id, "id"))
        if note is None:
            raise mediator.MediatorError("not_found", "no note with id %r" % params.id)
        return note

    def list(self, params, ctx):
        with self.lock:
            return notes.ListResult(notes=list(self.notes.values()))

    def echo(self, params, ctx):
        return dict(params, caller=ctx.caller)

    def sleep(self, params, ctx):
        ms = integer(params.ms, "ms")
        # On mediator.cancel the package sets ctx.cancelled and sends no answer.
        ctx.cancelled.wait(max(ms, 0) / 1000)
        return notes.SleepResult(slept=ms)

    def whoami(self, params, ctx):
        return notes.WhoamiResult(pid=os.getpid())

    def not_found(self, params, ctx):
        return notes.NotFoundResult(fallback=params.action, params={} if params.params is None else params.params)


def integer(value, key):
    """An int; digit strings are accepted too (the URL form: `open` sends strings)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            pass
    if not isinstance(value, int) or isinstance(value, bool):
        raise mediator.MediatorError("invalid_params", "%r must be an integer" % key)
    return value


def main():
    parser = argparse.ArgumentParser(description="Mediator 'Notes' example component")
    parser.add_argument("--socket", default=None, help="daemon socket path")
    parser.add_argument("--target", default=os.environ.get("MEDIATOR_TARGET") or notes.INTERFACE["target"],
                        help="target name to register (default: $MEDIATOR_TARGET, else Notes)")
    parser.add_argument("--mode", choices=["exclusive", "pool"], default="exclusive")
    parser.add_argument("--reconnect", action="store_true",
                        help="reconnect with backoff when the daemon goes away")
    args = parser.parse_args()
    path = mediator.socket_path(args.socket, user=bool(os.environ.get("XDG_RUNTIME_DIR")))

    svc = notes.make_service(Notes(), target=args.target, mode=args.mode)
    svc.stop_timeout = 0  # on SIGTERM or mediator.stop leave at once; calls in flight get no answer
    stopping = threading.Event()
    registered = [False]

    def on_signal(signum, frame):
        stopping.set()
        svc.stop()

    def on_registered():
        registered[0] = True
        if stopping.is_set():
            svc.stop()  # the signal came before run() began
            return
        try:
            print("ready", flush=True)
        except OSError:
            pass  # nobody reads stdout any more

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    delay = 0.1
    while not stopping.is_set():
        try:
            # Returns on SIGTERM/SIGINT (svc.stop) or mediator.stop; with
            # --reconnect it registers again by itself once it has registered.
            svc.run(socket=path, name="notes-py", reconnect=args.reconnect, on_registered=on_registered)
            return 0
        except mediator.MediatorError as e:
            if stopping.is_set():
                break
            if registered[0]:
                print("notes: the daemon closed the connection", file=sys.stderr)
                return 1
            print("notes: cannot register %s at %s: %s" % (args.target, path, e), file=sys.stderr)
            if not args.reconnect:
                return 1
            stopping.wait(delay)  # the first registration failed: try again with backoff
            delay = min(delay * 2, 5.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

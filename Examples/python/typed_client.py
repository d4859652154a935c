#!/usr/bin/env python3
"""A typed Python client of the Notes target (start notes_component.py first).

It uses NotesClient from notes.py, generated from Notes.mediator.json: each
action is a method taking and returning dataclasses, so a typo in an action
or member name is an AttributeError or TypeError here, not a call the daemon
refuses at run time.

    python3 Examples/python/typed_client.py --socket /tmp/m.sock "buy milk" --tag shop

It adds a note, lists the notes with their typed fields, and shows the error
code of a note that does not exist (not_found). The socket is --socket, else
$MEDIATOR_SOCKET, else $XDG_RUNTIME_DIR/mediator/mediator.sock, else
/run/mediator/mediator.sock.
"""
import argparse
import os
import sys

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


def main():
    parser = argparse.ArgumentParser(description="Typed client of the Mediator 'Notes' example")
    parser.add_argument("text", nargs="?", default="hello from typed_client.py", help="the note to add")
    parser.add_argument("--tag", action="append", dest="tags", help="a tag (repeatable)")
    parser.add_argument("--socket", default=None, help="daemon socket path")
    args = parser.parse_args()

    # The user instance where there is one, else the system's.
    path = mediator.socket_path(args.socket, user=bool(os.environ.get("XDG_RUNTIME_DIR")))
    try:
        with mediator.connect(path, name="notes-typed-client", timeout=10) as client:
            service = notes.NotesClient(client)

            added = service.add(notes.AddParams(text=args.text, tags=args.tags))  # -> notes.AddResult
            print("added note %d" % added.id)

            listing = service.list()  # -> notes.ListResult; .notes is a list of notes.Note
            for note in listing.notes:
                tags = " [%s]" % ", ".join(note.tags) if note.tags else ""
                print("%4d  %s%s" % (note.id, note.text, tags))

            missing = max((note.id for note in listing.notes), default=0) + 1000
            try:
                service.get(notes.GetParams(id=missing))
            except mediator.MediatorError as e:  # the wire's error code, as sent by the component
                print("get %d: error %s (%s)" % (missing, e.code, e.message))
    except mediator.MediatorError as e:
        print("typed_client: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

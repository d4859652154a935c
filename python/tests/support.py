"""Test helpers: the package on sys.path, a real mediatord on a temp socket,
and a fake daemon for tests without one. Every wait here is bounded."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import mediator  # noqa: E402
from mediator import testing  # noqa: E402
from mediator.testing import TestDaemon  # noqa: E402

MEDIATORD = os.environ.get("MEDIATORD") or os.path.join(REPO, ".build", "debug", "mediatord")
MEDIATORCTL = os.environ.get("MEDIATORCTL") or os.path.join(os.path.dirname(MEDIATORD), "mediatorctl")
HAVE_DAEMON = os.access(MEDIATORD, os.X_OK)
NO_DAEMON = ("mediatord not found at %s: run `swift build` in the repository "
             "(or set $MEDIATORD) to run the integration tests" % MEDIATORD)


#: What the fake daemons answer themselves.
DAEMON_ACTIONS = ("hello", "register", "unregister", "ping")


def wait_until(predicate, timeout=10.0, interval=0.02):
    """Polls `predicate` until it is true; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class Daemon(TestDaemon):
    """mediator.testing's daemon, with the names these tests use and `ctl`."""

    def __init__(self, *extra):
        super().__init__(*extra, binary=MEDIATORD)
        self.socket = self.socket_path

    @property
    def extra(self):
        return self.args

    @extra.setter
    def extra(self, flags):
        self.args = list(flags)

    @property
    def proc(self):
        return self.process

    def ctl(self, *args, timeout=20.0):
        return subprocess.run([MEDIATORCTL] + list(args[:1]) + ["--socket", self.socket] + list(args[1:]),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


@unittest.skipUnless(HAVE_DAEMON, NO_DAEMON)
class DaemonTestCase(testing.DaemonTestCase):
    """mediator.testing's test case, on the daemon these tests build (`self.socket`)."""

    def make_daemon(self):
        return Daemon()

    def setUp(self):
        super().setUp()
        self.socket = self.daemon.socket


class FakeDaemon:
    """A listening socket that answers `hello`, `register`, `unregister` and `ping` with
    `{}` and hands every other line to `on_message(message, send)` (on its
    own thread). `received` keeps every message."""

    def __init__(self, on_message=None):
        self.dir = tempfile.mkdtemp(prefix="medpy-fake-")
        self.socket = os.path.join(self.dir, "fake.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket)
        self.listener.listen(4)
        self.on_message = on_message
        self.received = []
        self.connections = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        def send(message, raw=None):
            data = raw if raw is not None else json.dumps(message).encode() + b"\n"
            with self.lock:
                conn.sendall(data)
        for line in conn.makefile("rb"):
            if not line.strip():
                continue
            message = json.loads(line)
            self.received.append(message)
            if message.get("target") == "mediator" and message.get("action") in DAEMON_ACTIONS:
                send({"id": message["id"], "result": {"max_frame": 1 << 20, "connection": 1}})
            elif self.on_message is not None:
                self.on_message(message, send)

    def drop_connections(self):
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.close()
        self.drop_connections()
        shutil.rmtree(self.dir, ignore_errors=True)


def open_fds():
    """How many descriptors this process has open (to find leaks)."""
    return len(os.listdir("/proc/self/fd"))


class FdPeer:
    """A fake daemon that speaks PROTOCOL.md section 8 with the standard
    library's own `socket.recv_fds`/`send_fds` (not the package's code):
    descriptors that arrive go to a FIFO, and each message declaring
    `fds: N` takes the next N. It answers `hello` (with `max_fds`),
    `register`, `unregister` and `ping`, and hands every other message to
    `on_message(message, fds, conn)`; `conn.send(message, fds=(), raw=None)`
    answers. `max_fds=None` leaves it out of the hello result."""

    def __init__(self, on_message=None, max_fds=16, max_frame=1 << 20):
        self.dir = tempfile.mkdtemp(prefix="medpy-fd-")
        self.socket = os.path.join(self.dir, "fd.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.socket)
        self.listener.listen(4)
        self.on_message = on_message
        self.max_fds, self.max_frame = max_fds, max_frame
        self.received = []  # (message, number of descriptors)
        self.hellos = []
        self.connections = []
        self.threads = []
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            peer = _FdConnection(conn)
            self.connections.append(peer)
            thread = threading.Thread(target=self._serve, args=(peer,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, peer):
        for message, fds in peer.messages():
            self.received.append((message, len(fds)))
            if message.get("target") == "mediator" and message.get("action") in DAEMON_ACTIONS:
                result = {"max_frame": self.max_frame, "connection": 1}
                if message["action"] == "hello":
                    self.hellos.append(message)
                    if self.max_fds is not None:
                        result["max_fds"] = self.max_fds
                peer.send({"id": message["id"], "result": result})
            elif self.on_message is not None:
                self.on_message(message, fds, peer)
            else:
                for fd in fds:
                    os.close(fd)

    def close(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept(), which close() alone does not
        except OSError:
            pass
        self.listener.close()
        for peer in self.connections:
            peer.shutdown()
        for thread in self.threads:
            thread.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)


class _FdConnection:
    def __init__(self, conn):
        self.conn = conn
        self.lock = threading.Lock()
        self.fifo = []

    def messages(self):
        buffer = b""
        try:
            while True:
                try:
                    data, fds, _, _ = socket.recv_fds(self.conn, 1 << 16, 253)
                except OSError:
                    return
                self.fifo.extend(fds)
                if not data:
                    return
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    message = json.loads(line)
                    count = message.get("fds", 0)
                    taken, self.fifo = self.fifo[:count], self.fifo[count:]
                    yield message, taken
        finally:
            for fd in self.fifo:
                os.close(fd)
            self.fifo = []
            self.conn.close()

    def send(self, message=None, fds=(), raw=None):
        data = raw if raw is not None else json.dumps(message).encode() + b"\n"
        with self.lock:
            if fds:
                sent = socket.send_fds(self.conn, [data], list(fds))
                data = data[sent:]
            if data:
                self.conn.sendall(data)

    def shutdown(self):
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

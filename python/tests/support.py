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
        return Daemon(*self.daemon_args)

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
        #: The daemon actions it answers itself (a test may take some away).
        self.own_actions = DAEMON_ACTIONS
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
            if message.get("target") == "mediator" and message.get("action") in self.own_actions:
                send({"id": message["id"], "result": {"max_frame": 1 << 20, "connection": 1}})
            elif self.on_message is not None:
                self.on_message(message, send)

    def send_to_all(self, message):
        """Sends `message` on every connection, as the daemon sends its own events."""
        data = json.dumps(message).encode() + b"\n"
        with self.lock:
            for conn in self.connections:
                conn.sendall(data)

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


class RawPeer:
    """A peer of a real mediatord on a bare socket, speaking PROTOCOL.md
    section 8 by hand with the standard library's `send_fds`/`recv_fds`
    (none of the package's code): `hello` (with `"fds": true` unless
    `fds=False`), then `send`/`request`/`wait_for`. Messages that arrive
    while it waits for another are kept in order for a later `wait_for`.
    Every wait is bounded by `timeout`; a connection closed or silent past
    it fails the test."""

    def __init__(self, path, fds=True, timeout=10.0, name=None):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(path)
        self.link = _FdConnection(sock)
        self._incoming = self.link.messages()
        self._kept = []
        self._next_id = 0
        params = {"protocol": 1}
        if fds:
            params["fds"] = True
        if name:
            params["name"] = name
        self.hello, _ = self.call("mediator", "hello", params)

    def send(self, message=None, fds=(), raw=None):
        self.link.send(message, fds, raw)

    def request(self, target, action, params=None, fds=(), declare=None, **members):
        """Sends a request with `fds`, declaring `"fds": declare` (default:
        as many as are sent); returns its id."""
        self._next_id += 1
        message = {"id": self._next_id, "target": target, "action": action, "params": params or {}}
        declare = len(fds) if declare is None else declare
        if declare:
            message["fds"] = declare
        message.update(members)
        self.send(message, fds)
        return self._next_id

    def receive(self):
        """The next (message, descriptors) in order."""
        if self._kept:
            return self._kept.pop(0)
        try:
            return next(self._incoming)
        except StopIteration:
            raise AssertionError("the daemon closed the connection, or sent nothing in time") from None

    def wait_for(self, matches):
        """The first (message, descriptors) for which `matches(message)`;
        the others are kept, in order."""
        for index, (message, fds) in enumerate(self._kept):
            if matches(message):
                del self._kept[index]
                return message, fds
        while True:
            try:
                message, fds = next(self._incoming)
            except StopIteration:
                raise AssertionError("the daemon closed the connection, or sent nothing in time") from None
            if matches(message):
                return message, fds
            self._kept.append((message, fds))

    def answer(self, request_id):
        """The next response to `request_id` (a partial or the final one)."""
        return self.wait_for(lambda m: m.get("id") == request_id and "target" not in m
                             and ("result" in m or "error" in m))

    def call(self, target, action, params=None, fds=(), declare=None, **members):
        return self.answer(self.request(target, action, params, fds, declare, **members))

    def register(self, target, actions, **params):
        message, _ = self.call("mediator", "register", dict(params, target=target, actions=list(actions)))
        if "error" in message:
            raise AssertionError("register %s: %s" % (target, message["error"]))
        return message["result"]

    def close(self):
        self.link.shutdown()
        for _, fds in self._kept:
            for fd in fds:
                os.close(fd)
        self._kept = []
        try:
            self._incoming.close()  # closes the socket and descriptors that no message claimed
        except ValueError:
            pass  # another thread reads it: the shutdown ends that read, which closes them


def fd_count(pid):
    """How many descriptors process `pid` has open."""
    return len(os.listdir("/proc/%d/fd" % pid))

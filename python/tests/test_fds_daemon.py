"""Descriptors through the real mediatord (issue 26, Tests): between the
package and raw-socket peers in each direction, handed from a privileged
component to an unprivileged caller, and against hostile peers. Each
hostile case checks the answer's code and that the daemon closed what it
could not deliver: a pipe's read end sees EOF once every copy of its write
end is closed, and mediatord's /proc/PID/fd count is back at its baseline."""
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

from support import HERE, DaemonTestCase, RawPeer, fd_count, wait_until
from test_fds import read_all

import mediator

#: The uid of the unprivileged side (setpriv), and the helper it runs.
NOBODY = 65534
UNPRIVILEGED = os.path.join(HERE, "fd_unprivileged.py")
CAN_SWITCH_UID = os.geteuid() == 0 and os.path.exists("/usr/bin/setpriv")
#: The kernel's limit of descriptors in one SCM_RIGHTS message, the daemon's default max_fds.
KERNEL_MAX_FDS = 253


def identity(fd):
    status = os.fstat(fd)
    return [status.st_dev, status.st_ino]


class RawComponent:
    """A component on a bare socket (RawPeer): registers `target` and hands
    each request with its descriptors to `handler(message, fds, peer)` on
    its own thread; events are dropped (their descriptors closed)."""

    def __init__(self, test, target, actions, handler, fds=True):
        self.peer = RawPeer(test.socket, fds=fds)
        self.peer.register(target, actions)
        self.peer.link.conn.settimeout(None)  # idle as long as the test wants; close() ends the read
        self.handler, self.errors, self.stopping = handler, [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        test.addCleanup(self.stop, test)

    def _run(self):
        while True:
            try:
                message, fds = self.peer.receive()
            except AssertionError:  # the connection closed
                return
            if "target" in message:
                try:
                    self.handler(message, fds, self.peer)
                except Exception as error:  # reported by stop()
                    if not self.stopping:
                        self.errors.append(error)
            else:
                for fd in fds:
                    os.close(fd)

    def stop(self, test):
        self.stopping = True
        self.peer.close()
        self.thread.join(10)
        test.assertEqual(self.errors, [])


def answer_with_identities(message, fds, peer):
    """Answers with the (st_dev, st_ino) of each descriptor it got, and, when
    asked with `give`, with descriptors of its own (the read ends of pipes
    whose write ends say which they are)."""
    identities = [identity(fd) for fd in fds]
    for fd in fds:
        os.close(fd)
    own = []
    for index in range(message["params"].get("give", 0)):
        r, w = os.pipe()
        os.write(w, b"given %d" % index)
        os.close(w)
        own.append(r)
    result = {"got": identities, "given": [{"$fd": i} for i in range(len(own))]}
    for part in range(message["params"].get("parts", 0) if message.get("more") else 0):
        memfd = mediator.memfd_from_bytes(b"part %d" % part)
        peer.send({"id": message["id"], "continues": True, "result": {"part": {"$fd": 0}}, "fds": 1}, [memfd])
        os.close(memfd)
    reply = {"id": message["id"], "result": result}
    if own:
        reply["fds"] = len(own)
    peer.send(reply, own)
    for fd in own:
        os.close(fd)


def descriptor_zoo(test):
    """Descriptors of several kinds, each a different open file: a pipe's
    write end, a temp file, /dev/null, a socket, a memfd. Closed after the test."""
    r, w = os.pipe()
    handle = tempfile.TemporaryFile()
    null = os.open("/dev/null", os.O_RDONLY)
    left, right = socket.socketpair()
    memfd = mediator.memfd_from_bytes(b"zoo")
    for each in (r, w, null, memfd):
        test.addCleanup(os.close, each)
    for each in (handle, left, right):
        test.addCleanup(each.close)
    return [w, handle.fileno(), null, left.fileno(), memfd]


class FdsThroughDaemonTestCase(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.pid = self.daemon.process.pid

    def raw(self, **options):
        peer = RawPeer(self.socket, **options)
        self.addCleanup(peer.close)
        return peer

    def daemon_fds(self):
        return fd_count(self.pid)

    def assertDaemonBackTo(self, baseline):
        wait_until(lambda: self.daemon_fds() == baseline, 10)
        self.assertEqual(self.daemon_fds(), baseline, "mediatord's descriptors: %s"
                         % sorted(os.readlink("/proc/%d/fd/%s" % (self.pid, fd))
                                  for fd in os.listdir("/proc/%d/fd" % self.pid)))

    def assertClosedEverywhere(self, read_end):
        """The pipe's write ends are all closed (ours first): the daemon kept no copy."""
        self.assertEqual(read_all(read_end), b"")

    def pipe(self):
        """A pipe: (read end, closed after the test; write end, closed by the caller)."""
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        return r, w


class EndToEndTests(FdsThroughDaemonTestCase):
    def serve_identities(self, fds=True):
        service = mediator.Service("Ids")

        @service.action("ids")
        def ids(params, ctx):
            found = [identity(handle.fileno()) for handle in params["f"]]
            for handle in params["f"]:
                handle.close()
            given = []
            for index in range(params.get("give", 0)):
                r, w = os.pipe()
                os.write(w, b"given %d" % index)
                os.close(w)
                given.append(mediator.FD(r, close=True))
            return {"got": found, "given": given}
        self.serve(service, fds=fds)

    def test_raw_caller_to_package_component_in_order_same_files(self):
        self.serve_identities()
        caller = self.raw()
        self.assertEqual(caller.hello["result"]["max_fds"], KERNEL_MAX_FDS)
        zoo = descriptor_zoo(self)
        message, fds = caller.call("Ids", "ids", {"f": [{"$fd": i} for i in range(len(zoo))], "give": 2}, zoo)
        self.assertEqual(message["result"]["got"], [identity(fd) for fd in zoo])
        # Both ways in one call: the component's two pipes come back in order.
        self.assertEqual((message["fds"], message["result"]["given"]), (2, [{"$fd": 0}, {"$fd": 1}]))
        self.assertEqual([read_all(fd) for fd in fds], [b"given 0", b"given 1"])
        for fd in fds:
            os.close(fd)

    def test_package_caller_to_raw_component_in_order_same_files(self):
        RawComponent(self, "RawIds", ["ids"], answer_with_identities)
        client = self.connect(fds=True)
        zoo = descriptor_zoo(self)
        result = client.call("RawIds", "ids", {"f": [mediator.FD(fd) for fd in zoo], "give": 3})
        self.assertEqual(result["got"], [identity(fd) for fd in zoo])
        self.assertEqual([read_all(handle.fileno()) for handle in result["given"]], [b"given 0", b"given 1", b"given 2"])
        for handle in result["given"]:
            handle.close()

    def test_raw_to_raw_with_stream_partials(self):
        RawComponent(self, "RawIds", ["ids"], answer_with_identities)
        caller = self.raw()
        zoo = descriptor_zoo(self)
        call = caller.request("RawIds", "ids", {"f": [{"$fd": i} for i in range(len(zoo))], "give": 1, "parts": 3},
                              zoo, more=True)
        parts = []
        while True:
            message, fds = caller.answer(call)
            if not message.get("continues"):
                break
            self.assertEqual((message["fds"], len(fds), message["result"]), (1, 1, {"part": {"$fd": 0}}))
            parts.append(bytes(mediator.read_memfd(fds[0])))
            os.close(fds[0])
        self.assertEqual(parts, [b"part 0", b"part 1", b"part 2"])
        self.assertEqual(message["result"]["got"], [identity(fd) for fd in zoo])
        self.assertEqual(read_all(fds[0]), b"given 0")
        os.close(fds[0])

    def test_package_stream_partials_from_a_raw_component(self):
        RawComponent(self, "RawIds", ["ids"], answer_with_identities)
        client = self.connect(fds=True)
        values = list(client.stream("RawIds", "ids", {"f": [], "parts": 2, "give": 1}))
        self.assertEqual(len(values), 3)
        self.assertEqual([bytes(mediator.read_memfd(v["part"].fileno())) for v in values[:2]], [b"part 0", b"part 1"])
        self.assertEqual(read_all(values[2]["given"][0].fileno()), b"given 0")
        for value in values[:2]:
            value["part"].close()
        values[2]["given"][0].close()

    @unittest.skipUnless(CAN_SWITCH_UID, "needs root and setpriv to run the caller as another uid")
    def test_a_privileged_component_hands_an_unprivileged_caller_an_opened_file(self):
        # A file only root may open, in a folder only root may enter.
        private = tempfile.mkdtemp(prefix="mediator-private-")
        self.addCleanup(os.rmdir, private)
        path = os.path.join(private, "secret")
        with open(path, "w") as secret:
            secret.write("for root's eyes, handed over")
        self.addCleanup(os.unlink, path)
        os.chmod(path, 0o600)
        os.chmod(self.daemon.dir, 0o755)  # the unprivileged caller reaches the socket (mode 0666)
        service = mediator.Service("Files")

        @service.action("open")
        def open_(params, ctx):
            # The privileged side checks who asks, then opens for them.
            if ctx.caller["uid"] != NOBODY:
                raise mediator.MediatorError("forbidden", "not for this caller")
            return {"file": mediator.FD(os.open(params["path"], os.O_RDONLY), close=True)}
        self.serve(service, fds=True)
        report = run_unprivileged("open", self.socket, path)
        self.assertEqual(report["can_open"], False)
        self.assertEqual(report["content"], "for root's eyes, handed over")
        self.assertEqual(report["file"], identity_of_path(path))


AS_NOBODY = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]


@functools.lru_cache(maxsize=None)
def unprivileged_python():
    """A python3 that NOBODY can run, with socket.send_fds (3.9+): this
    one, unless it lives where NOBODY may not read (a pyenv build under
    /root), then the system's; None when neither works."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(candidate):
            continue
        probe = subprocess.run(AS_NOBODY + [candidate, "-c", "import socket; socket.send_fds"],
                               capture_output=True, timeout=30)
        if probe.returncode == 0:
            return candidate
    return None


def run_unprivileged(command, *arguments):
    """What fd_unprivileged.py reports when run as NOBODY (setpriv)."""
    python = unprivileged_python()
    if python is None:
        raise unittest.SkipTest("no python3 that uid %d may run" % NOBODY)
    seen = subprocess.run(
        AS_NOBODY + [python, UNPRIVILEGED, command] + [str(a) for a in arguments],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    if seen.returncode != 0:
        raise AssertionError("fd_unprivileged.py %s failed: %s" % (command, seen.stderr))
    report = json.loads(seen.stdout)
    if report["uid"] != NOBODY:
        raise AssertionError("fd_unprivileged.py ran as uid %s" % report["uid"])
    return report


def identity_of_path(path):
    status = os.stat(path)
    return [status.st_dev, status.st_ino]


class Sink:
    """A raw component of `Sink` that keeps what reached it (the message and
    the identities of its descriptors), closes the descriptors and answers
    with their count."""

    def __init__(self, test, target="Sink"):
        self.received = []
        self.component = RawComponent(test, target, ["take"], self.take)

    def take(self, message, fds, peer):
        self.received.append((message, [identity(fd) for fd in fds]))
        for fd in fds:
            os.close(fd)
        peer.send({"id": message["id"], "result": {"got": len(fds)}})


class HostilePeerTests(FdsThroughDaemonTestCase):
    def setUp(self):
        super().setUp()
        self.sink = Sink(self)
        self.caller = self.raw()
        self.baseline = self.daemon_fds()

    def assertRefused(self, message, code, *read_ends):
        self.assertEqual(message.get("error", {}).get("code"), code, message)
        for r in read_ends:
            self.assertClosedEverywhere(r)
        self.assertEqual(self.sink.received, [])
        self.assertDaemonBackTo(self.baseline)
        self.assertIn("result", self.caller.call("mediator", "ping")[0])  # the connection still works

    def send_pipes(self, count, message=None, raw=None):
        """Sends `count` pipes' write ends with `message` (or raw bytes), closes
        ours; returns the read ends."""
        ends = [self.pipe() for _ in range(count)]
        self.caller.send(message, [w for _, w in ends], raw=raw)
        for _, w in ends:
            os.close(w)
        return [r for r, _ in ends]

    def test_more_descriptors_than_the_json_names(self):
        ends = self.send_pipes(2, {"id": 1, "target": "Sink", "action": "take", "params": {"f": {"$fd": 0}}, "fds": 1})
        self.assertRefused(self.caller.answer(1)[0], "bad_request", *ends)

    def test_fewer_descriptors_than_the_json_names(self):
        ends = self.send_pipes(1, {"id": 1, "target": "Sink", "action": "take",
                                   "params": {"f": [{"$fd": 0}, {"$fd": 1}]}, "fds": 2})
        self.assertRefused(self.caller.answer(1)[0], "bad_request", *ends)

    def test_descriptors_with_a_line_that_declares_none(self):
        ends = self.send_pipes(1, {"id": 1, "target": "Sink", "action": "take", "params": {}})
        self.assertRefused(self.caller.answer(1)[0], "bad_request", *ends)

    def test_descriptors_with_bytes_that_end_mid_line_then_a_line_declaring_none(self):
        ends = self.send_pipes(1, raw=b'{"id":1,"target":"Sink","act')
        self.caller.send(raw=b'ion":"take","params":{}}\n')
        self.assertRefused(self.caller.answer(1)[0], "bad_request", *ends)

    def test_descriptors_with_bytes_that_end_mid_line_then_the_peer_leaves(self):
        leaving = RawPeer(self.socket)
        ends = [self.pipe() for _ in range(3)]
        leaving.send(raw=b'{"id":1,"target":"Sink","action":"take","fds":3,"par', fds=[w for _, w in ends])
        for _, w in ends:
            os.close(w)
        leaving.close()
        for r, _ in ends:
            self.assertClosedEverywhere(r)
        self.assertEqual(self.sink.received, [])
        self.assertDaemonBackTo(self.baseline)

    def test_a_peer_that_did_not_say_fds(self):
        plain = self.raw(fds=False)
        self.assertNotIn("max_fds", plain.hello["result"])
        baseline = self.daemon_fds()
        r, w = self.pipe()
        plain.send({"id": 1, "target": "Sink", "action": "take", "params": {"f": {"$fd": 0}}, "fds": 1}, [w])
        os.close(w)
        self.assertEqual(plain.answer(1)[0]["error"]["code"], "bad_request")
        self.assertClosedEverywhere(r)
        self.assertEqual(self.sink.received, [])
        self.assertDaemonBackTo(baseline)

    def test_an_answer_with_descriptors_to_a_caller_without_fds(self):
        def give(message, fds, peer):
            r, w = os.pipe()
            given.append(r)
            peer.send({"id": message["id"], "result": {"f": {"$fd": 0}}, "fds": 1}, [w])
            os.close(w)
        given = []
        RawComponent(self, "Giver", ["give"], give)
        plain = self.raw(fds=False)
        baseline = self.daemon_fds()
        message, fds = plain.call("Giver", "give")
        self.assertEqual((message["error"]["code"], fds), ("fds_not_supported", []))
        self.addCleanup(os.close, given[0])
        self.assertClosedEverywhere(given[0])
        self.assertDaemonBackTo(baseline)

    def answered_by(self, target, declare, send, fds=True):
        """The caller's answer when a raw component of `target` answers with
        `send` pipes' write ends declaring `declare`; the pipes' read ends."""
        read_ends = []

        def answer(message, fds, peer):
            ends = [os.pipe() for _ in range(send)]
            read_ends.extend(r for r, _ in ends)
            peer.send({"id": message["id"], "result": {"f": {"$fd": 0}}, "fds": declare}, [w for _, w in ends])
            for _, w in ends:
                os.close(w)
        RawComponent(self, target, ["give"], answer, fds=fds)
        baseline = self.daemon_fds()
        message, fds = self.caller.call(target, "give")
        for r in read_ends:
            self.addCleanup(os.close, r)
        self.assertEqual(fds, [])
        return message, read_ends, baseline

    def test_a_component_answer_with_fewer_or_more_descriptors_than_it_declares(self):
        # The component's fault: bad_request, as for a request (it was fds_not_supported).
        for target, declare, send in (("Fewer", 2, 1), ("More", 1, 3)):
            message, read_ends, baseline = self.answered_by(target, declare, send)
            self.assertEqual((message["error"]["code"], message["error"]["data"]["delivered"]), ("bad_request", True))
            self.assertIn("do not match", message["error"]["message"])
            for r in read_ends:
                self.assertClosedEverywhere(r)
            self.assertDaemonBackTo(baseline)

    def test_a_component_without_fds_that_answers_with_descriptors(self):
        message, read_ends, baseline = self.answered_by("Undeclared", 1, 1, fds=False)
        self.assertEqual(message["error"]["code"], "bad_request")
        self.assertClosedEverywhere(read_ends[0])
        self.assertDaemonBackTo(baseline)

    def test_descriptors_the_daemon_cannot_route_are_closed(self):
        plain_answers = []
        RawComponent(self, "PlainSink", ["take"], lambda message, fds, peer: plain_answers.append(message), fds=False)
        baseline = self.daemon_fds()
        cases = [
            # (what, message, the answer's code or None for no answer)
            ("a oneway call to a component without fds", {"target": "PlainSink", "action": "take", "fds": 1}, None),
            ("a oneway call to nobody", {"target": "Nobody", "action": "take", "fds": 1}, None),
            ("an event", {"event": "chaos.fd", "data": {"$fd": 0}, "fds": 1}, None),
            ("the daemon's own target", {"id": 11, "target": "mediator", "action": "ping", "fds": 1},
             "fds_not_supported"),
            ("a target nobody serves", {"id": 12, "target": "Nobody", "action": "take", "fds": 1}, "target_not_found"),
            ("an action not declared", {"id": 13, "target": "Sink", "action": "nope", "fds": 1}, "action_not_found"),
            ("fds 0", {"id": 14, "target": "Sink", "action": "take", "fds": 0}, "bad_request"),
            ("fds not an integer", {"id": 15, "target": "Sink", "action": "take", "fds": "1"}, "bad_request"),
            ("bad JSON", None, "bad_request"),
        ]
        for what, message, code in cases:
            with self.subTest(what):
                raw = b'{"id":17,"target":"Sink","fds":1,\n' if message is None else None
                (r,) = self.send_pipes(1, message, raw=raw)
                if code is not None:
                    answer, fds = self.caller.answer(message["id"] if message else None)
                    self.assertEqual((answer.get("error", {}).get("code", "ok"), fds), (code, []), answer)
                self.assertClosedEverywhere(r)
                self.assertDaemonBackTo(baseline)
        self.assertEqual((self.sink.received, plain_answers), ([], []))
        self.assertIn("result", self.caller.call("mediator", "ping")[0])

    def test_a_late_answer_with_descriptors_is_closed(self):
        late = []
        RawComponent(self, "Late", ["take"], lambda message, fds, peer: late.append((message, fds, peer)))
        baseline = self.daemon_fds()
        message, _ = self.caller.call("Late", "take", {}, timeout_ms=100)
        self.assertEqual(message["error"]["code"], "timeout")
        self.assertTrue(wait_until(lambda: late, 5))
        request, _, peer = late[0]
        r, w = self.pipe()
        peer.send({"id": request["id"], "result": {"f": {"$fd": 0}}, "fds": 1}, [w])
        os.close(w)
        self.assertClosedEverywhere(r)
        self.assertDaemonBackTo(baseline)

    def test_a_duplicate_id_with_descriptors_is_refused_and_closed(self):
        held = []
        RawComponent(self, "Holder", ["hold"], lambda message, fds, peer: held.append((message, fds, peer)))
        baseline = self.daemon_fds()
        first_r, first_w = self.pipe()
        first = self.caller.request("Holder", "hold", {}, [first_w])
        os.close(first_w)
        self.assertTrue(wait_until(lambda: held, 5))
        r, w = self.pipe()
        self.caller.send({"id": first, "target": "Holder", "action": "hold", "fds": 1}, [w])
        os.close(w)
        answer, _ = self.caller.wait_for(lambda m: m.get("id", 0) is None)
        self.assertEqual(answer["error"]["code"], "bad_request")
        self.assertClosedEverywhere(r)
        message, fds, peer = held[0]
        os.close(fds[0])
        peer.send({"id": message["id"], "result": {}})
        self.assertClosedEverywhere(first_r)
        self.assertEqual(self.caller.answer(first)[0]["result"], {})
        self.assertEqual(len(held), 1)
        self.assertDaemonBackTo(baseline)

    def test_253_descriptors_in_one_frame(self):
        ends = [self.pipe() for _ in range((KERNEL_MAX_FDS + 1) // 2)]
        sent = [fd for pair in ends for fd in reversed(pair)][:KERNEL_MAX_FDS]  # write and read ends, mixed
        self.addCleanup(lambda: [os.close(w) for _, w in ends])
        message, _ = self.caller.call("Sink", "take", {"f": [{"$fd": i} for i in range(len(sent))]}, sent)
        self.assertEqual(message["result"], {"got": KERNEL_MAX_FDS})
        self.assertEqual(self.sink.received[0][1], [identity(fd) for fd in sent])
        self.assertDaemonBackTo(self.baseline)

    def test_a_caller_that_leaves_while_a_slow_component_holds_its_descriptors(self):
        held = []
        RawComponent(self, "Slow", ["hold"], lambda message, fds, peer: held.append((message, fds, peer)))
        baseline = self.daemon_fds()
        leaving = RawPeer(self.socket)
        r, w = self.pipe()
        leaving.request("Slow", "hold", {"f": {"$fd": 0}}, [w])
        os.close(w)
        self.assertTrue(wait_until(lambda: held, 10))
        leaving.close()
        # The component's answer, with a descriptor, finds the caller gone: the daemon closes it.
        message, fds, peer = held[0]
        late_r, late_w = self.pipe()
        peer.send({"id": message["id"], "result": {"f": {"$fd": 0}}, "fds": 1}, [late_w])
        os.close(late_w)
        self.assertClosedEverywhere(late_r)
        os.close(fds[0])  # the component lets go of what it held
        self.assertClosedEverywhere(r)
        self.assertDaemonBackTo(baseline)

    def test_a_caller_that_leaves_with_descriptors_queued_toward_a_component(self):
        stuck = RawPeer(self.socket)  # registers and then does not read
        stuck.register("Stuck", ["take"])
        baseline = self.daemon_fds()
        leaving = RawPeer(self.socket)
        ends = [self.pipe() for _ in range(12)]
        for _, w in ends:
            # 64 KiB each: the socket toward the component fills, the rest waits in the daemon.
            leaving.request("Stuck", "take", {"pad": "x" * (64 << 10), "f": {"$fd": 0}}, [w])
            os.close(w)
        leaving.call("mediator", "ping")  # every call is in the daemon now
        self.assertGreater(self.daemon_fds(), baseline + 1, "no descriptor waits in the daemon: pad more")
        leaving.close()
        # The component reads at last: every request, with its descriptor, then lets go.
        requests = 0
        while requests < len(ends):
            message, fds = stuck.receive()
            requests += "target" in message
            for fd in fds:
                os.close(fd)
        for r, _ in ends:
            self.assertClosedEverywhere(r)
        self.assertDaemonBackTo(baseline)
        stuck.close()


class LoweredMaxFdsTests(FdsThroughDaemonTestCase):
    daemon_args = ("--max-fds-per-message", "16")

    def test_over_max_fds_is_a_bad_request_and_closed(self):
        sink = Sink(self)
        caller = self.raw()
        self.assertEqual(caller.hello["result"]["max_fds"], 16)
        baseline = self.daemon_fds()
        for count in (17, KERNEL_MAX_FDS):
            r, w = self.pipe()
            message, _ = caller.call("Sink", "take", {}, [w] * count)
            os.close(w)
            self.assertEqual(message["error"]["code"], "bad_request")
            self.assertClosedEverywhere(r)
            self.assertDaemonBackTo(baseline)
        self.assertEqual(sink.received, [])
        null = os.open("/dev/null", os.O_RDONLY)
        self.addCleanup(os.close, null)
        self.assertEqual(caller.call("Sink", "take", {}, [null] * 16)[0]["result"], {"got": 16})

    def test_a_component_answer_over_max_fds_is_a_bad_request_and_closed(self):
        r, w = self.pipe()

        def answer(message, fds, peer):
            peer.send({"id": message["id"], "result": {}, "fds": 17}, [w] * 17)
            os.close(w)
        RawComponent(self, "Many", ["give"], answer)
        caller = self.raw()
        baseline = self.daemon_fds()
        message, fds = caller.call("Many", "give")
        self.assertEqual((message["error"]["code"], fds), ("bad_request", []))
        self.assertClosedEverywhere(r)
        self.assertDaemonBackTo(baseline)


@unittest.skipUnless(CAN_SWITCH_UID, "needs root and setpriv to flood as another uid")
class FloodFromOneUidTests(FdsThroughDaemonTestCase):
    QUOTA = 8
    daemon_args = ("--max-fds-in-flight-per-uid", str(QUOTA))

    def test_a_flood_from_one_uid_is_refused_at_its_quota(self):
        stuck = RawPeer(self.socket)  # registers and then does not read: what it is sent stays queued
        stuck.register("Stuck", ["take"])
        baseline = self.daemon_fds()
        os.chmod(self.daemon.dir, 0o755)
        report = run_unprivileged("flood", self.socket, 64 << 10)
        self.assertGreaterEqual(report["forwarded"], self.QUOTA)
        self.assertEqual(len(report["errors"]), 4)
        for error in report["errors"]:
            self.assertEqual((error["code"], error.get("data", {}).get("quota"), error.get("data", {}).get("limit")),
                             ("overloaded", "max_fds_in_flight_per_uid", self.QUOTA), error)
            self.assertIn("max_fds_in_flight_per_uid", error["message"])
        self.assertTrue(report["refused_closed"], "the daemon kept a refused descriptor")
        self.assertTrue(report["forwarded_open"], "a forwarded descriptor was closed on its way")
        stuck.close()  # what was queued toward it goes with it
        self.assertDaemonBackTo(baseline - 1)
        # The uid's count went back to nothing: it may have QUOTA in flight again, as often as it likes.
        Sink(self)
        report = run_unprivileged("calls", self.socket, 3 * self.QUOTA)
        self.assertEqual([answer.get("result") for answer in report["answers"]], [{"got": 1}] * (3 * self.QUOTA))


class LeakTests(FdsThroughDaemonTestCase):
    """Issue 26, point 2: after 10,000 descriptor-carrying calls, failures
    included, mediatord has as many descriptors open as before them."""

    CALLS = 10_000
    #: Calls written before their answers are read.
    BATCH = 100
    #: Every this many calls, a caller connects, sends calls and leaves without reading.
    LEAVING_EVERY = 500
    #: The timeout of the calls meant to time out, in ms.
    SHORT_TIMEOUT_MS = 20

    @staticmethod
    def leak_component(message, fds, peer):
        """echo: its descriptor back; stream: it in a partial, then a plain
        result; short: declares two, sends one; give: a descriptor of its
        own; ignore: no answer (the call times out or is cancelled)."""
        action = message["action"]
        if action == "give":
            fds = fds + [os.open("/dev/null", os.O_RDONLY)]
        if action == "stream":
            peer.send({"id": message["id"], "continues": True, "result": {"$fd": 0}, "fds": 1}, fds[:1])
            peer.send({"id": message["id"], "result": {"done": True}})
        elif action in ("echo", "short", "give"):
            sent = fds[-1:]
            peer.send({"id": message["id"], "result": {"$fd": 0}, "fds": 2 if action == "short" else 1}, sent)
        for fd in fds:
            os.close(fd)

    def test_ten_thousand_calls_with_descriptors_leave_no_descriptor_behind(self):
        RawComponent(self, "Leak", ["echo", "stream", "ignore", "short", "give"], self.leak_component)
        RawComponent(self, "Plain", ["echo"], lambda message, fds, peer: peer.send({"id": message["id"], "result": {}}),
                     fds=False)
        caller, plain = self.raw(), self.raw(fds=False)
        null = os.open("/dev/null", os.O_RDONLY)
        self.addCleanup(os.close, null)
        baseline, own_baseline = self.daemon_fds(), fd_count(os.getpid())
        kinds = [
            ("Leak", "echo", {}, "result"),
            ("Leak", "stream", {"more": True}, "result"),
            ("Leak", "ignore", {"timeout_ms": self.SHORT_TIMEOUT_MS}, "timeout"),
            ("Leak", "ignore", {}, "cancelled"),  # cancelled at once
            ("Leak", "short", {}, "bad_request"),  # the component's answer does not match its fds
            ("Plain", "echo", {}, "fds_not_supported"),
            ("Nobody", "echo", {}, "target_not_found"),
            ("Leak", "echo", {"declare": 2}, "bad_request"),  # the caller's request does not match its fds
        ]
        outcomes = {}
        calls = unread = 0
        while calls < self.CALLS:
            expected = []  # (peer, call, outcome)
            for _ in range(self.BATCH):
                target, action, members, outcome = kinds[calls % len(kinds)]
                call = caller.request(target, action, {"f": {"$fd": 0}}, [null], **members)
                if outcome == "cancelled":
                    caller.request("mediator", "cancel", {"id": call})
                expected.append((caller, call, outcome))
                calls += 1
            # A caller without fds whose answer would carry one.
            expected.append((plain, plain.request("Leak", "give"), "fds_not_supported"))
            calls += 1
            if calls % self.LEAVING_EVERY < self.BATCH + 1:
                leaving = RawPeer(self.socket)
                for _ in range(5):
                    leaving.request("Leak", "echo", {"f": {"$fd": 0}}, [null])
                leaving.close()
                calls += 5
                unread += 5
            for peer, call, outcome in expected:
                while True:
                    message, fds = peer.answer(call)
                    for fd in fds:
                        os.close(fd)
                    if not message.get("continues"):
                        break
                got = "result" if "result" in message else message["error"]["code"]
                self.assertEqual(got, outcome, message)
                outcomes[got] = outcomes.get(got, 0) + 1
        self.assertEqual(set(outcomes), {kind[3] for kind in kinds})
        self.assertEqual(sum(outcomes.values()) + unread, calls)  # every call was answered, but the leavers'
        self.assertDaemonBackTo(baseline)
        wait_until(lambda: fd_count(os.getpid()) == own_baseline, 10)
        self.assertEqual(fd_count(os.getpid()), own_baseline, "the test's components kept descriptors")


class HeldCallTests(FdsThroughDaemonTestCase):
    """Calls with descriptors held while the daemon starts their component
    from a manifest (contract section 4, point 5)."""

    FDS_COMPONENT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "Tests", "Chaos", "fds_component.py")

    def make_daemon(self):
        daemon = super().make_daemon()
        manifests = {
            # Never registers: its calls wait until they time out.
            "Starting": {"target": "Starting", "actions": ["take"], "exec": ["/bin/sleep", "30"], "restart": "no",
                         "start_timeout_s": 5},
            "FdsOnDemand": {"target": "FdsOnDemand", "actions": ["read", "stream", "sleep"], "mode": "pool",
                            "exec": [sys.executable, self.FDS_COMPONENT, "--socket", daemon.socket,
                                     "--target", "FdsOnDemand"], "restart": "no"},
        }
        for name, manifest in manifests.items():
            with open(os.path.join(daemon.components, name + ".json"), "w") as f:
                json.dump(manifest, f)
        return daemon

    def test_a_held_call_that_times_out_closes_its_descriptors(self):
        caller = self.raw()
        r, w = self.pipe()
        message, _ = caller.call("Starting", "take", {"f": {"$fd": 0}}, [w], timeout_ms=300)
        os.close(w)
        self.assertEqual(message["error"]["code"], "timeout")
        self.assertClosedEverywhere(r)

    def test_a_held_call_whose_caller_leaves_closes_its_descriptors(self):
        leaving = RawPeer(self.socket)
        r, w = self.pipe()
        leaving.request("Starting", "take", {"f": {"$fd": 0}}, [w])
        os.close(w)
        leaving.call("mediator", "ping")  # the call is held now
        leaving.close()
        self.assertClosedEverywhere(r)

    def test_a_held_call_reaches_the_component_with_its_descriptor(self):
        caller = self.raw()
        memfd = mediator.memfd_from_bytes(b"held while starting")
        self.addCleanup(os.close, memfd)
        message, fds = caller.call("FdsOnDemand", "read", {"f": {"$fd": 0}}, [memfd], timeout_ms=20000)
        self.assertEqual((message.get("result", {}).get("content"), len(fds)), ("held while starting", 1), message)
        self.assertEqual(bytes(mediator.read_memfd(fds[0])), b"held while starting")
        os.close(fds[0])

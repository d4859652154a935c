"""Descriptors with messages (PROTOCOL.md section 8), against a fake peer
that speaks the wire form with the standard library's send_fds/recv_fds.
Every test checks that the process has as many descriptors open at the end
as at the start."""
import asyncio
import functools
import gc
import os
import json
import socket
import tempfile
import select
import time
import threading
import unittest
import warnings

from support import DaemonTestCase, FdPeer, open_fds, wait_until

import mediator
from mediator import aio, fds as fdmod
from mediator.framing import FrameDecoder


def pipe_message(fd, text):
    """Writes `text` to `fd` and closes it (the peer's end of a test pipe)."""
    os.write(fd, text)
    os.close(fd)


def read_all(fd, timeout=5.0):
    """What a pipe's read end gets until every write end is closed; bounded."""
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError("a write end of the pipe is still open after %s s: %r" % (timeout, chunks))
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class LeakCheckedTest(unittest.TestCase):
    def setUp(self):
        gc.collect()
        before = open_fds()

        def no_leak():
            gc.collect()
            wait_until(lambda: open_fds() == before, 5.0)  # reader threads close their sockets
            self.assertEqual(open_fds(), before, "descriptors leaked: %s" % sorted(os.listdir("/proc/self/fd")))
        self.addCleanup(no_leak)  # registered first: runs after every other cleanup

    def peer(self, on_message=None, **options):
        peer = FdPeer(on_message, **options)
        self.addCleanup(peer.close)
        return peer

    def client(self, peer, fds=True):
        client = mediator.connect(peer.socket, timeout=5, fds=fds)
        self.addCleanup(client.close)
        return client


def echo_pipes(message, fds, conn):
    """Writes "<action>:<index>" into each descriptor it got (write ends of
    pipes), then answers with a sealed memfd in `result.blob` and the count."""
    for index, fd in enumerate(fds):
        pipe_message(fd, ("%s:%d" % (message["action"], index)).encode())
    memfd = mediator.memfd_from_bytes(b"blob of " + message["action"].encode())
    try:
        if message.get("more"):
            conn.send({"id": message["id"], "continues": True, "result": {"part": {"$fd": 0}}, "fds": 1},
                      fds=[memfd])
        conn.send({"id": message["id"], "result": {"got": len(fds), "blob": {"$fd": 0}}, "fds": 1}, fds=[memfd])
    finally:
        os.close(memfd)


def three_memfds(message, fds, conn, sent=None):
    """Two partial results and the final one, each a memfd; sets `sent` (a
    threading.Event) once all three went and the peer closed its copies (the
    peer runs in this process, so its own memfds count in /proc/self/fd)."""
    for last in (False, False, True):
        memfd = mediator.memfd_from_bytes(b"x")
        reply = {"id": message["id"], "result": {"$fd": 0}, "fds": 1}
        if not last:
            reply["continues"] = True
        try:
            conn.send(reply, fds=[memfd])
        finally:
            os.close(memfd)
    if sent is not None:
        sent.set()


class UnitTests(LeakCheckedTest):
    def test_markers_are_numbered_and_duplicated(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        message = {"id": 1, "target": "T", "action": "a",
                   "params": {"x": [mediator.FD(r), {"y": mediator.FD(w)}], "z": 1}}
        frame = fdmod.prepare_frame(message, None, 4, True)
        try:
            self.assertEqual(frame.data, b'{"id":1,"target":"T","action":"a","params":{"x":[{"$fd":0},'
                                         b'{"y":{"$fd":1}}],"z":1},"fds":2}\n')
            self.assertEqual([os.fstat(fd).st_ino for fd in frame.fds], [os.fstat(r).st_ino, os.fstat(w).st_ino])
            self.assertNotIn(r, frame.fds)
            self.assertIsInstance(message["params"]["x"][0], mediator.FD)  # the caller's params are unchanged
        finally:
            fdmod.close_all(frame.fds)

    def test_a_received_descriptor_is_sent_as_it_is(self):
        with mediator.ReceivedFD(os.open("/dev/null", os.O_RDONLY)) as handle:
            frame = fdmod.prepare_frame({"id": 1, "result": [handle]}, None, 4, True)
            fdmod.close_all(frame.fds)
            self.assertEqual(frame.data, b'{"id":1,"result":[{"$fd":0}],"fds":1}\n')
            self.assertFalse(handle.closed)

    def test_refusals_before_writing(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        request = {"id": 1, "target": "T", "action": "a", "params": {"f": [mediator.FD(r), mediator.FD(w)]}}
        for max_fds, enabled, code in ((1, True, "bad_request"), (None, True, "fds_not_supported"),
                                       (4, False, "fds_not_supported")):
            with self.assertRaises(mediator.MediatorError) as caught:
                fdmod.prepare_frame(request, None, max_fds, enabled)
            self.assertEqual((caught.exception.code, caught.exception.delivered),
                             (code, mediator.CallDelivery.NO))
        with self.assertRaises(ValueError):  # a closed descriptor
            closed = os.dup(r)
            os.close(closed)
            fdmod.prepare_frame({"id": 1, "target": "T", "action": "a", "params": {"f": mediator.FD(closed)}},
                                None, 4, True)
        with self.assertRaises(TypeError):  # markers only in params or result
            fdmod.prepare_frame({"event": "e", "data": mediator.FD(r)}, None, 4, True)

    def test_close_true_hands_the_descriptor_over(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        frame = fdmod.prepare_frame({"id": 1, "result": mediator.FD(w, close=True)}, None, 4, True)
        fdmod.close_all(frame.fds)
        self.assertEqual(read_all(r), b"")  # every write end is closed: EOF

    def reader(self, accept=True):
        reader = fdmod.MessageReader(FrameDecoder(), accept)
        self.addCleanup(reader.close)
        return reader

    def test_reader_gives_each_message_the_descriptors_of_its_read(self):
        reader = self.reader()
        a, b, c = (os.open("/dev/null", os.O_RDONLY) for _ in range(3))
        # Bytes of an earlier write come in the same read, before the set's message.
        got = reader.feed(fdmod.Received(b'{"event":"e"}\n{"id":1,"result":[{"$fd":1},{"$fd":0}],"fds":2}\n',
                                         [a, b], False))
        # A message's set comes with its first byte, however it is split.
        got += reader.feed(fdmod.Received(b'{"id":2,', [c], False))
        got += reader.feed(fdmod.Received(b'"result":{"f":{"$fd":0}},"fds":1}\n', [], False))
        self.assertEqual([g.problem for g in got], [None, None, None])
        self.assertEqual([[h.fileno() for h in g.handles] for g in got], [[], [a, b], [c]])
        self.assertEqual(got[1].message["result"][0].fileno(), b)
        self.assertIsInstance(got[2].message["result"]["f"], mediator.ReceivedFD)
        for g in got:
            for handle in g.handles:
                handle.close()

    def test_reader_refuses_and_closes_what_does_not_match(self):
        cases = [
            (b'{"id":1,"result":{"$fd":0},"fds":2}\n', 1, False, "2 descriptors; 1 arrived"),
            (b'{"id":1,"result":{"$fd":0},"fds":1}\n', 1, True, "MSG_CTRUNC"),
            (b'{"id":1,"result":{"$fd":3},"fds":1}\n', 1, False, "does not name"),
            (b'{"id":1,"result":{"$fd":0},"fds":1}\n', 0, False, "none arrived"),
            (b'{"id":1,"result":{"$fd":0},"fds":0}\n', 1, False, "positive integer"),
            (b'{"event":"e","data":{"$fd":0},"fds":1}\n', 1, False, "carries no descriptors"),
        ]
        for data, count, truncated, problem in cases:
            reader = self.reader()
            got = reader.feed(fdmod.Received(data, [os.open("/dev/null", os.O_RDONLY) for _ in range(count)],
                                             truncated))
            self.assertEqual(len(got), 1)
            self.assertIn(problem, got[0].problem)
            self.assertEqual(got[0].handles, [])
        refusing = self.reader(accept=False)
        got = refusing.feed(fdmod.Received(b'{"id":1,"result":{"$fd":0},"fds":1}\n',
                                           [os.open("/dev/null", os.O_RDONLY)], False))
        self.assertIn("not asked for", got[0].problem)

    def test_reader_closes_descriptors_no_message_claims(self):
        reader = self.reader()
        got = reader.feed(fdmod.Received(b'{"id":1,"result":1}\n', [os.open("/dev/null", os.O_RDONLY)], False))
        self.assertEqual((got[0].message, reader.orphaned), ({"id": 1, "result": 1}, 1))
        # A set whose message is not complete yet is kept for it.
        got = reader.feed(fdmod.Received(b'{"id":2,', [os.open("/dev/null", os.O_RDONLY)], False))
        self.assertEqual((got, reader.orphaned), ([], 1))
        got = reader.feed(fdmod.Received(b'"result":{"$fd":0},"fds":1}\n', [], False))
        self.assertIsNone(got[0].problem)
        got[0].handles[0].close()
        # A set that arrived with a malformed line.
        reader.feed(fdmod.Received(b'not json\n', [os.open("/dev/null", os.O_RDONLY)], False))
        self.assertEqual(reader.orphaned, 2)

    def test_received_fd_owns_its_descriptor(self):
        with mediator.ReceivedFD(os.open("/dev/null", os.O_RDONLY)) as handle:
            self.assertGreaterEqual(handle.fileno(), 0)
        self.assertTrue(handle.closed)
        with self.assertRaises(ValueError):
            handle.fileno()
        detached = mediator.ReceivedFD(os.open("/dev/null", os.O_RDONLY))
        fd = detached.detach()
        os.fstat(fd)  # still open: the caller's now
        del detached
        os.close(fd)
        lost = mediator.ReceivedFD(os.open("/dev/null", os.O_RDONLY))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del lost
            gc.collect()
        self.assertTrue(any(issubclass(w.category, ResourceWarning) for w in caught))


class MemfdTests(LeakCheckedTest):
    def test_sealed_memfd_round_trip(self):
        fd = mediator.memfd_from_bytes(b"\x00payload\xff", name="test")
        try:
            self.assertEqual(fdmod.seals(fd) & fdmod.IMMUTABLE_SEALS, fdmod.IMMUTABLE_SEALS)
            with self.assertRaises(OSError):
                os.pwrite(fd, b"x", 0)
            with self.assertRaises(OSError):
                os.ftruncate(fd, 1)
            with mediator.read_memfd(fd) as view:
                self.assertEqual(bytes(view), b"\x00payload\xff")
                with self.assertRaises(TypeError):
                    view[0] = 1
        finally:
            os.close(fd)
        empty = mediator.memfd_from_bytes(b"")
        self.assertEqual(mediator.read_memfd(empty), b"")
        os.close(empty)

    def test_unsealed_or_not_a_memfd_is_refused(self):
        fd = os.memfd_create("open", os.MFD_ALLOW_SEALING)
        os.write(fd, b"changeable")
        r, w = os.pipe()
        try:
            with self.assertRaises(ValueError):
                mediator.read_memfd(fd)
            with self.assertRaises(ValueError):
                mediator.read_memfd(r)
        finally:
            for each in (fd, r, w):
                os.close(each)


class SyncTests(LeakCheckedTest):
    def test_hello_says_fds_only_when_enabled(self):
        peer = self.peer()
        self.client(peer, fds=False).ping()
        self.client(peer, fds=True).ping()
        self.assertEqual([h["params"].get("fds") for h in peer.hellos], [None, True])

    def test_call_sends_and_receives_descriptors(self):
        peer = self.peer(echo_pipes)
        client = self.client(peer)
        pipes = [os.pipe() for _ in range(2)]
        with open("/dev/null", "rb") as unused:
            result = client.call("T", "a", {"first": mediator.FD(pipes[0][1]), "more": [mediator.FD(pipes[1][1])],
                                            "plain": {"$fd": "not ours"}, "file": unused.fileno()})
        for _, w in pipes:
            os.close(w)  # the package sent duplicates
        self.assertEqual([read_all(r) for r, _ in pipes], [b"a:0", b"a:1"])
        for r, _ in pipes:
            os.close(r)
        message = next(m for m, _ in peer.received if m.get("action") == "a")
        self.assertEqual((message["fds"], message["params"]["first"], message["params"]["more"]),
                         (2, {"$fd": 0}, [{"$fd": 1}]))
        self.assertEqual(result["got"], 2)
        with result["blob"] as blob:
            self.assertEqual(bytes(mediator.read_memfd(blob)), b"blob of a")

    def test_stream_partials_carry_descriptors(self):
        client = self.client(self.peer(echo_pipes))
        values = list(client.stream("T", "s"))
        self.assertEqual(len(values), 2)
        for value, handle in ((values[0], values[0]["part"]), (values[1], values[1]["blob"])):
            with handle:
                self.assertEqual(bytes(mediator.read_memfd(handle)), b"blob of s")

    def test_a_stream_closed_early_closes_what_it_did_not_read(self):
        client = self.client(self.peer(three_memfds))
        stream = client.stream("T", "s")
        next(stream).close()
        self.assertTrue(wait_until(lambda: stream._responses.qsize() == 2, 5))
        unread = open_fds()
        stream.close()
        self.assertEqual(open_fds(), unread - 2)  # at once, not when the stream is collected

    def test_too_many_or_unsupported_raise_before_writing(self):
        peer = self.peer(echo_pipes, max_fds=2)
        client = self.client(peer)
        without = self.client(peer, fds=False)
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("T", "a", {"f": [mediator.FD(0)] * 3})
        self.assertEqual(caught.exception.code, "bad_request")
        with self.assertRaises(mediator.MediatorError) as caught:
            without.call("T", "a", {"f": mediator.FD(0)})
        self.assertEqual(caught.exception.code, "fds_not_supported")
        client.ping()
        self.assertEqual([m.get("action") for m, _ in peer.received].count("a"), 0)
        old_daemon = self.client(self.peer(max_fds=None))
        with self.assertRaises(mediator.MediatorError) as caught:
            old_daemon.call("T", "a", {"f": mediator.FD(0)})
        self.assertEqual(caught.exception.code, "fds_not_supported")

    def test_mismatched_descriptors_are_closed_and_fail_the_call(self):
        def mismatch(message, fds, conn):
            extra = os.open("/dev/null", os.O_RDONLY)
            if message["action"] == "short":  # declares 2, sends 1
                conn.send({"id": message["id"], "result": {"$fd": 0}, "fds": 2}, fds=[extra])
            elif message["action"] == "undeclared":  # a descriptor with no `fds`; then a good answer
                conn.send({"id": message["id"], "continues": True, "result": 1}, fds=[extra])
                conn.send({"id": message["id"], "result": 2})
            elif message["action"] == "late":  # for a call nobody waits for
                conn.send({"id": 999, "result": {"$fd": 0}, "fds": 1}, fds=[extra])
                conn.send({"id": message["id"], "result": "ok"})
            os.close(extra)
        client = self.client(self.peer(mismatch))
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("T", "short")
        self.assertEqual(caught.exception.code, "bad_request")
        self.assertEqual(list(client.stream("T", "undeclared", timeout=5)), [1, 2])
        self.assertEqual(client.call("T", "late"), "ok")
        client.ping()  # the connection stays usable

    def test_large_message_with_descriptors(self):
        peer = self.peer(echo_pipes, max_frame=8 << 20)
        client = self.client(peer)
        r, w = os.pipe()
        result = client.call("T", "big", {"pad": "x" * (3 << 20), "w": mediator.FD(w)})
        os.close(w)
        self.assertEqual(read_all(r), b"big:0")
        os.close(r)
        result["blob"].close()

    def test_service_handlers_receive_and_return_descriptors(self):
        requests = []

        def collect(message, fds, conn):
            requests.append((message, fds))
        peer = self.peer(collect)
        service = mediator.Service("Files")

        @service.action("write")
        def write(params, ctx):
            with params["out"] as out:
                os.write(out.fileno(), b"from the handler")
            ctx.send_partial({"memo": mediator.FD(mediator.memfd_from_bytes(b"partial"), close=True)})
            return {"memo": mediator.FD(mediator.memfd_from_bytes(b"final"), close=True)}
        thread = threading.Thread(target=service.run, kwargs={"socket": peer.socket, "fds": True,
                                                             "reconnect": False}, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(service.stop)
        self.assertTrue(wait_until(lambda: peer.connections and any(
            m.get("action") == "register" for m, _ in peer.received), 5))
        conn = peer.connections[0]
        r, w = os.pipe()
        conn.send({"id": 7, "target": "Files", "action": "write", "more": True, "params": {"out": {"$fd": 0}},
                   "fds": 1}, fds=[w])
        os.close(w)
        self.assertEqual(read_all(r), b"from the handler")
        os.close(r)
        self.assertTrue(wait_until(lambda: len(requests) == 2, 5))
        contents = []
        for message, fds in requests:
            self.assertEqual((message["id"], message["fds"], len(fds)), (7, 1, 1))
            contents.append(bytes(mediator.read_memfd(fds[0])))
            os.close(fds[0])
        self.assertEqual(contents, [b"partial", b"final"])

    def test_a_service_without_fds_refuses_descriptors(self):
        answers = []
        peer = self.peer(lambda message, fds, conn: answers.append(message))
        service = mediator.Service("Plain")
        service.action("a")(lambda params, ctx: "ran")
        thread = threading.Thread(target=service.run, kwargs={"socket": peer.socket, "reconnect": False},
                                  daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(service.stop)
        self.assertTrue(wait_until(lambda: peer.connections and any(
            m.get("action") == "register" for m, _ in peer.received), 5))
        r, w = os.pipe()
        peer.connections[0].send({"id": 3, "target": "Plain", "action": "a", "params": {"f": {"$fd": 0}},
                                  "fds": 1}, fds=[w])
        os.close(w)
        self.assertEqual(read_all(r), b"")  # the service closed its copy
        os.close(r)
        self.assertTrue(wait_until(lambda: answers, 5))
        self.assertEqual((answers[0]["id"], answers[0]["error"]["code"]), (3, "bad_request"))
        self.assertIn("not asked for", answers[0]["error"]["message"])


class AioTests(LeakCheckedTest):
    def run_async(self, body, *args):
        async def bounded():
            await asyncio.wait_for(body(*args), 20)
        asyncio.run(bounded())

    async def connect(self, peer, fds=True):
        return await aio.connect(peer.socket, timeout=5, fds=fds)

    def test_call_and_stream_send_and_receive_descriptors(self):
        peer = self.peer(echo_pipes)

        async def body():
            async with await self.connect(peer) as client:
                r, w = os.pipe()
                result = await client.call("T", "a", {"w": mediator.FD(w)})
                os.close(w)
                self.assertEqual(read_all(r), b"a:0")
                os.close(r)
                with result["blob"] as blob:
                    self.assertEqual(bytes(mediator.read_memfd(blob)), b"blob of a")
                values = [value async for value in client.stream("T", "s")]
                for handle in (values[0]["part"], values[1]["blob"]):
                    with handle:
                        self.assertEqual(bytes(mediator.read_memfd(handle)), b"blob of s")
        self.run_async(body)
        self.assertEqual(peer.hellos[0]["params"]["fds"], True)
        message = next(m for m, _ in peer.received if m.get("action") == "a")
        self.assertEqual((message["fds"], message["params"]), (1, {"w": {"$fd": 0}}))

    def test_a_stream_closed_early_closes_what_it_did_not_read(self):
        sent = threading.Event()
        peer = self.peer(functools.partial(three_memfds, sent=sent))

        async def body():
            async with await self.connect(peer) as client:
                before = open_fds()
                stream = client.stream("T", "s")
                async for first in stream:
                    first.close()
                    break
                # The other two arrive while nobody reads; closing the stream
                # closes them. Counted once the peer closed its own copies.
                for _ in range(500):  # bounded: 5 s
                    if sent.is_set() and open_fds() == before + 2:
                        break
                    await asyncio.sleep(0.01)
                self.assertEqual(open_fds(), before + 2)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    await stream.aclose()
                self.assertEqual(open_fds(), before)
                self.assertEqual([w for w in caught if issubclass(w.category, ResourceWarning)], [])
        self.run_async(body)

    def test_refusals_and_mismatches(self):
        def short(message, fds, conn):
            extra = os.open("/dev/null", os.O_RDONLY)
            conn.send({"id": message["id"], "result": {"$fd": 0}, "fds": 2}, fds=[extra])
            os.close(extra)
        peer = self.peer(short, max_fds=1)

        async def body():
            async with await self.connect(peer) as client, await self.connect(peer, fds=False) as without:
                for caller, params, code in ((client, {"f": [mediator.FD(0), mediator.FD(1)]}, "bad_request"),
                                             (without, {"f": mediator.FD(0)}, "fds_not_supported"),
                                             (client, {}, "bad_request")):  # the last: declares 2, gets 1
                    with self.assertRaises(mediator.MediatorError) as caught:
                        await caller.call("T", "short", params)
                    self.assertEqual(caught.exception.code, code)
                await client.ping()
        self.run_async(body)
        self.assertEqual([m.get("action") for m, _ in peer.received].count("short"), 1)

    def test_large_message_is_written_in_pieces_with_its_descriptors_first(self):
        peer = self.peer(echo_pipes, max_frame=8 << 20)

        async def body():
            async with await self.connect(peer) as client:
                pipes = [os.pipe() for _ in range(3)]
                # Several big frames queued at once: each write takes part of one.
                results = await asyncio.gather(*(
                    client.call("T", "big%d" % i, {"pad": "x" * (2 << 20), "w": mediator.FD(w)})
                    for i, (_, w) in enumerate(pipes)))
                for i, (r, w) in enumerate(pipes):
                    os.close(w)
                    self.assertEqual(read_all(r), b"big%d:0" % i)
                    os.close(r)
                for result in results:
                    result["blob"].close()
        self.run_async(body)

    def test_service_handlers_receive_and_return_descriptors(self):
        requests = []
        peer = self.peer(lambda message, fds, conn: requests.append((message, fds)))
        service = aio.Service("Files")

        @service.action("async")
        async def write_async(params, ctx):
            with params["out"] as out:
                os.write(out.fileno(), b"async")
            return {"memo": mediator.FD(mediator.memfd_from_bytes(b"from async"), close=True)}

        @service.action("plain")
        def write_plain(params, ctx):  # runs in an executor thread
            with params["out"] as out:
                os.write(out.fileno(), b"plain")
            ctx.send_partial(mediator.FD(mediator.memfd_from_bytes(b"partial"), close=True))
            return {"memo": mediator.FD(mediator.memfd_from_bytes(b"from plain"), close=True)}

        async def body():
            registered = asyncio.Event()
            task = asyncio.get_running_loop().create_task(
                service.run(peer.socket, fds=True, reconnect=False, on_registered=registered.set))
            await asyncio.wait_for(registered.wait(), 5)
            for number, action in enumerate(("async", "plain")):
                r, w = os.pipe()
                peer.connections[0].send({"id": number, "target": "Files", "action": action, "more": True,
                                          "params": {"out": {"$fd": 0}}, "fds": 1}, fds=[w])
                os.close(w)
                # The handler runs on this loop: read without blocking it.
                got = await asyncio.get_running_loop().run_in_executor(None, read_all, r)
                self.assertEqual(got, action.encode())
                os.close(r)
            while len(requests) < 3:
                await asyncio.sleep(0.01)
            service.stop()
            await task
        self.run_async(body)
        contents = []
        for message, fds in requests:
            self.assertEqual((message["fds"], len(fds)), (1, 1))
            contents.append((message["id"], bytes(mediator.read_memfd(fds[0]))))
            os.close(fds[0])
        self.assertEqual(sorted(contents), [(0, b"from async"), (1, b"from plain"), (1, b"partial")])


class ServiceOwnershipTests(LeakCheckedTest):
    def test_unsent_results_close_what_they_were_handed(self):
        for request_id, more, suppress in ((None, False, False), (5, True, True)):
            sent = []
            responder = mediator.service.Responder(request_id, more, sent.append)
            if suppress:
                responder.suppress()  # the call was cancelled
            responder.partial(mediator.FD(mediator.memfd_from_bytes(b"p"), close=True))
            responder.finish(result={"f": mediator.FD(mediator.memfd_from_bytes(b"f"), close=True)})
            self.assertEqual(sent, [])
        sent = []
        responder = mediator.service.Responder(6, False, sent.append)
        responder.finish(result=[mediator.FD(mediator.memfd_from_bytes(b"f"), close=True), object()])
        self.assertEqual(sent[0]["error"]["code"], "failed")
        # A marker whose descriptor is not open: the link refuses it before writing.
        closed = os.dup(0)
        os.close(closed)
        sent = []

        def link_send(message):
            frame = fdmod.prepare_frame(message, None, 4, True)
            fdmod.close_all(frame.fds)
            sent.append(message)
        mediator.service.Responder(7, False, link_send).finish(result={"f": mediator.FD(closed)})
        self.assertEqual(sent[0]["error"]["code"], "failed")
        self.assertIn("not an open descriptor", sent[0]["error"]["message"])

    def test_descriptors_a_handler_leaves_open_are_closed_when_it_returns(self):
        answers = []
        peer = self.peer(lambda message, fds, conn: answers.append(message))
        service = mediator.Service("Keeps")
        kept = []

        @service.action("ignore")
        def ignore(params, ctx):
            return "ignored"  # params["f"] is left open

        @service.action("keep")
        def keep(params, ctx):
            kept.append(params["f"].detach())
            return "kept"
        thread = threading.Thread(target=service.run, kwargs={"socket": peer.socket, "fds": True,
                                                             "reconnect": False}, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(service.stop)
        self.assertTrue(wait_until(lambda: peer.connections and any(
            m.get("action") == "register" for m, _ in peer.received), 5))
        for number, action in enumerate(("ignore", "keep", "missing")):
            r, w = os.pipe()
            peer.connections[0].send({"id": number, "target": "Keeps", "action": action,
                                      "params": {"f": {"$fd": 0}}, "fds": 1}, fds=[w])
            os.close(w)
            self.assertTrue(wait_until(lambda: len(answers) > number, 5))
            if action == "keep":
                select.select([r], [], [], 0.2)  # the handler's copy stays open: no EOF
                self.assertEqual(select.select([r], [], [], 0)[0], [])
                os.close(kept.pop())
            self.assertEqual(read_all(r), b"")
            os.close(r)
        self.assertEqual([a.get("result", a.get("error", {}).get("code")) for a in answers],
                         ["ignored", "kept", "action_not_found"])


class ThroughTheDaemonTests(DaemonTestCase):
    """Descriptors through the real mediatord (contract section 8): a
    Python caller and a Python service, both with `fds=True`."""

    def serve_files(self):
        service = mediator.Service("Files")

        @service.action("open")
        def open_(params, ctx):
            # The privileged side opens; the caller gets the open file.
            return {"file": mediator.FD(os.open(params["path"], os.O_RDONLY), close=True)}

        @service.action("write")
        def write(params, ctx):
            with params["out"] as out:
                os.write(out.fileno(), b"from the service")
            return {"ok": True}

        @service.action("blobs")
        def blobs(params, ctx):
            for n in range(params["count"]):
                ctx.send_partial({"blob": mediator.FD(mediator.memfd_from_bytes(b"part %d" % n), close=True)})
            return {"blob": mediator.FD(mediator.memfd_from_bytes(b"last"), close=True)}
        self.serve(service, fds=True)

    def test_hello_grants_max_fds(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.settimeout(10)
            raw.connect(self.daemon.socket)
            raw.sendall(b'{"id":1,"target":"mediator","action":"hello","params":{"protocol":1,"fds":true}}\n'
                        b'{"id":2,"target":"mediator","action":"hello","params":{"protocol":1}}\n')
            lines = raw.makefile("rb")
            answers = sorted((json.loads(lines.readline()) for _ in range(2)), key=lambda answer: answer["id"])
        self.assertEqual(answers[0]["result"]["max_fds"], 253)
        self.assertNotIn("max_fds", answers[1]["result"])

    def test_caller_to_service_and_service_to_caller(self):
        self.serve_files()
        client = self.connect(fds=True)
        r, w = os.pipe()
        self.assertEqual(client.call("Files", "write", {"out": mediator.FD(w, close=True)}), {"ok": True})
        self.assertEqual(read_all(r), b"from the service")
        os.close(r)
        with tempfile.NamedTemporaryFile() as handle:
            handle.write(b"opened by the service")
            handle.flush()
            result = client.call("Files", "open", {"path": handle.name})
            with result["file"] as opened:
                self.assertEqual(os.pread(opened.fileno(), 100, 0), b"opened by the service")
                self.assertEqual(os.fstat(opened.fileno()).st_ino, os.fstat(handle.fileno()).st_ino)

    def test_stream_partials_carry_descriptors(self):
        self.serve_files()
        client = self.connect(fds=True)
        contents = []
        for part in client.stream("Files", "blobs", {"count": 3}):
            with part["blob"] as blob:
                contents.append(bytes(mediator.read_memfd(blob)))
        self.assertEqual(contents[:3], [b"part 0", b"part 1", b"part 2"])

    def test_a_caller_without_fds_gets_fds_not_supported_for_an_answer_with_descriptors(self):
        self.serve_files()
        client = self.connect()
        with tempfile.NamedTemporaryFile() as handle:
            with self.assertRaises(mediator.MediatorError) as caught:
                client.call("Files", "open", {"path": handle.name})
        self.assertEqual((caught.exception.code, caught.exception.delivered),
                         ("fds_not_supported", mediator.CallDelivery.YES))

    def test_a_service_without_fds_is_not_sent_descriptors(self):
        service = mediator.Service("Plain")
        service.action("echo")(lambda params, ctx: {"x": 1})
        self.serve(service)
        client = self.connect(fds=True)
        r, w = os.pipe()
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("Plain", "echo", {"f": mediator.FD(w, close=True)})
        self.assertEqual((caught.exception.code, caught.exception.delivered),
                         ("fds_not_supported", mediator.CallDelivery.NO))
        # The daemon closed its copy: the pipe's write end is gone everywhere.
        self.assertEqual(os.read(r, 10), b"")
        os.close(r)
        self.assertEqual(client.call("Plain", "echo", {}), {"x": 1})

    def test_a_service_with_fds_serves_plain_calls(self):
        service = mediator.Service("FdReady")
        service.action("echo")(lambda params, ctx: params)
        self.serve(service, fds=True)
        self.assertEqual(self.connect().call("FdReady", "echo", {"x": 1}), {"x": 1})


"""Unit tests without mediatord: framing, socket paths, errors, specs, and the
client and service against a fake daemon."""
import threading
import time
import unittest
from contextlib import nullcontext

import support  # noqa: F401  (puts the package on sys.path)
from support import FakeDaemon, wait_until

import mediator
from mediator import framing, paths
from mediator.client import pattern_matches
from mediator.errors import error_from_exception


class FramingTests(unittest.TestCase):
    def test_encode_is_one_compact_line(self):
        frame = framing.encode({"a": "x\ny", "b": [1, 2], "c": "é"})
        self.assertEqual(frame, '{"a":"x\\ny","b":[1,2],"c":"é"}\n'.encode())
        self.assertEqual(frame.count(b"\n"), 1)

    def test_lf_crlf_blank_lines_and_split_reads(self):
        decoder = framing.FrameDecoder()
        self.assertEqual(decoder.feed(b'{"a":1}\r\n\n  \r\n{"b"'), [{"a": 1}])
        self.assertEqual(decoder.feed(b':2}\n'), [{"b": 2}])
        self.assertEqual(decoder.dropped, 0)

    def test_non_objects_and_bad_json_are_dropped(self):
        decoder = framing.FrameDecoder()
        self.assertEqual(decoder.feed(b'[1]\n"s"\nnot json\n\xff\xfe\n{"ok":true}\n'), [{"ok": True}])
        self.assertEqual(decoder.dropped, 4)

    def test_frame_limit_drops_up_to_the_next_lf(self):
        decoder = framing.FrameDecoder(max_frame=10)
        self.assertEqual(decoder.feed(b'{"a":"0123456789"}\n{"b":1}\n'), [{"b": 1}])
        # A long line arriving in pieces is dropped too, the connection stays usable.
        self.assertEqual(decoder.feed(b'{"c":"' + b"x" * 30), [])
        self.assertEqual(decoder.feed(b"y" * 30), [])
        self.assertEqual(decoder.feed(b'"}\n{"d":2}\n'), [{"d": 2}])
        self.assertEqual(decoder.dropped, 2)
        # A line of exactly the limit (the LF not counted) is kept.
        self.assertEqual(decoder.feed(b'{"e":1234}\n'), [{"e": 1234}])

    def test_check_size(self):
        framing.check_size(b"x" * 10 + b"\n", 10)
        with self.assertRaises(mediator.MediatorError) as caught:
            framing.check_size(b"x" * 11 + b"\n", 10)
        self.assertEqual(caught.exception.code, "frame_too_large")
        self.assertEqual(caught.exception.delivered, mediator.CallDelivery.NO)

    def test_kinds(self):
        self.assertEqual(framing.kind({"id": 1, "target": "T", "action": "a"}), "request")
        self.assertEqual(framing.kind({"target": "T", "action": "a"}), "request")
        self.assertEqual(framing.kind({"id": 1, "result": None}), "response")
        self.assertEqual(framing.kind({"id": 1, "error": {}}), "response")
        self.assertEqual(framing.kind({"event": "e"}), "event")
        self.assertIsNone(framing.kind({"id": 1}))

    def test_timeouts(self):
        self.assertIsNone(framing.timeout_ms(None))
        self.assertEqual(framing.timeout_ms(1.5), 1500)
        self.assertEqual(framing.timeout_ms(0.0001), 1)
        self.assertEqual(framing.timeout_ms(0.0014), 2)
        with self.assertRaises(ValueError):
            framing.timeout_ms(0)
        self.assertEqual(framing.local_deadline(2), 3.0)
        self.assertEqual(framing.local_deadline(None), 31.0)


class PathTests(unittest.TestCase):
    def test_rules(self):
        env = {"MEDIATOR_SOCKET": "/env.sock", "XDG_RUNTIME_DIR": "/run/user/7"}
        self.assertEqual(paths.socket_path("/x.sock", environ=env), "/x.sock")
        self.assertEqual(paths.socket_path(None, environ=env), "/env.sock")
        self.assertEqual(paths.socket_path(None, user=True, environ=env), "/env.sock")
        self.assertEqual(paths.socket_path(None, user=True, environ={"XDG_RUNTIME_DIR": "/run/user/7"}),
                         "/run/user/7/mediator/mediator.sock")
        self.assertEqual(paths.socket_path(None, environ={"XDG_RUNTIME_DIR": "/run/user/7"}),
                         "/run/mediator/mediator.sock")
        self.assertEqual(paths.socket_path("", environ={"MEDIATOR_SOCKET": ""}), mediator.SYSTEM_SOCKET)
        self.assertEqual(paths.socket_path("/x.sock", user=True, environ={}), "/x.sock")

    def test_user_without_runtime_directory_is_refused_not_the_system_socket(self):
        for env in [{}, {"XDG_RUNTIME_DIR": ""}]:
            with self.subTest(env=env), self.assertRaises(mediator.MediatorError) as caught:
                paths.socket_path(None, user=True, environ=env)
            self.assertEqual(caught.exception.code, mediator.UNREACHABLE)
            self.assertIn("$XDG_RUNTIME_DIR not set", caught.exception.message)


class ErrorTests(unittest.TestCase):
    def test_wire_round_trip(self):
        error = mediator.MediatorError.from_wire({"code": "not_found", "message": "no note", "data": {"id": 3},
                                                  "extra": 1})
        self.assertEqual((error.code, error.message, error.data), ("not_found", "no note", {"id": 3}))
        self.assertEqual(error.to_wire(), {"code": "not_found", "message": "no note", "data": {"id": 3}})
        self.assertEqual(mediator.MediatorError("x", "y").to_wire(), {"code": "x", "message": "y"})
        self.assertIn("not_found", str(error))

    def test_delivered(self):
        def delivered(data):
            return mediator.MediatorError("timeout", "", data).delivered
        self.assertEqual(delivered({"delivered": True}), mediator.CallDelivery.YES)
        self.assertEqual(delivered({"delivered": False, "quota": "calls"}), mediator.CallDelivery.NO)
        # Null, absent, not a boolean, or no object data: nobody can tell.
        for data in ({"delivered": None}, {}, {"delivered": 1}, None, [False], "no"):
            self.assertEqual(delivered(data), mediator.CallDelivery.UNKNOWN, data)

    def test_malformed_errors(self):
        self.assertEqual(mediator.MediatorError.from_wire("oops").code, "internal")
        self.assertEqual(mediator.MediatorError.from_wire({"message": 3}).code, "internal")

    def test_exceptions_map_to_failed_with_their_type(self):
        cases = [
            (KeyError("k"), "failed", "KeyError: 'k'", {"type": "KeyError"}),
            (RuntimeError("kaput"), "failed", "RuntimeError: kaput", {"type": "RuntimeError"}),
            (ValueError(), "failed", "ValueError", {"type": "ValueError"}),
            # A generated service's method left unimplemented raises NotImplementedError("Target.action").
            (NotImplementedError("Kv.keys"), "not_implemented", "not implemented: Kv.keys",
             {"type": "NotImplementedError"}),
            (NotImplementedError(), "not_implemented", "not implemented", {"type": "NotImplementedError"}),
        ]
        for exc, code, message, data in cases:
            with self.subTest(exc=exc), self.assertLogs("mediator", "ERROR") if code == "failed" else nullcontext():
                error = error_from_exception(exc, "Kv.put")
                self.assertEqual((error.code, error.message, error.data), (code, message, data))

    def test_a_plain_exception_logs_its_traceback(self):
        try:
            raise ValueError("bad amount")
        except ValueError as e:
            with self.assertLogs("mediator", "ERROR") as logged:
                error_from_exception(e, "Bank.pay")
        self.assertEqual(len(logged.records), 1)
        text = logged.output[0]
        self.assertIn("the handler of Bank.pay raised ValueError", text)
        self.assertIn("Traceback (most recent call last)", text)
        self.assertIn("ValueError: bad amount", text)
        original = mediator.MediatorError("busy", "try later", [1])
        self.assertIs(error_from_exception(original), original)

    def test_an_exception_chooses_its_wire_error_through_mediator_error(self):
        class Locked(Exception):
            def mediator_error(self):
                return mediator.MediatorError("locked", "note 7 is locked", {"id": 7})

        class Broken(Exception):
            def mediator_error(self):
                raise RuntimeError("no code today")

        class Wrong(Exception):
            def mediator_error(self):
                return "locked"

        error = error_from_exception(Locked(), "Notes.edit")
        self.assertEqual((error.code, error.message, error.data), ("locked", "note 7 is locked", {"id": 7}))
        for exc in (Broken("b"), Wrong("w")):
            with self.subTest(exc=exc), self.assertLogs("mediator", "ERROR") as logged:
                error = error_from_exception(exc, "Notes.edit")
            self.assertEqual(error.code, "failed")
            self.assertEqual(error.data, {"type": type(exc).__name__})
            self.assertIn("mediator_error()", logged.output[0])

    def test_patterns(self):
        self.assertTrue(pattern_matches("*", "a"))
        self.assertTrue(pattern_matches("user.*", "user.login"))
        self.assertTrue(pattern_matches("user.*", "user.a.b"))
        self.assertFalse(pattern_matches("user.*", "user"))
        self.assertFalse(pattern_matches("user.*", "username"))
        self.assertTrue(pattern_matches("a.b", "a.b"))
        self.assertFalse(pattern_matches("a.b", "a.bc"))


class ServiceSpecTests(unittest.TestCase):
    def test_specs_from_handlers(self):
        svc = mediator.Service("Notes", description="d")
        spec = {"name": "add", "params": {"type": "object"}}
        svc.action("add", spec=spec)(lambda p, c: None)
        svc.action("list")(lambda p, c: None)
        svc.not_found(lambda a, p, c: None)
        self.assertEqual(svc.register_params(), {"target": "Notes", "description": "d", "mode": "exclusive",
                                                 "actions": [spec, "list", "notFound"]})
        with self.assertRaises(ValueError):
            svc.action("get", spec={"name": "other"})
        with self.assertRaises(ValueError):
            mediator.Service("X", mode="shared")

    def test_actions_given_are_registered_exactly(self):
        actions = [{"name": "watch", "more": True, "result": {"type": "object"}}, "touch"]
        svc = mediator.Service("Notes", mode="pool", actions=actions)
        svc.action("watch")(lambda p, c: None)
        self.assertEqual(svc.register_params(), {"target": "Notes", "mode": "pool", "actions": actions})

    def test_not_found_resolution(self):
        svc = mediator.Service("Notes")
        seen = []
        svc.not_found(lambda action, params, ctx: seen.append((action, params, ctx.action, ctx.params)))
        responder = mediator.service.Responder(None, False, lambda m: None)
        ctx = mediator.CallContext("Notes", {"action": "notFound", "params": {"action": "x", "params": {"a": 1}}},
                                   None, responder)
        handler, args = svc.resolve(ctx)
        handler(*args)
        self.assertEqual(seen, [("x", {"a": 1}, "x", {"a": 1})])
        ctx = mediator.CallContext("Notes", {"action": "notFound", "params": {"action": 3}}, None, responder)
        with self.assertRaises(mediator.MediatorError) as caught:
            svc.resolve(ctx)
        self.assertEqual(caught.exception.code, "invalid_params")
        bare = mediator.Service("Bare")
        with self.assertRaises(mediator.MediatorError) as caught:
            bare.resolve(mediator.CallContext("Bare", {"action": "nope"}, None, responder))
        self.assertEqual(caught.exception.code, "action_not_found")

    def test_context_from_request(self):
        sent = []
        request = {"id": 9, "action": "a", "caller": {"pid": 1, "uid": 2, "gid": 3, "name": "n"},
                   "timeout_ms": 2500, "more": True, "unknown": "ignored"}
        ctx = mediator.CallContext("T", request, None, mediator.service.Responder(9, True, sent.append))
        self.assertEqual((ctx.params, ctx.caller["name"], ctx.timeout, ctx.more, ctx.id),
                         ({}, "n", 2.5, True, 9))
        ctx.send_partial(1)
        ctx._responder.finish(result=2)
        ctx.send_partial(3)  # after the final response: dropped
        self.assertEqual(sent, [{"id": 9, "result": 1, "continues": True}, {"id": 9, "result": 2}])

    def test_responder_rules(self):
        sent = []
        plain = mediator.service.Responder(4, False, sent.append)
        plain.partial(1)  # no `more`: no partials
        plain.finish(result=object())  # not JSON: answered `failed`
        oneway = mediator.service.Responder(None, True, sent.append)
        oneway.partial(1)
        oneway.finish(result=1)
        cancelled = mediator.service.Responder(5, True, sent.append)
        cancelled.suppress()
        cancelled.finish(result=1)
        self.assertEqual(len(sent), 1)
        self.assertEqual((sent[0]["id"], sent[0]["error"]["code"]), (4, "failed"))


class FakeDaemonTests(unittest.TestCase):
    """The client's and the service's side of the protocol, with a scripted daemon."""

    def fake(self, on_message=None):
        daemon = FakeDaemon(on_message)
        self.addCleanup(daemon.close)
        return daemon

    def test_unreachable(self):
        with self.assertRaises(mediator.MediatorError) as caught:
            mediator.connect("/nonexistent/mediator.sock")
        self.assertEqual(caught.exception.code, "unreachable")

    def test_hello_ids_unknown_members_and_crlf(self):
        def answer(message, send):
            send(None, raw=b'\r\n{"event":"x.y","data":1,"new":true}\r\n{"id":%d,"result":{"ok":1},"later":2}\r\n'
                 % message["id"])
        daemon = self.fake(answer)
        with mediator.connect(daemon.socket, name="me", timeout=2) as client:
            self.assertEqual(client.call("T", "a", {"k": 1}), {"ok": 1})
            self.assertEqual(client.call("T", "a"), {"ok": 1})
        hello, first, second = daemon.received[:3]
        self.assertEqual(hello["params"], {"protocol": 1, "name": "me"})
        self.assertEqual((first["params"], first["timeout_ms"]), ({"k": 1}, 2000))
        self.assertEqual([m["id"] for m in daemon.received[:3]], [1, 2, 3])

    def test_local_timeout_after_the_margin_sends_cancel(self):
        daemon = self.fake(lambda message, send: None)  # never answers
        client = mediator.connect(daemon.socket)
        self.addCleanup(client.close)
        started = time.monotonic()
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("T", "slow", timeout=0.2)
        elapsed = time.monotonic() - started
        self.assertEqual(caught.exception.code, "timeout")
        self.assertGreaterEqual(elapsed, 1.1)
        self.assertLess(elapsed, 5)
        self.assertTrue(wait_until(lambda: any(m.get("action") == "cancel" for m in daemon.received), 5))
        cancel = [m for m in daemon.received if m.get("action") == "cancel"][0]
        self.assertEqual(cancel["params"], {"id": 2})
        self.assertNotIn("id", cancel)

    def test_a_closed_connection_fails_every_pending_call(self):
        daemon = self.fake(lambda message, send: None)
        client = mediator.connect(daemon.socket)
        self.addCleanup(client.close)
        errors = []

        def call():
            try:
                client.call("T", "a", timeout=20)
            except mediator.MediatorError as e:
                errors.append(e.code)
        threads = [threading.Thread(target=call) for _ in range(3)]
        for t in threads:
            t.start()
        self.assertTrue(wait_until(lambda: len(daemon.received) >= 4, 5))
        daemon.drop_connections()
        for t in threads:
            t.join(5)
        self.assertEqual(errors, ["disconnected"] * 3)
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("T", "a")
        self.assertEqual(caught.exception.code, "disconnected")

    def test_stream_and_send(self):
        def answer(message, send):
            if "id" in message and message.get("more"):
                for i in range(3):
                    send({"id": message["id"], "result": i, "continues": True})
                send({"id": message["id"], "error": {"code": "gone", "message": "bye", "data": [1]}})
        daemon = self.fake(answer)
        with mediator.connect(daemon.socket) as client:
            results = []
            with self.assertRaises(mediator.MediatorError) as caught:
                for value in client.stream("T", "watch", {"a": 1}):
                    results.append(value)
            self.assertEqual(results, [0, 1, 2])
            self.assertEqual((caught.exception.code, caught.exception.data), ("gone", [1]))
            client.send("T", "touch", {"b": 2})
            self.assertTrue(wait_until(lambda: any(m.get("action") == "touch" for m in daemon.received), 5))
        touch = [m for m in daemon.received if m.get("action") == "touch"][0]
        self.assertEqual(touch, {"target": "T", "action": "touch", "params": {"b": 2}})

    def test_service_cancel_and_stop_events(self):
        answers, cancel_seen = [], threading.Event()
        daemon = self.fake(lambda message, send: answers.append(message))
        svc = mediator.Service("T")

        @svc.action("wait")
        def wait(params, ctx):
            if ctx.cancelled.wait(10):
                cancel_seen.set()
            return {"late": True}

        @svc.action("quick")
        def quick(params, ctx):
            time.sleep(0.2)
            return {"quick": True}
        registered = threading.Event()
        thread = threading.Thread(target=svc.run, kwargs={"socket": daemon.socket,
                                                          "on_registered": registered.set}, daemon=True)
        thread.start()
        self.assertTrue(registered.wait(5))
        conn = daemon.connections[0]
        conn.sendall(b'{"id":"d1","target":"T","action":"wait","params":{}}\n'
                     b'{"event":"mediator.cancel","data":{"id":"d1"}}\n')
        self.assertTrue(cancel_seen.wait(5))
        # mediator.stop: the call in flight still gets its answer, then run() returns.
        conn.sendall(b'{"id":7,"target":"T","action":"quick"}\n{"event":"mediator.stop","data":{"target":"T"}}\n')
        thread.join(10)
        self.assertFalse(thread.is_alive())
        # The answer was written before run() returned; the fake daemon's
        # reader thread may still be about to record it.
        def answered():
            return [m for m in answers if "id" in m and "target" not in m]
        wait_until(answered, timeout=5)
        self.assertEqual(answered(), [{"id": 7, "result": {"quick": True}}])


if __name__ == "__main__":
    unittest.main()

"""Integration tests of the sync API against the real mediatord."""
import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
import unittest

import support
from support import DaemonTestCase, wait_until

import mediator

ADD_SPEC = {"name": "add", "description": "Add a note",
            "params": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}}



class NoteLocked(Exception):
    """A handler's own exception that chooses its wire error (mediator_error protocol)."""

    def __init__(self, note):
        super().__init__("note %d is locked" % note)
        self.note = note

    def mediator_error(self):
        return mediator.MediatorError("locked", str(self), {"id": self.note})

def notes_service(events=None, **kwargs):
    """A Python service used by several tests; `events` gets what handlers saw."""
    events = queue.Queue() if events is None else events
    svc = mediator.Service("Notes", description="Python notes", **kwargs)

    @svc.action("add", spec=ADD_SPEC)
    def add(params, ctx):
        return {"id": 1, "text": params["text"], "caller": ctx.caller, "timeout": ctx.timeout, "more": ctx.more}

    @svc.action("watch")
    def watch(params, ctx):
        for i in range(int(params.get("n", 3))):
            ctx.send_partial({"i": i})
        return {"done": True}

    @svc.action("touch")
    def touch(params, ctx):
        events.put(("touch", params, ctx.id))

    @svc.action("fail")
    def fail(params, ctx):
        if params.get("kind") == "mediator":
            raise mediator.MediatorError("not_found", "no note 3", {"id": 3})
        if params.get("kind") == "own":
            raise NoteLocked(7)
        raise RuntimeError("the disk is on fire")

    @svc.action("sleep")
    def sleep(params, ctx):
        cancelled = ctx.cancelled.wait(params.get("s", 10))
        events.put(("sleep", cancelled, ctx.id))
        return {"slept": not cancelled}

    @svc.action("nested")
    def nested(params, ctx):
        return {"inner": ctx.client.call("mediator", "ping")}

    @svc.not_found
    def fallback(action, params, ctx):
        return {"fallback": action, "params": params, "ctx_action": ctx.action}
    return svc, events


class SyncClientTests(DaemonTestCase):
    def setUp(self):
        super().setUp()
        self.svc, self.events = notes_service()
        self.serve(self.svc)
        self.client = self.connect(name="py-test")

    def test_call_reaches_the_handler_with_caller_and_timeout(self):
        result = self.client.call("Notes", "add", {"text": "hi"}, timeout=5)
        self.assertEqual(result["text"], "hi")
        self.assertEqual(result["caller"]["pid"], os.getpid())
        self.assertEqual(result["caller"]["name"], "py-test")
        self.assertTrue(0 < result["timeout"] <= 5)
        self.assertFalse(result["more"])

    def test_stream_yields_partials_then_the_final_result(self):
        self.assertEqual(list(self.client.stream("Notes", "watch", {"n": 3})),
                         [{"i": 0}, {"i": 1}, {"i": 2}, {"done": True}])
        # Without `more`, partials are not sent: the call gets the final result.
        self.assertEqual(self.client.call("Notes", "watch", {"n": 2}), {"done": True})

    def test_send_is_oneway(self):
        self.assertIsNone(self.client.send("Notes", "touch", {"x": 1}))
        what, params, call_id = self.events.get(timeout=10)
        self.assertEqual((what, params, call_id), ("touch", {"x": 1}, None))

    def test_subscribe_and_publish(self):
        sub = self.client.subscribe(["py.*"])
        other = self.connect()
        self.assertEqual(other.publish("py.hello", {"n": 1}), 1)
        self.assertEqual(other.publish("elsewhere"), 0)
        self.assertEqual(sub.get(timeout=10), mediator.Event("py.hello", {"n": 1}))
        sub.close()
        self.assertTrue(sub.closed)
        self.assertTrue(wait_until(lambda: other.publish("py.hello") == 0, 10))

    def test_open_routes_a_url(self):
        self.assertEqual(self.client.open("app://Notes/add?text=from+url")["text"], "from+url")

    def test_errors_pass_through_with_their_code(self):
        cases = [
            # A component's errors pass through unchanged: whether they say delivered is theirs to say.
            (("Notes", "fail", {"kind": "mediator"}), "not_found", {"id": 3}, mediator.CallDelivery.UNKNOWN),
            (("Notes", "fail", {}), "failed", {"type": "RuntimeError"}, mediator.CallDelivery.UNKNOWN),
            # An exception of the handler's own choosing its code through mediator_error().
            (("Notes", "fail", {"kind": "own"}), "locked", {"id": 7}, mediator.CallDelivery.UNKNOWN),
            # The daemon's own errors say whether the call reached a component.
            (("Notes", "add", {"text": 3}), "invalid_params", {"delivered": False}, mediator.CallDelivery.NO),
            (("Nobody", "x", {}), "target_not_found", {"delivered": False}, mediator.CallDelivery.NO),
        ]
        for args, code, data, delivered in cases:
            with self.subTest(args=args):
                with self.assertRaises(mediator.MediatorError) as caught:
                    self.client.call(*args)
                self.assertEqual(caught.exception.code, code)
                self.assertEqual(caught.exception.data, data)
                self.assertEqual(caught.exception.delivered, delivered)
        with self.assertRaises(mediator.MediatorError) as caught:
            self.client.call("Notes", "fail")
        self.assertEqual(caught.exception.message, "RuntimeError: the disk is on fire")

    def test_not_found_and_nested_calls(self):
        self.assertEqual(self.client.call("Notes", "whatever", {"a": 1}),
                         {"fallback": "whatever", "params": {"a": 1}, "ctx_action": "whatever"})
        self.assertEqual(self.client.call("Notes", "nested"), {"inner": {}})

    def test_registered_specs(self):
        described = self.client.describe("Notes")
        self.assertEqual(described["description"], "Python notes")
        specs = {spec["name"]: spec for spec in described["actions"]}
        self.assertEqual(specs["add"]["params"], ADD_SPEC["params"])
        self.assertIn("notFound", specs)

    def test_mediatorctl_calls_the_python_service(self):
        if not os.access(support.MEDIATORCTL, os.X_OK):
            self.skipTest("mediatorctl not found at %s" % support.MEDIATORCTL)
        done = self.daemon.ctl("call", "--json", "--name", "ctl", "Notes", "add", "text=from-ctl")
        self.assertEqual(done.returncode, 0, done.stderr)
        result = json.loads(done.stdout)
        self.assertEqual((result["text"], result["caller"]["name"]), ("from-ctl", "ctl"))
        failed = self.daemon.ctl("call", "--json", "Notes", "fail", "kind=mediator")
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("not_found", failed.stdout + failed.stderr)

    def test_timeout_cancels_the_handler(self):
        started = time.monotonic()
        with self.assertRaises(mediator.MediatorError) as caught:
            self.client.call("Notes", "sleep", {"s": 20}, timeout=0.3)
        self.assertEqual(caught.exception.code, "timeout")
        # The handler got it: a retry could run it twice.
        self.assertEqual(caught.exception.delivered, mediator.CallDelivery.YES)
        self.assertLess(time.monotonic() - started, 5)
        what, cancelled, call_id = self.events.get(timeout=10)
        self.assertEqual((what, cancelled), ("sleep", True))
        self.assertIsNotNone(call_id)
        self.assertEqual(self.client.call("mediator", "ping"), {})  # the connection is fine

    def test_closing_the_client_fails_its_calls(self):
        client = self.connect()
        errors = queue.Queue()

        def call():
            try:
                client.call("Notes", "sleep", {"s": 20})
            except mediator.MediatorError as e:
                errors.put(e.code)
        thread = threading.Thread(target=call)
        thread.start()
        self.assertTrue(wait_until(lambda: self.client.describe("Notes")["instances"][0].get("in_flight") == 1, 10))
        client.close()
        thread.join(10)
        self.assertEqual(errors.get(timeout=1), "disconnected")
        # The daemon cancels the call of a caller that left: the handler sees it.
        self.assertEqual(self.events.get(timeout=10)[:2], ("sleep", True))

    def test_daemon_going_away_fails_calls_with_disconnected(self):
        errors = queue.Queue()

        def call():
            try:
                self.client.call("Notes", "sleep", {"s": 20})
            except mediator.MediatorError as e:
                errors.put(e.code)
        thread = threading.Thread(target=call)
        thread.start()
        self.assertTrue(wait_until(lambda: not self.events.empty() or self._in_flight(), 10))
        self.daemon.proc.kill()
        thread.join(10)
        self.assertEqual(errors.get(timeout=1), "disconnected")
        with self.assertRaises(mediator.MediatorError) as caught:
            self.client.call("mediator", "ping")
        self.assertEqual(caught.exception.code, "disconnected")

    def _in_flight(self):
        with mediator.connect(self.socket, timeout=5) as probe:
            return probe.describe("Notes")["instances"][0].get("in_flight") == 1


class LifecycleTests(DaemonTestCase):
    def test_unreachable_without_a_daemon(self):
        with self.assertRaises(mediator.MediatorError) as caught:
            mediator.connect(os.path.join(self.daemon.dir, "none.sock"))
        self.assertEqual(caught.exception.code, "unreachable")

    def test_actions_registered_exactly_as_given(self):
        actions = [{"name": "watch", "description": "w", "more": True, "result": {"type": "object"}},
                   {"name": "touch", "oneway": True}, "ping"]
        svc = mediator.Service("Exact", actions=actions)
        svc.action("ping")(lambda params, ctx: "pong")
        self.serve(svc)
        client = self.connect()
        self.assertEqual(client.call("Exact", "ping"), "pong")
        specs = client.describe("Exact")["actions"]
        self.assertEqual([s["name"] for s in specs], ["watch", "touch", "ping"])
        self.assertEqual(specs[0]["result"], {"type": "object"})
        # An action declared without a handler is answered, not left hanging.
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("Exact", "watch", timeout=5)
        self.assertEqual(caught.exception.code, "action_not_found")

    def test_first_registration_failure_raises(self):
        first, _ = notes_service()
        self.serve(first)
        second, _ = notes_service()
        with self.assertRaises(mediator.MediatorError) as caught:
            second.run(socket=self.socket)
        self.assertEqual(caught.exception.code, "already_registered")

    def test_stop_without_mediator_stop_lets_calls_finish(self):
        svc, started = mediator.Service("Slow"), threading.Event()

        @svc.action("sleep")
        def sleep(params, ctx):
            started.set()
            time.sleep(0.5)
            return {"slept": True}
        running = self.serve(svc)
        client = self.connect()
        answers = queue.Queue()
        caller = threading.Thread(target=lambda: answers.put(client.call("Slow", "sleep")))
        caller.start()
        self.assertTrue(started.wait(10))
        svc.stop()  # not mediator.stop: the program decides to leave
        running.join(10)
        self.assertFalse(running.running)
        self.assertEqual(answers.get(timeout=10), {"slept": True})
        self.assertTrue(wait_until(lambda: not client.call("mediator", "list")["targets"], 10))

    def test_service_and_client_reconnect_after_a_daemon_restart(self):
        registrations = queue.Queue()
        svc, _ = notes_service()
        thread = threading.Thread(target=svc.run, kwargs={"socket": self.socket, "reconnect": True,
                                                          "on_registered": lambda: registrations.put(1)},
                                  daemon=True)
        thread.start()
        self.addCleanup(lambda: (svc.stop(), thread.join(10)))
        registrations.get(timeout=10)
        client = self.connect(reconnect=True)
        sub = client.subscribe(["back.*"])
        self.daemon.stop()
        self.daemon.start()
        registrations.get(timeout=20)  # registered again
        self.assertEqual(client.call("Notes", "add", {"text": "again"})["text"], "again")
        # The subscription was renewed on the new connection.
        publisher = self.connect()
        self.assertTrue(wait_until(lambda: publisher.publish("back.on") >= 1, 10))
        self.assertEqual(sub.get(timeout=10).name, "back.on")

    def test_a_managed_component_leaves_on_mediator_stop(self):
        script = os.path.join(self.daemon.dir, "component.py")
        left = os.path.join(self.daemon.dir, "left")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""\
                import sys
                sys.path.insert(0, %r)
                import mediator
                svc = mediator.Service("Managed")
                svc.action("hi")(lambda params, ctx: "hi")
                svc.run()
                open(%r, "w").write("left")
                """ % (support.PYTHON_DIR, left)))
        with open(os.path.join(self.daemon.components, "managed.json"), "w") as f:
            json.dump({"target": "Managed", "actions": ["hi"], "exec": [sys.executable, script],
                       "environment": {"MEDIATOR_SOCKET": self.socket}, "restart": "no"}, f)
        self.daemon.stop()
        self.daemon.extra = ["--component-stop-grace-ms", "30000"]
        self.daemon.start()
        client = self.connect()
        self.assertEqual(client.call("Managed", "hi", timeout=15), "hi")
        client.call("mediator", "stop", {"target": "Managed"}, timeout=20)
        # It left on its own (SIGTERM would come only after 30 s), with run() returning.
        self.assertTrue(wait_until(lambda: os.path.exists(left), 10))

    def test_a_plain_exception_answers_its_type_and_message_and_logs_the_traceback_on_stderr(self):
        script = os.path.join(self.daemon.dir, "raising.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""\
                import sys
                sys.path.insert(0, %r)
                import mediator
                svc = mediator.Service("Raising")

                def check_amount(amount):
                    raise ValueError("amount must be positive, not %%r" %% amount)

                svc.action("pay")(lambda params, ctx: check_amount(params.get("amount")))
                svc.run(socket=%r, on_registered=lambda: print("ready", flush=True))
                """ % (support.PYTHON_DIR, self.socket)))
        proc = subprocess.Popen([sys.executable, "-u", script], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        with self.assertRaises(mediator.MediatorError) as caught:
            self.connect().call("Raising", "pay", {"amount": -3}, timeout=15)
        self.assertEqual((caught.exception.code, caught.exception.message, caught.exception.data),
                         ("failed", "ValueError: amount must be positive, not -3", {"type": "ValueError"}))
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
        self.assertIn("the handler of Raising.pay raised ValueError", stderr)
        self.assertIn("Traceback (most recent call last)", stderr)
        self.assertIn("in check_amount", stderr)
        self.assertIn("ValueError: amount must be positive, not -3", stderr)


if __name__ == "__main__":
    unittest.main()

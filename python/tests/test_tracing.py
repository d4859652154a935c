"""Trace context (mediator.tracing): the rules unit by unit, then through
the real mediatord with sync and asyncio clients and services."""
import asyncio
import json
import os
import queue
import subprocess
import threading
import unittest

import support
from support import DaemonTestCase, FakeDaemon

import mediator
import mediator.aio as aio
from mediator import tracing
from mediator.tracing import TraceContext

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
GOOD = "00-%s-%s-01" % (TRACE_ID, PARENT_ID)


class TraceparentRuleTests(unittest.TestCase):
    def test_well_formed_and_malformed_traceparents(self):
        cases = [
            (GOOD, True),
            ("01-%s-%s-00" % (TRACE_ID, PARENT_ID), True),  # a later version, same layout
            ("ff-%s-%s-01" % (TRACE_ID, PARENT_ID), False),  # version ff is invalid
            ("00-%s-%s-01" % ("0" * 32, PARENT_ID), False),  # all-zero trace id
            ("00-%s-%s-01" % (TRACE_ID, "0" * 16), False),  # all-zero parent id
            ("00-%s-%s-01" % (TRACE_ID.upper(), PARENT_ID), False),  # uppercase hex
            ("00-%s-%s-01" % (TRACE_ID[:-1], PARENT_ID), False),  # short trace id
            (GOOD + "-extra", False),
            (GOOD + "\n", False),
            ("00_%s_%s_01" % (TRACE_ID, PARENT_ID), False),
            ("", False), (None, False), (42, False),
        ]
        for text, valid in cases:
            with self.subTest(text=text):
                self.assertEqual(tracing.is_valid_traceparent(text), valid)
                self.assertEqual(TraceContext.parse(text) is not None, valid)

    def test_tracestate_limits(self):
        self.assertTrue(tracing.is_valid_tracestate("vendor=1,other=abc"))
        self.assertTrue(tracing.is_valid_tracestate("a" * 512))
        self.assertFalse(tracing.is_valid_tracestate("a" * 513))
        # Its JSON form has escapes, which the daemon reads through.
        self.assertTrue(tracing.is_valid_tracestate('quote="x",back\\slash'))
        self.assertTrue(tracing.is_valid_tracestate(",".join(["k=v"] * 32) + ", ,"))
        for bad in ["tab\there", "a=1\r\nb=2", "esc=\x1b[31m", "nul=\x00", "caf\u00e9", ",".join(["k=v"] * 33), None, 3]:
            with self.subTest(bad=bad):
                self.assertFalse(tracing.is_valid_tracestate(bad))
        # A bad tracestate is dropped; the traceparent still counts.
        self.assertEqual(TraceContext.parse(GOOD, "x" * 600), TraceContext(GOOD, None))
        self.assertEqual(TraceContext.parse(GOOD, "v=1"), TraceContext(GOOD, "v=1"))

    def test_roots_and_children(self):
        root = TraceContext.new_root()
        self.assertTrue(tracing.is_valid_traceparent(root.traceparent))
        self.assertTrue(root.sampled)
        self.assertFalse(TraceContext.new_root(sampled=False).sampled)
        child = TraceContext(GOOD, "v=1").child()
        self.assertEqual((child.trace_id, child.tracestate, child.traceparent[-2:]), (TRACE_ID, "v=1", "01"))
        self.assertNotEqual(child.span_id, PARENT_ID)
        self.assertTrue(tracing.is_valid_traceparent(child.traceparent))
        self.assertEqual(len({TraceContext.new_root().trace_id for _ in range(50)}), 50)

    def test_use_sets_and_restores_the_current_context(self):
        self.assertIsNone(tracing.current())
        outer, inner = TraceContext.new_root(), TraceContext.new_root()
        with tracing.use(outer):
            self.assertEqual(tracing.current(), outer)
            with tracing.use(inner):
                self.assertEqual(tracing.outgoing(None), inner)
                self.assertEqual(tracing.outgoing(outer), outer)
            self.assertEqual(tracing.current(), outer)
        self.assertIsNone(tracing.current())

    def test_only_well_formed_members_go_out(self):
        # A context built by hand is checked where it is sent, as the Swift library does.
        self.assertIsNone(tracing.outgoing(TraceContext(GOOD.upper(), "v=1")))
        self.assertEqual(tracing.outgoing(TraceContext(GOOD, "x" * 513)), TraceContext(GOOD))
        self.assertEqual(tracing.outgoing(TraceContext(GOOD, "q=1\r\n")), TraceContext(GOOD))
        self.assertEqual(tracing.outgoing(TraceContext(GOOD, "")), TraceContext(GOOD, ""))
        with tracing.use(TraceContext("00-bad")):
            self.assertIsNone(tracing.outgoing(None))
        # A bare traceparent string is a mistake, not a context.
        with self.assertRaises(TypeError):
            tracing.outgoing(GOOD)
        with self.assertRaises(TypeError):
            with tracing.use(GOOD):
                pass
        self.assertIsNone(tracing.current())

    def test_use_none_suppresses_an_outer_context(self):
        with tracing.use(TraceContext.new_root()):
            with tracing.use(None):
                self.assertIsNone(tracing.outgoing(None))

    def test_call_context_reads_the_requests_members(self):
        def context(**members):
            request = dict({"id": 1, "action": "a"}, **members)
            return mediator.CallContext("T", request, None, mediator.service.Responder(1, False, lambda m: None))
        ctx = context(traceparent=GOOD, tracestate="v=1")
        self.assertEqual(ctx.caller_trace, TraceContext(GOOD, "v=1"))
        self.assertEqual((ctx.trace.trace_id, ctx.trace.tracestate), (TRACE_ID, "v=1"))
        self.assertNotEqual(ctx.trace.span_id, PARENT_ID)
        for members in ({}, {"traceparent": GOOD.upper(), "tracestate": "v=1"}, {"traceparent": 7},
                        {"tracestate": "v=1"}):
            with self.subTest(members=members):
                ctx = context(**members)
                self.assertEqual((ctx.caller_trace, ctx.trace), (None, None))

    def test_requests_carry_the_members_only_with_a_context(self):
        received = queue.Queue()
        fake = FakeDaemon(lambda message, send: (received.put(message),
                                                 send({"id": message["id"], "result": {}}) if "id" in message else None))
        self.addCleanup(fake.close)
        with mediator.connect(fake.socket, timeout=5) as client:
            client.call("Svc", "a")
            self.assertNotIn("traceparent", received.get(timeout=5))
            context = TraceContext(GOOD, "v=1")
            with tracing.use(context):
                client.call("Svc", "b")
                client.send("Svc", "c")
            for _ in range(2):
                message = received.get(timeout=5)
                self.assertEqual((message["traceparent"], message["tracestate"]), (GOOD, "v=1"), message)
            explicit = TraceContext.new_root()
            client.call("Svc", "d", trace=explicit)
            message = received.get(timeout=5)
            self.assertEqual(message["traceparent"], explicit.traceparent)
            self.assertNotIn("tracestate", message)

    def test_asyncio_requests_carry_the_members_only_with_a_context(self):
        received = queue.Queue()
        fake = FakeDaemon(lambda message, send: (received.put(message),
                                                 send({"id": message["id"], "result": {}}) if "id" in message else None))
        self.addCleanup(fake.close)
        context, explicit = TraceContext(GOOD, "v=1"), TraceContext.new_root()

        async def main():
            async with await aio.connect(fake.socket, timeout=5) as client:
                await client.call("Svc", "none")
                with tracing.use(context):
                    await client.call("Svc", "call")
                    await client.send("Svc", "send")
                    late = client.stream("Svc", "stream")
                # The stream was asked for inside the block: it carries the context.
                self.assertEqual([r async for r in late], [{}])
                await client.call("Svc", "explicit", trace=explicit)
                await asyncio.wait_for(client.ping(), 5)  # the oneway send has arrived by now

        asyncio.run(asyncio.wait_for(main(), 30))
        members = {}
        while not received.empty():
            message = received.get()
            members[message["action"]] = (message.get("traceparent"), message.get("tracestate"))
        self.assertEqual(members["none"], (None, None))
        for action in ("call", "send", "stream"):
            self.assertEqual(members[action], (GOOD, "v=1"), action)
        self.assertEqual(members["explicit"], (explicit.traceparent, None))

    def test_registering_carries_no_trace(self):
        fake = FakeDaemon()
        self.addCleanup(fake.close)
        svc = mediator.Service("Quiet")
        with tracing.use(TraceContext.new_root()):  # a service run inside a trace; stops once registered
            svc.run(socket=fake.socket, reconnect=False, on_registered=svc.stop)
        sent = [m for m in fake.received if m.get("action") in ("hello", "register")]
        self.assertEqual(len(sent), 2)
        for message in sent:
            self.assertNotIn("traceparent", message)


def traced_services(seen):
    """Front calls Back from its handler; both record what trace they saw."""
    front = mediator.Service("Front")
    back = mediator.Service("Back")

    @front.action("hop")
    def hop(params, ctx):
        seen.put(("front", ctx.caller_trace, ctx.trace, tracing.current()))
        return ctx.client.call("Back", "leaf")

    @back.action("leaf")
    def leaf(params, ctx):
        seen.put(("back", ctx.caller_trace, ctx.trace, tracing.current()))
        return {"ok": True}
    return front, back


class TracingThroughTheDaemonTests(DaemonTestCase):
    def test_a_trace_crosses_two_python_components(self):
        seen = queue.Queue()
        front, back = traced_services(seen)
        self.serve(back)
        self.serve(front)
        client = self.connect()
        root = TraceContext.new_root(tracestate="team=blue")
        with tracing.use(root):
            self.assertEqual(client.call("Front", "hop"), {"ok": True})
        _, front_caller, front_span, front_current = seen.get(timeout=10)
        _, back_caller, back_span, back_current = seen.get(timeout=10)
        # The daemon forwarded the caller's context unchanged.
        self.assertEqual(front_caller, root)
        # The handler's span is a child: same trace, a new span id, current while it runs.
        self.assertEqual(front_span.trace_id, root.trace_id)
        self.assertNotEqual(front_span.span_id, root.span_id)
        self.assertEqual(front_current, front_span)
        # Its own call carried its span as the parent: the trace goes on.
        self.assertEqual(back_caller, front_span)
        self.assertEqual(back_span.trace_id, root.trace_id)
        self.assertEqual(back_current, back_span)
        self.assertEqual(back_span.tracestate, "team=blue")

        # Without a trace, no members, and handlers see none.
        self.assertEqual(client.call("Front", "hop"), {"ok": True})
        for _ in range(2):
            who, caller, span, current = seen.get(timeout=10)
            self.assertEqual((caller, span, current), (None, None, None), who)

    def raw_component(self, target):
        """A component that records each forwarded request as it arrived and answers {}."""
        requests = queue.Queue()
        holder = []

        def on_request(request):
            requests.put(request)
            if "id" in request:
                holder[0]._link.send({"id": request["id"], "result": {}})
        ignore = lambda *args: None  # noqa: E731
        component = mediator.Client(socket=self.socket, timeout=10,
                                    _hooks=mediator.client.Hooks(on_request, ignore, ignore, ignore))
        holder.append(component)
        self.addCleanup(component.close)
        component.call("mediator", "register", {"target": target, "actions": ["a"], "mode": "exclusive"})
        return requests

    def test_the_component_gets_the_members_as_sent_and_none_without_a_trace(self):
        requests = self.raw_component("Raw")
        client = self.connect()
        client.call("Raw", "a")
        plain = requests.get(timeout=10)
        self.assertFalse({"traceparent", "tracestate"} & set(plain), plain)
        context = TraceContext.new_root(tracestate="rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        with tracing.use(context):
            client.call("Raw", "a")
            client.send("Raw", "a")
        for _ in range(2):
            forwarded = requests.get(timeout=10)
            self.assertEqual((forwarded["traceparent"], forwarded["tracestate"]),
                             (context.traceparent, context.tracestate))

    def test_streams_and_oneway_calls_carry_the_trace(self):
        seen = queue.Queue()
        svc = mediator.Service("Steps")

        @svc.action("count")
        def count(params, ctx):
            seen.put(("count", ctx.caller_trace))
            for i in range(2):
                ctx.send_partial(i)
            return "end"

        @svc.action("note")
        def note(params, ctx):
            seen.put(("note", ctx.caller_trace))
        self.serve(svc)
        client = self.connect()
        root = TraceContext.new_root()
        with tracing.use(root):
            steps = client.stream("Steps", "count")
            client.send("Steps", "note")
        self.assertEqual(list(steps), [0, 1, "end"])
        self.assertEqual(dict(seen.get(timeout=10) for _ in range(2)), {"count": root, "note": root})

    def test_the_asyncio_client_and_service_propagate_too(self):
        seen = []
        svc = aio.Service("AioFront")

        @svc.action("hop")
        async def hop(params, ctx):
            seen.append(("async", ctx.caller_trace, tracing.current()))
            return await ctx.client.call("AioFront", "plain")

        @svc.action("plain")
        def plain(params, ctx):  # runs in an executor thread: the context goes with it
            seen.append(("plain", ctx.caller_trace, tracing.current()))
            return "done"

        async def main():
            registered = asyncio.Event()
            task = asyncio.get_running_loop().create_task(svc.run(socket=self.socket, on_registered=registered.set))
            await asyncio.wait_for(registered.wait(), 10)
            async with await aio.connect(self.socket, timeout=10) as client:
                root = TraceContext.new_root()
                with tracing.use(root):
                    self.assertEqual(await client.call("AioFront", "hop"), "done")
            svc.stop()
            await asyncio.wait_for(task, 10)
            return root

        root = asyncio.run(asyncio.wait_for(main(), 60))
        (_, async_caller, async_current), (_, plain_caller, plain_current) = seen
        self.assertEqual(async_caller, root)
        self.assertEqual(async_current.trace_id, root.trace_id)
        self.assertEqual(plain_caller, async_current)
        self.assertEqual(plain_current.trace_id, root.trace_id)
        self.assertNotEqual(plain_current.span_id, plain_caller.span_id)

    def test_mediatorctl_traceparent_reaches_a_python_handler(self):
        seen = queue.Queue()
        front, back = traced_services(seen)
        self.serve(back)
        outcome = self.daemon.ctl("call", "Back", "leaf", "--traceparent", GOOD, "--tracestate", "ci=7")
        self.assertEqual(outcome.returncode, 0, outcome.stderr)
        _, caller, span, _ = seen.get(timeout=10)
        self.assertEqual(caller, TraceContext(GOOD, "ci=7"))
        self.assertEqual(span.trace_id, TRACE_ID)

    def test_a_python_callers_trace_continues_in_a_swift_component(self):
        probe = os.path.join(os.path.dirname(support.MEDIATORD), "mediator-trace-probe")
        if not os.access(probe, os.X_OK):
            self.skipTest("mediator-trace-probe not built at %s" % probe)
        process = subprocess.Popen(
            [probe, "component", "--socket", self.socket, "--target", "TraceProbe"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(process.stdout.close)
        self.addCleanup(process.wait, 10)
        self.addCleanup(process.kill)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
        self.assertEqual(lines.get(timeout=20).strip(), "ready")
        client = self.connect()
        root = TraceContext.new_root()
        with tracing.use(root):
            client.call("TraceProbe", "echo", {"n": 1})
        span = None
        while span is None:
            record = json.loads(lines.get(timeout=10))
            if record.get("name") == "TraceProbe/echo":
                span = record
        self.assertEqual((span["kind"], span["trace_id"], span["parent_span_id"]), ("server", root.trace_id, root.span_id))


if __name__ == "__main__":
    unittest.main()

"""The OpenTelemetry bridge of python/README.md ("Trace context"), run
through the real mediatord. Skipped where opentelemetry-sdk is not
installed: the package does not depend on it."""
import queue
import unittest
from typing import Optional

from support import DaemonTestCase

import mediator
from mediator import tracing
from mediator.tracing import TraceContext

try:
    from opentelemetry import trace
    from opentelemetry.propagate import extract, inject
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    HAVE_OTEL = True
except ImportError:
    HAVE_OTEL = False


# The two functions as python/README.md gives them.
def from_otel() -> Optional[TraceContext]:
    """The current OpenTelemetry span, as Mediator's trace context."""
    carrier: dict = {}
    inject(carrier)
    return TraceContext.parse(carrier.get("traceparent"), carrier.get("tracestate"))


def to_otel(context: Optional[TraceContext]):
    """Mediator's trace context, as the parent of an OpenTelemetry span."""
    return extract(context.members() if context else {})


@unittest.skipUnless(HAVE_OTEL, "opentelemetry-sdk is not installed")
class OpenTelemetryBridgeTests(DaemonTestCase):
    def test_spans_nest_across_python_components(self):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()  # not the global one: a test may not set that twice
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("mediator-tests")
        seen = queue.Queue()
        front, back = mediator.Service("Front"), mediator.Service("Back")

        @front.action("hop")
        def hop(params, ctx):
            with tracer.start_as_current_span("Front/hop", context=to_otel(ctx.caller_trace),
                                              kind=trace.SpanKind.SERVER):
                with tracing.use(from_otel()):
                    return ctx.client.call("Back", "leaf")

        @back.action("leaf")
        def leaf(params, ctx):
            seen.put(ctx.caller_trace)
            return "leaf"
        self.serve(back)
        self.serve(front)
        client = self.connect()
        with tracer.start_as_current_span("caller", kind=trace.SpanKind.CLIENT):
            self.assertEqual(client.call("Front", "hop", trace=from_otel()), "leaf")

        spans = {span.name: span for span in exporter.get_finished_spans()}
        caller, server = spans["caller"], spans["Front/hop"]
        back_caller = seen.get(timeout=10)
        self.assertEqual(server.context.trace_id, caller.context.trace_id)
        self.assertEqual(server.parent.span_id, caller.context.span_id)
        self.assertEqual(back_caller.trace_id, "%032x" % caller.context.trace_id)
        self.assertEqual(back_caller.span_id, "%016x" % server.context.span_id)

    def test_no_span_no_trace(self):
        self.assertIsNone(from_otel())


if __name__ == "__main__":
    unittest.main()

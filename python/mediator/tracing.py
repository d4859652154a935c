"""W3C Trace Context through Mediator, with the standard library only.

A request may carry `traceparent` and `tracestate` (docs/tracing.md); the
daemon forwards them unchanged. This module keeps the *current* trace
context in a `contextvars.ContextVar`, the way tracers keep their current
span:

- calls made through `mediator.Client` or `mediator.aio.Client` carry the
  current context (or the `trace=` given to the call);
- a `Service` runs each handler with the current context set to a child of
  the request's (same trace id, a new span id standing for the handler's
  work), so the handler's own calls continue the trace.

    from mediator import tracing

    with tracing.use(tracing.TraceContext.new_root()):
        client.call("Notes", "add", {"text": "hi"})

Nothing here exports spans; python/README.md ("Trace context") shows how to
bridge to OpenTelemetry.
"""
import contextvars
import re
import secrets
from contextlib import contextmanager
from typing import Dict, Iterator, NamedTuple, Optional

#: A version-00 traceparent: version, trace id, parent (span) id, flags; lowercase hex.
_TRACEPARENT = re.compile(r"\A([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")
#: W3C: propagate at least 512 characters of tracestate; the daemon passes on no more.
MAX_TRACESTATE = 512
#: W3C: at most 32 list-members in a tracestate.
MAX_TRACESTATE_MEMBERS = 32
#: Printable ASCII (0x20-0x7E), up to the limit.
_TRACESTATE = re.compile(r"\A[\x20-\x7e]{0,%d}\Z" % MAX_TRACESTATE)


def is_valid_traceparent(text: object) -> bool:
    """What the daemon forwards: 55 characters, lowercase hex fields, a
    version other than ff, and trace and parent ids not all zero."""
    if not isinstance(text, str):
        return False
    match = _TRACEPARENT.match(text)
    if match is None:
        return False
    version, trace_id, parent_id, _ = match.groups()
    return version != "ff" and trace_id != "0" * 32 and parent_id != "0" * 16


def is_valid_tracestate(text: object) -> bool:
    """What the daemon forwards, as it checks it after unescaping: at most 512
    characters of printable ASCII in at most 32 comma-separated members
    (empty ones not counted)."""
    if not isinstance(text, str) or _TRACESTATE.match(text) is None:
        return False
    return sum(1 for member in text.split(",") if member.strip(" ")) <= MAX_TRACESTATE_MEMBERS


class TraceContext(NamedTuple):
    """One position in a trace: the members a request carries."""
    traceparent: str
    tracestate: Optional[str] = None

    @classmethod
    def parse(cls, traceparent: object, tracestate: object = None) -> Optional["TraceContext"]:
        """The context a request's members name; None when `traceparent` is
        not well formed (and then its tracestate is ignored too, as W3C says).
        A malformed tracestate alone is dropped."""
        if not is_valid_traceparent(traceparent):
            return None
        return cls(str(traceparent), tracestate if is_valid_tracestate(tracestate) else None)

    @classmethod
    def new_root(cls, sampled: bool = True, tracestate: Optional[str] = None) -> "TraceContext":
        """The start of a new trace: random trace and span ids."""
        return cls("00-%s-%s-%s" % (_random_hex(16), _random_hex(8), "01" if sampled else "00"), tracestate)

    @property
    def trace_id(self) -> str:
        return self.traceparent[3:35]

    @property
    def span_id(self) -> str:
        """The parent id field: the span this context stands for."""
        return self.traceparent[36:52]

    @property
    def sampled(self) -> bool:
        return int(self.traceparent[53:55], 16) & 1 == 1

    def child(self) -> "TraceContext":
        """A new span in the same trace, whose parent is this one; flags and
        tracestate are kept."""
        return TraceContext("00-%s-%s-%s" % (self.trace_id, _random_hex(8), self.traceparent[53:55]), self.tracestate)

    def members(self) -> Dict[str, str]:
        """The request members: `traceparent`, and `tracestate` when there is one."""
        members = {"traceparent": self.traceparent}
        if self.tracestate is not None:
            members["tracestate"] = self.tracestate
        return members


def _random_hex(size: int) -> str:
    while True:  # all-zero ids are invalid; 1 in 2**64 at worst
        value = secrets.token_hex(size)
        if value != "0" * (2 * size):
            return value


_current: "contextvars.ContextVar[Optional[TraceContext]]" = contextvars.ContextVar(
    "mediator_trace_context", default=None)


def current() -> Optional[TraceContext]:
    """The context calls made now carry, or None."""
    return _current.get()


@contextmanager
def use(context: Optional[TraceContext]) -> Iterator[Optional[TraceContext]]:
    """Makes `context` current inside the block (None: no trace, also inside
    an outer `use`)."""
    _check_type(context)
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def outgoing(explicit: Optional[TraceContext]) -> Optional[TraceContext]:
    """What a call carries: the context given to it, else the current one.

    Only well-formed members are sent, as the Swift library does: a
    TraceContext built by hand with a malformed traceparent sends nothing, one
    with a malformed tracestate sends the traceparent alone. (The daemon
    would drop them too; not sending them keeps one rule on both sides.)"""
    context = _current.get() if explicit is None else explicit
    if context is None:
        return None
    _check_type(context)
    if not is_valid_traceparent(context.traceparent):
        return None
    if context.tracestate is not None and not is_valid_tracestate(context.tracestate):
        return TraceContext(context.traceparent)
    return context


def _check_type(context: object) -> None:
    # A traceparent string passed as `trace=` is a mistake worth a clear error.
    if context is not None and not isinstance(context, TraceContext):
        raise TypeError("expected a mediator.tracing.TraceContext or None, not %s" % type(context).__name__)

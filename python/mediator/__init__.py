"""Mediator: call and serve targets through mediatord (standard library only).

    import mediator

    with mediator.connect() as client:
        print(client.call("Notes", "add", {"text": "hi"}))

The asyncio flavour of the same names is in `mediator.aio`. Descriptors
(files, pipes, sealed memfds) go with calls and results through
`mediator.FD` and come back as `mediator.ReceivedFD` (see `mediator.fds`).
`mediator.testing` runs tests against a mediatord of their own (it needs
the binary); import it explicitly.
"""
from .client import Client, Event, Stream, Subscription, connect
from .errors import DISCONNECTED, FAILED, NOT_IMPLEMENTED, UNREACHABLE, CallDelivery, MediatorError
from .fds import FD, ReceivedFD, memfd_from_bytes, read_memfd
from .paths import SYSTEM_SOCKET, socket_path
from .service import SHUTDOWN_GRACE, CallContext, Service, serve
from . import tracing
from .tracing import TraceContext

__version__ = "0.1.0"

__all__ = [
    "CallContext", "CallDelivery", "Client", "DISCONNECTED", "Event", "FAILED", "FD", "MediatorError",
    "NOT_IMPLEMENTED", "ReceivedFD", "SYSTEM_SOCKET", "Service", "Stream", "Subscription", "TraceContext",
    "SHUTDOWN_GRACE", "UNREACHABLE", "connect", "serve", "memfd_from_bytes", "read_memfd", "socket_path", "tracing",
    "__version__",
]

"""The one error type of the package, carrying the wire's error code."""
import enum
import logging
from typing import Any, Optional

#: Codes used locally, never sent on the wire (docs/protocol.md).
UNREACHABLE = "unreachable"    # no daemon at the socket
DISCONNECTED = "disconnected"  # the connection closed before an answer
#: What a service answers when a handler raises something else than MediatorError.
FAILED = "failed"
#: What a service answers when a handler raises NotImplementedError, as the
#: methods of a generated service class do until overridden (docs/protocol.md).
NOT_IMPLEMENTED = "not_implemented"

#: Where a handler's traceback goes when the service was given no logger:
#: stderr (logging's last resort), unless the program sets up logging.
log = logging.getLogger("mediator.service")


class CallDelivery(enum.Enum):
    """Whether a failed call reached a component (`data.delivered`, docs/protocol.md)."""
    #: Handed to a component, which may have run it: a retry may run it twice.
    YES = "yes"
    #: No component got it: a retry runs it at most once.
    NO = "no"
    #: Nobody on the way can tell (no boolean `delivered`).
    UNKNOWN = "unknown"


class MediatorError(Exception):
    """An error response (`code`, `message`, optional `data`), or a local failure."""

    def __init__(self, code: str, message: str = "", data: Any = None):
        super().__init__("%s: %s" % (code, message) if message else code)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return "MediatorError(%r, %r, %r)" % (self.code, self.message, self.data)

    @property
    def delivered(self) -> CallDelivery:
        """Whether the call reached a component, as `data.delivered` says:
        `CallDelivery.NO` means a retry is safe."""
        value = self.data.get("delivered") if isinstance(self.data, dict) else None
        if value is True:
            return CallDelivery.YES
        if value is False:
            return CallDelivery.NO
        return CallDelivery.UNKNOWN

    def to_wire(self) -> dict:
        """The `error` member of a response."""
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_wire(cls, error: Any) -> "MediatorError":
        """The `error` member of a response as an exception; tolerant of bad shapes."""
        if not isinstance(error, dict):
            return cls("internal", "malformed error response: %r" % (error,))
        code = error.get("code")
        message = error.get("message")
        return cls(code if isinstance(code, str) else "internal",
                   message if isinstance(message, str) else "",
                   error.get("data"))


def error_from_exception(exc: BaseException, action: Optional[str] = None,
                         logger: Optional[logging.Logger] = None) -> MediatorError:
    """What a service answers for an exception raised by the handler of
    `action` ("Target.action"): a MediatorError unchanged; an exception with
    a `mediator_error()` method (the duck-typed protocol, as Swift's
    MediatorErrorConvertible) as the MediatorError that method returns;
    NotImplementedError as `not_implemented`; anything else as `failed` with
    the message "Type: message", the type in `data` and the traceback logged
    (`logger`, else the logger "mediator.service"), so that neither the caller nor
    the component's log is left without it. A `mediator_error()` that
    raises or returns something else than a MediatorError counts as the
    handler failing: `failed`, logged."""
    if isinstance(exc, MediatorError):
        return exc
    convert = getattr(exc, "mediator_error", None)
    if callable(convert):
        try:
            converted = convert()
        except Exception as problem:  # the conversion itself failed: say so, as for any failure
            (logger or log).error("the mediator_error() of %s raised", type(exc).__name__, exc_info=problem)
            converted = None
        if isinstance(converted, MediatorError):
            return converted
        if converted is not None:
            (logger or log).error("the mediator_error() of %s returned %s, not a MediatorError",
                                  type(exc).__name__, type(converted).__name__)
    kind = type(exc).__name__
    text = str(exc)
    if isinstance(exc, NotImplementedError):
        return MediatorError(NOT_IMPLEMENTED, "not implemented: " + text if text else "not implemented",
                             {"type": kind})
    (logger or log).error("the handler of %s raised %s", action or "a call", kind, exc_info=exc)
    return MediatorError(FAILED, "%s: %s" % (kind, text) if text else kind, {"type": kind})

"""The one error type of the package, carrying the wire's error code."""
import enum
from typing import Any

#: Codes used locally, never sent on the wire (docs/protocol.md).
UNREACHABLE = "unreachable"    # no daemon at the socket
DISCONNECTED = "disconnected"  # the connection closed before an answer
#: What a service answers when a handler raises something else than MediatorError.
FAILED = "failed"


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


def error_from_exception(exc: BaseException) -> MediatorError:
    """What a service answers for an exception raised by a handler."""
    if isinstance(exc, MediatorError):
        return exc
    return MediatorError(FAILED, str(exc) or type(exc).__name__)

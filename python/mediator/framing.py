"""JSON Lines framing: one compact JSON object per line (PROTOCOL.md section 1)."""
import json
import math
from typing import Any, List, Optional, Tuple

from .errors import MediatorError

#: The daemon's default frame limit (without the LF).
MAX_FRAME = 1 << 20
#: The daemon's default call timeout, used for the client's local deadline.
DEFAULT_TIMEOUT = 30.0
#: How long the client waits past a call's timeout before giving up itself.
TIMEOUT_MARGIN = 1.0


def encode(message: dict) -> bytes:
    """One frame: compact UTF-8 JSON and a LF (compact JSON has no raw newline)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8") + b"\n"


def check_size(frame: bytes, limit: Optional[int]) -> None:
    """Raises `frame_too_large` when `frame` (with its LF) is over the peer's limit."""
    if limit is not None and len(frame) - 1 > limit:
        # Never sent: no component got it.
        raise MediatorError("frame_too_large",
                            "the message is %d bytes; the limit is %d" % (len(frame) - 1, limit),
                            {"delivered": False})


def timeout_ms(timeout: Optional[float]) -> Optional[int]:
    """Seconds as the wire's positive `timeout_ms` (rounded up), or None."""
    if timeout is None:
        return None
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    return max(1, int(math.ceil(timeout * 1000)))


def local_deadline(timeout: Optional[float]) -> float:
    """How long a caller waits for a response: the call's timeout plus a margin."""
    return (DEFAULT_TIMEOUT if timeout is None else timeout) + TIMEOUT_MARGIN


def kind(message: dict) -> Optional[str]:
    """"request", "response", "event" or None (PROTOCOL.md section 2)."""
    if "target" in message and "action" in message:
        return "request"
    if "id" in message and ("result" in message or "error" in message):
        return "response"
    if "event" in message:
        return "event"
    return None


class FrameDecoder:
    """Splits bytes into JSON objects.

    Accepts LF and CRLF, skips blank lines, drops a line longer than
    `max_frame` (up to its LF) and lines that are not a JSON object;
    `dropped` counts what was dropped.
    """

    def __init__(self, max_frame: int = MAX_FRAME):
        self.max_frame = max_frame
        self.dropped = 0
        self._buffer = bytearray()
        self._discarding = False
        self._base = 0  # offset in the stream of the buffer's first byte

    @property
    def next_line_start(self) -> int:
        """The offset in the stream where the next line not yet split off
        begins: no later message can begin before it."""
        return self._base

    def feed(self, data: bytes) -> List[dict]:
        return [message for _, message in self.feed_at(data)]

    def feed_at(self, data: bytes) -> List[Tuple[int, dict]]:
        """As `feed`, each message with the offset in the stream of its
        line's first byte (to match descriptors to it, see fds.py)."""
        messages: List[Tuple[int, dict]] = []
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self.max_frame:
                    # Too long already: drop it and everything up to the next LF.
                    if not self._discarding:
                        self.dropped += 1
                    self._discarding = True
                    self._base += len(self._buffer)
                    del self._buffer[:]
                return messages
            line = bytes(self._buffer[:end])
            start = self._base
            del self._buffer[:end + 1]
            self._base += end + 1
            if self._discarding:
                self._discarding = False
                continue
            if len(line) > self.max_frame:
                self.dropped += 1
                continue
            message = parse_line(line)
            if message is None:
                if line.strip():
                    self.dropped += 1
                continue
            messages.append((start, message))


def parse_line(line: bytes) -> Optional[dict]:
    """The JSON object on one line (CR and LF stripped), or None."""
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return None
    try:
        value: Any = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return value if isinstance(value, dict) else None

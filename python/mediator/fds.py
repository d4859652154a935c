"""File descriptors passed with messages (PROTOCOL.md section 8).

Sending: put `FD(fileno_or_file)` anywhere in a call's params (or a
handler's result or partial); the package numbers the markers, writes
`{"$fd": I}` in their place and `"fds": N` in the message, and sends
duplicates of the descriptors with the message's first byte. The caller's
own descriptors stay the caller's (unless `FD(..., close=True)`).

Receiving: each `{"$fd": I}` of a result (or of a handler's params) comes
back as a `ReceivedFD`, which owns its descriptor as a Python file owns
its: close it, detach it, or use it in a `with` block; one collected
while still open is closed with a ResourceWarning.
"""
import array
import collections
import fcntl
import json
import mmap
import os
import socket
import warnings
from typing import Any, Deque, List, NamedTuple, Optional, Tuple

from .errors import MediatorError
from .framing import FrameDecoder, check_size, encode, kind

#: The kernel's limit of descriptors in one SCM_RIGHTS message (SCM_MAX_FD).
KERNEL_MAX_FDS = 253
_INT_SIZE = array.array("i").itemsize
#: recvmsg's control buffer: room for the kernel's limit, so that a
#: well-formed message is never cut short (MSG_CTRUNC).
CONTROL_SIZE = socket.CMSG_SPACE(KERNEL_MAX_FDS * _INT_SIZE)
#: Received descriptors are close-on-exec, as Python's own are (PEP 446).
_RECV_FLAGS = getattr(socket, "MSG_CMSG_CLOEXEC", 0)

# Linux's values, for a Python whose fcntl lacks them (they came in 3.8).
F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
F_GET_SEALS = getattr(fcntl, "F_GET_SEALS", 1034)
F_SEAL_SEAL = getattr(fcntl, "F_SEAL_SEAL", 0x0001)
F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 0x0002)
F_SEAL_GROW = getattr(fcntl, "F_SEAL_GROW", 0x0004)
F_SEAL_WRITE = getattr(fcntl, "F_SEAL_WRITE", 0x0008)
MFD_CLOEXEC = getattr(os, "MFD_CLOEXEC", 0x0001)
MFD_ALLOW_SEALING = getattr(os, "MFD_ALLOW_SEALING", 0x0002)
#: The seals that make a memfd's content immutable for every holder.
IMMUTABLE_SEALS = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL


class FD:
    """A descriptor to send, placed anywhere in params or a result.

    `source` is a descriptor number or an object with `fileno()` (a file,
    a socket, a `ReceivedFD`). The package sends a duplicate, taken when
    the message is built, so `source` may be closed once the call returns
    (or, in a handler, once the result is returned). With `close=True` the
    package closes `source` itself once the message is built, sent or not:
    for a handler that returns a descriptor it has no further use for."""

    __slots__ = ("source", "close")

    def __init__(self, source: Any, close: bool = False):
        if isinstance(source, bool) or not (isinstance(source, int) or hasattr(source, "fileno")):
            raise TypeError("FD() takes a descriptor number or an object with fileno(), not %r" % (source,))
        if isinstance(source, int) and source < 0:
            raise ValueError("FD(%d): not a descriptor" % source)
        self.source = source
        self.close = close

    def fileno(self) -> int:
        return self.source if isinstance(self.source, int) else self.source.fileno()

    def __repr__(self) -> str:
        return "FD(%r%s)" % (self.source, ", close=True" if self.close else "")


class ReceivedFD:
    """A descriptor that arrived with a message, owned by this object."""

    __slots__ = ("_fd", "__weakref__")

    def __init__(self, fd: int):
        self._fd = fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError("the descriptor is closed or detached")
        return self._fd

    def detach(self) -> int:
        """The descriptor, now the caller's to close; this object lets go of it."""
        fd = self.fileno()
        self._fd = -1
        return fd

    def close(self) -> None:
        """Closes the descriptor; idempotent."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> "ReceivedFD":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            warnings.warn("unclosed received descriptor %d" % self._fd, ResourceWarning, source=self)
            try:
                self.close()
            except OSError:
                pass

    def __repr__(self) -> str:
        return "ReceivedFD(%s)" % ("closed" if self._fd < 0 else self._fd)


# -- sending


def _collect(value: Any, sources: List[FD]) -> Any:
    """`value` with each FD (or ReceivedFD) replaced by `{"$fd": I}`, the
    markers appended to `sources`; `value` itself when it holds none."""
    if isinstance(value, ReceivedFD):
        value = FD(value)
    if isinstance(value, FD):
        sources.append(value)
        return {"$fd": len(sources) - 1}
    if isinstance(value, dict):
        out = None
        for key, item in value.items():
            new = _collect(item, sources)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, (list, tuple)):
        items = [_collect(item, sources) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def _duplicate(sources: List[FD]) -> List[int]:
    """A close-on-exec duplicate of each source; all or none."""
    fds: List[int] = []
    try:
        for marker in sources:
            try:
                fds.append(os.dup(marker.fileno()))
            except (OSError, ValueError) as e:
                raise ValueError("%r is not an open descriptor: %s" % (marker, e)) from None
    except BaseException:
        close_all(fds)
        raise
    return fds


def close_all(fds: List[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class Outgoing(NamedTuple):
    """A frame ready to write and the descriptors (duplicates, ours to close) it carries."""
    data: bytes
    fds: List[int]


def prepare_frame(message: dict, max_frame: Optional[int], max_fds: Optional[int],
             enabled: bool) -> Outgoing:
    """Encodes `message`, replacing the FD markers in its `params` (a
    request) or `result` (a response) and declaring `fds`. Raises before
    anything is written: MediatorError `fds_not_supported` when this
    connection cannot send descriptors, `bad_request` over `max_fds`,
    `frame_too_large`; TypeError or ValueError for what is not JSON or
    not an open descriptor."""
    what = kind(message)
    member = "params" if what == "request" else "result" if what == "response" else None
    sources: List[FD] = []
    try:
        if member is not None and member in message:
            value = _collect(message[member], sources)
            if sources:
                if not enabled:
                    raise MediatorError("fds_not_supported", "descriptors need connect(..., fds=True)",
                                        {"delivered": False})
                if max_fds is None:
                    raise MediatorError("fds_not_supported",
                                        "the daemon does not take descriptors (its hello gave no max_fds)",
                                        {"delivered": False})
                if len(sources) > max_fds:
                    raise MediatorError("bad_request", "%d descriptors in one message; the limit is %d"
                                        % (len(sources), max_fds), {"delivered": False, "max_fds": max_fds})
                message = dict(message)
                message[member] = value
                message["fds"] = len(sources)
        data = encode(message)
        check_size(data, max_frame)
        return Outgoing(data, _duplicate(sources))
    finally:
        for marker in sources:
            if marker.close:
                _close_source(marker.source)


def _walk(value: Any):
    """Every FD and ReceivedFD inside `value` (dicts, lists, tuples)."""
    if isinstance(value, (FD, ReceivedFD)):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)


def discard(value: Any) -> None:
    """For a result that will not be sent: closes the sources of its
    `FD(..., close=True)` markers, which were handed to the package."""
    for marker in _walk(value):
        if isinstance(marker, FD) and marker.close:
            _close_source(marker.source)


def close_received(value: Any) -> None:
    """Closes every ReceivedFD inside `value` that is still open."""
    for handle in _walk(value):
        if isinstance(handle, ReceivedFD):
            handle.close()


def check_json(message: dict) -> None:
    """Raises TypeError or ValueError unless `message` is JSON once its
    FD markers are replaced (what `prepare_frame` will send)."""
    json.dumps(message, allow_nan=False, default=_marker_placeholder)


def _marker_placeholder(value: Any) -> Any:
    if isinstance(value, (FD, ReceivedFD)):
        return None
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _close_source(source: Any) -> None:
    try:
        if isinstance(source, int):
            os.close(source)
        else:
            source.close()
    except OSError:
        pass


def _rights(fds: List[int]) -> list:
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]


def send_first(sock: socket.socket, frame: Outgoing) -> int:
    """Writes what one sendmsg takes of `frame`, its descriptors with the
    first byte; returns the count of bytes written. The rest of the frame
    goes without descriptors."""
    if frame.fds:
        return sock.sendmsg([frame.data], _rights(frame.fds))
    return sock.send(frame.data)


def send_frame(sock: socket.socket, frame: Outgoing) -> None:
    """Writes all of `frame` on a blocking socket."""
    sent = send_first(sock, frame)
    if sent < len(frame.data):
        sock.sendall(memoryview(frame.data)[sent:])


# -- receiving


class Received(NamedTuple):
    data: bytes
    fds: List[int]
    truncated: bool  # MSG_CTRUNC: descriptors were lost


def receive(sock: socket.socket, size: int) -> Received:
    """One recvmsg: the bytes and the descriptors that came with them."""
    data, ancillary, flags, _ = sock.recvmsg(size, CONTROL_SIZE, _RECV_FLAGS)
    fds = array.array("i")
    for level, type_, payload in ancillary:
        if level == socket.SOL_SOCKET and type_ == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % _INT_SIZE])
    return Received(data, list(fds), bool(flags & socket.MSG_CTRUNC))


class _Batch(NamedTuple):
    fds: List[int]
    start: int  # stream offsets of the bytes read with them
    end: int
    truncated: bool


class Incoming(NamedTuple):
    """A message, its `{"$fd": I}` values replaced by ReceivedFD handles.
    `problem` says why its descriptors were refused (and closed): the
    message is then a protocol error, as a malformed frame."""
    message: dict
    handles: List[ReceivedFD]
    problem: Optional[str]


class MessageReader:
    """Splits what recvmsg returns into messages, each with its descriptors.

    The kernel attaches a sendmsg's descriptors to its first byte, and a
    recvmsg returns at most one set of them, after any bytes of earlier
    writes; so a message declaring `fds` owns the oldest unclaimed set
    when its first byte came with that set's read. A set no message
    claims, a message whose set is missing, short or cut (MSG_CTRUNC) are
    protocol errors; their descriptors are closed. With `accept` false
    (no `fds: true` in hello) every descriptor is refused."""

    def __init__(self, decoder: FrameDecoder, accept: bool):
        self.decoder = decoder
        self.accept = accept
        #: Sets of descriptors closed because no message claimed them.
        self.orphaned = 0
        self._batches: Deque[_Batch] = collections.deque()
        self._offset = 0

    def feed(self, received: Received) -> List[Incoming]:
        start = self._offset
        self._offset += len(received.data)
        if received.fds or received.truncated:
            self._batches.append(_Batch(received.fds, start, self._offset, received.truncated))
        incoming = [self._claim(begin, message) for begin, message in self.decoder.feed_at(received.data)]
        self._drop_orphans(self.decoder.next_line_start)
        return incoming

    def close(self) -> None:
        """Closes every descriptor not handed out; idempotent."""
        batches, self._batches = list(self._batches), collections.deque()
        for batch in batches:
            close_all(batch.fds)

    def _drop_orphans(self, before: int) -> None:
        # No message can begin in a set's read any more: nobody claims it.
        while self._batches and self._batches[0].end <= before:
            close_all(self._batches.popleft().fds)
            self.orphaned += 1

    def _claim(self, begin: int, message: dict) -> Incoming:
        self._drop_orphans(begin)
        if "fds" not in message:
            return Incoming(message, [], None)
        declared = message["fds"]
        batch = self._batches.popleft() if self._batches and self._batches[0].start <= begin else None
        fds = batch.fds if batch is not None else []
        if not self.accept:
            problem = "descriptors were not asked for (hello without fds)"
        elif isinstance(declared, bool) or not isinstance(declared, int) or declared < 1:
            problem = "fds must be a positive integer"
        elif batch is None:
            problem = "it declares %d descriptors; none arrived with it" % declared
        elif batch.truncated:
            problem = "its descriptors were cut short (MSG_CTRUNC)"
        elif len(fds) != declared:
            problem = "it declares %d descriptors; %d arrived with it" % (declared, len(fds))
        else:
            problem = None
        if problem is not None:
            close_all(fds)
            return Incoming(message, [], problem)
        handles = [ReceivedFD(fd) for fd in fds]
        what = kind(message)
        member = "params" if what == "request" else "result" if what == "response" else None
        used: List[bool] = [False] * len(handles)
        try:
            if member is None:
                raise ValueError("a message of this kind carries no descriptors")
            if member in message:
                message = dict(message)
                message[member] = _substitute(message[member], handles, used)
        except ValueError as e:
            for handle in handles:
                handle.close()
            return Incoming(message, [], str(e))
        for handle, is_used in zip(handles, used):
            if not is_used:
                handle.close()  # nothing refers to it: nobody could close it
        return Incoming(message, [h for h, u in zip(handles, used) if u], None)


def _substitute(value: Any, handles: List[ReceivedFD], used: List[bool]) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "$fd" in value:
            index = value["$fd"]
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(handles):
                raise ValueError("{\"$fd\": %r} does not name one of its %d descriptors" % (index, len(handles)))
            used[index] = True
            return handles[index]
        return {key: _substitute(item, handles, used) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item, handles, used) for item in value]
    return value


# -- sealed memfds


def memfd_from_bytes(data: bytes, name: str = "mediator") -> int:
    """A new memfd holding `data`, sealed so that nobody can change it
    (shrink, grow, write, or seal further): safe to hand to a peer that
    must not trust the sender not to change it under it. The descriptor
    is the caller's to close (or send with `FD(fd, close=True)`)."""
    fd = os.memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, F_ADD_SEALS, IMMUTABLE_SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def seals(fd: Any) -> int:
    """The seals of a memfd (F_GET_SEALS); OSError for another kind of file."""
    return fcntl.fcntl(fd if isinstance(fd, int) else fd.fileno(), F_GET_SEALS)


def read_memfd(fd: Any) -> Any:
    """The content of a sealed memfd (a descriptor or an object with
    fileno(), such as a ReceivedFD) as a read-only `mmap.mmap` (bytes-like;
    `b""` when empty, which cannot be mapped). Raises ValueError unless the
    memfd is sealed against shrinking, growing and writing: else the
    sender could change it under the reader, or shrink it and make reading
    the mapping fault (SIGBUS). The descriptor may be closed afterwards;
    the mapping stays valid until closed."""
    number = fd if isinstance(fd, int) else fd.fileno()
    try:
        present = seals(number)
    except OSError as e:
        raise ValueError("descriptor %d is not a sealable memfd: %s" % (number, e)) from None
    needed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE
    if present & needed != needed:
        raise ValueError("memfd %d is not sealed against shrink, grow and write (seals 0x%x)" % (number, present))
    size = os.fstat(number).st_size
    if size == 0:
        return b""
    return mmap.mmap(number, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)


def refusal(problem: str) -> MediatorError:
    """The error for a message whose descriptors were refused (PROTOCOL.md section 8: `bad_request`)."""
    return MediatorError("bad_request", "descriptors refused: %s" % problem)

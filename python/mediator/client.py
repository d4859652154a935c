"""The synchronous client: a socket, a reader thread, and calls matched to
their responses by id. Every method may be called from any thread."""
import asyncio
import logging
import queue
import socket as _socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional

from .errors import DISCONNECTED, UNREACHABLE, MediatorError
from .fds import (KERNEL_MAX_FDS, Incoming, MessageReader, close_all, close_received, prepare_frame, receive, refusal,
                  send_frame)
from .framing import MAX_FRAME, FrameDecoder, kind, local_deadline, timeout_ms
from .paths import socket_path
from .tracing import TraceContext, outgoing

DAEMON = "mediator"
#: The client's logger when it is given none (`logger=`).
log = logging.getLogger("mediator.client")
#: Why a connection ended when the daemon closed it (end of file).
LOST = "the daemon closed the connection"
INITIAL_BACKOFF = 0.1
MAX_BACKOFF = 5.0
#: The daemon is about to close every connection; a daemon will listen again (docs/protocol.md).
RESTARTING = "mediator.restarting"
#: The daemon kept the connection but lost its registrations and subscriptions.
REREGISTER = "mediator.reregister"
#: After `mediator.restarting`: how often to try to connect again, and for
#: how long, before the usual backoff.
RESTART_RETRY_INTERVAL = 0.05
RESTART_RETRY_WINDOW = 10.0


class Backoff:
    """The pauses between tries to connect again: INITIAL_BACKOFF doubling
    to MAX_BACKOFF; after `restarting()` (the daemon said it comes back),
    RESTART_RETRY_INTERVAL each, for RESTART_RETRY_WINDOW, first."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._delay = INITIAL_BACKOFF
        self._fast_until: Optional[float] = None

    def reset(self) -> None:
        """Connected: the next loss starts the schedule again."""
        self._delay = INITIAL_BACKOFF
        self._fast_until = None

    def restarting(self) -> None:
        self._fast_until = self._clock() + RESTART_RETRY_WINDOW

    def next(self) -> float:
        if self._fast_until is not None and self._clock() < self._fast_until:
            return RESTART_RETRY_INTERVAL
        delay = self._delay
        self._delay = min(delay * 2, MAX_BACKOFF)
        return delay


class Event(NamedTuple):
    name: str
    data: Any


def pattern_matches(pattern: str, name: str) -> bool:
    """An exact name, `prefix.*` (anything below the prefix) or `*`."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return name.startswith(pattern[:-1])
    return pattern == name


def request_message(target: str, action: str, params: Any, id: Optional[int] = None,
                    timeout: Optional[float] = None, more: bool = False,
                    trace: Optional[TraceContext] = None) -> dict:
    message = {"target": target, "action": action, "params": {} if params is None else params}
    if trace is not None:
        message.update(trace.members())
    if id is not None:
        message["id"] = id
    ms = timeout_ms(timeout)
    if ms is not None:
        message["timeout_ms"] = ms
    if more:
        message["more"] = True
    return message


def hello_params(name: Optional[str], fds: bool) -> Dict[str, Any]:
    params: Dict[str, Any] = {"protocol": 1}
    if name is not None:
        params["name"] = name
    if fds:
        params["fds"] = True
    return params


def read_hello(hello: Any, link: Any) -> Optional[int]:
    """Sets the link's limits from the `hello` result; returns the connection's number."""
    if not isinstance(hello, dict):
        return None
    if isinstance(hello.get("max_frame"), int):
        link.peer_max_frame = hello["max_frame"]
    max_fds = hello.get("max_fds")
    if link.fds and isinstance(max_fds, int) and not isinstance(max_fds, bool) and max_fds >= 1:
        link.max_fds = min(max_fds, KERNEL_MAX_FDS)  # the kernel takes no more with one sendmsg
    connection = hello.get("connection")
    return connection if isinstance(connection, int) else None


def drop_unread(responses: Any) -> None:
    """Closes the descriptors of the responses a caller gave up before
    reading (a queue.Queue or an asyncio.Queue): nobody else could."""
    while True:
        try:
            kind_, value = responses.get_nowait()
        except (queue.Empty, asyncio.QueueEmpty):
            return
        if kind_ != "error":
            close_received(value)


def admitted(link: Any, incoming: Incoming) -> Optional[dict]:
    """What a link dispatches of `incoming`: the message; or, when its
    descriptors were refused (closed already), nothing, as for a malformed
    frame, except that a call it answers gets `bad_request` in its place
    and a request it makes is answered `bad_request` here, rather than
    either waiting for its timeout."""
    message = incoming.message
    if incoming.problem is None:
        return message
    link._reader.decoder.dropped += 1
    error = refusal(incoming.problem)
    what = kind(message)
    if what == "response":
        return {"id": message.get("id"), "error": error.to_wire()}
    if what == "request" and link.hooks is not None and message.get("id") is not None:
        try:
            link.send({"id": message["id"], "error": error.to_wire()})
        except MediatorError:
            pass
    return None


def log_lost(logger: logging.Logger, path: str, link: Any, reconnect: bool) -> None:
    """Logs a connection lost (not closed by us). Without reconnect the
    caller sees it as errors: only worth a warning when the client retries."""
    logger.log(logging.WARNING if reconnect else logging.INFO, "lost the connection to %s: %s%s", path,
               link.closed.message if link.closed else "", "; reconnecting" if reconnect else "")


class Hooks(NamedTuple):
    """What a service does with the requests and control events it receives
    (called on the reader thread; must not block)."""
    request: Callable[[dict], None]
    cancel: Callable[[Any], None]
    stop: Callable[[], None]
    closed: Callable[[], None]
    #: `mediator.reregister`: register the target again on this connection.
    reregister: Optional[Callable[[], None]] = None


def control_event(link: Any, name: str, data: Any) -> bool:
    """Acts on the daemon's control events for `link` (sync or asyncio);
    True when the event goes no further than that (not to subscribers)."""
    if name == "mediator.cancel":
        if link.hooks is not None and isinstance(data, dict) and "id" in data:
            link.hooks.cancel(data["id"])
        return True
    if name == "mediator.stop" and link.hooks is not None:
        link.hooks.stop()
    elif name == RESTARTING:
        link.restarting = True
    elif name == REREGISTER:
        # The daemon that had this connection's calls is gone: their answers never come.
        link.fail_in_flight(MediatorError("component_unavailable", "mediatord restarted and lost the call (mediator.reregister)"))
        if link.hooks is not None and link.hooks.reregister is not None:
            link.hooks.reregister()
    return False


def subscribe_again(link: Any, patterns: List[str]) -> None:
    """After `mediator.reregister`: the patterns again, oneway, so that the
    reader (which would read the answer) never waits for it."""
    if patterns and link is not None and link.closed is None:
        try:
            link.send(request_message(DAEMON, "subscribe", {"events": patterns}))
        except MediatorError:
            pass  # the connection is going: the reconnect subscribes


class _Link:
    """One connection: the writer, the table of calls in flight, the reader thread."""

    def __init__(self, sock: _socket.socket, on_event: Callable[[Event], None],
                 on_closed: Callable[["_Link"], None], max_frame: int, fds: bool = False):
        self.sock = sock
        self.peer_max_frame: Optional[int] = None
        #: Whether this connection said `fds: true`, and the daemon's `max_fds` (None: it takes none).
        self.fds = fds
        self.max_fds: Optional[int] = None
        self.hooks: Optional[Hooks] = None
        #: The daemon said `mediator.restarting`: reconnect quickly.
        self.restarting = False
        self._on_event = on_event
        self._on_closed = on_closed
        self._reader = MessageReader(FrameDecoder(max_frame), accept=fds)
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._pending: Dict[int, "queue.Queue"] = {}
        self._next_id = 1
        self.closed: Optional[MediatorError] = None
        self._thread = threading.Thread(target=self._read, name="mediator-reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def send(self, message: dict) -> None:
        """Writes `message`, with the descriptors its FD markers name (fds.py)."""
        frame = prepare_frame(message, self.peer_max_frame, self.max_fds, self.fds)
        try:
            with self._write_lock:
                if self.closed is not None:
                    raise self.closed
                try:
                    send_frame(self.sock, frame)
                except OSError as e:
                    error = MediatorError(DISCONNECTED, "cannot send: %s" % e)
                    self.close(error)
                    raise error from None
        finally:
            close_all(frame.fds)  # the peer has its own copies now

    def start_call(self, target: str, action: str, params: Any, timeout: Optional[float],
                   more: bool = False, trace: Optional[TraceContext] = None):
        """Sends a request; returns its id and the queue its responses arrive on."""
        responses: "queue.Queue" = queue.Queue()
        with self._lock:
            if self.closed is not None:
                raise self.closed
            call_id = self._next_id
            self._next_id += 1
            self._pending[call_id] = responses
        try:
            self.send(request_message(target, action, params, call_id, timeout, more, trace))
        except BaseException:
            self.forget(call_id)
            raise
        return call_id, responses

    def wait(self, call_id: int, responses: "queue.Queue", timeout: Optional[float]):
        """The next response of a call: ("partial" | "final", value); raises
        its error, or `timeout` after the call's timeout plus a margin."""
        try:
            kind_, value = responses.get(timeout=local_deadline(timeout))
        except queue.Empty:
            self.cancel(call_id)
            raise MediatorError("timeout", "no response within %.3g s" % local_deadline(timeout)) from None
        if kind_ == "error":
            raise value
        return kind_, value

    def forget(self, call_id: int) -> bool:
        with self._lock:
            return self._pending.pop(call_id, None) is not None

    def cancel(self, call_id: int) -> None:
        """Stops waiting for `call_id` and tells the daemon (oneway)."""
        if self.forget(call_id):
            try:
                self.send(request_message(DAEMON, "cancel", {"id": call_id}))
            except MediatorError:
                pass

    def fail_in_flight(self, error: MediatorError) -> None:
        """Fails every call in flight with `error`; the connection stays."""
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for responses in pending:
            responses.put(("error", error))

    def close(self, error: MediatorError) -> None:
        """Fails every call in flight with `error`; idempotent."""
        with self._lock:
            if self.closed is not None:
                return
            self.closed = error
            pending, self._pending = list(self._pending.values()), {}
        try:
            self.sock.shutdown(_socket.SHUT_RDWR)  # wakes the reader
        except OSError:
            pass
        for responses in pending:
            responses.put(("error", error))
        if self.hooks is not None:
            self.hooks.closed()
        self._on_closed(self)

    def join(self, timeout: float) -> None:
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _read(self) -> None:
        reason = LOST
        try:
            while True:
                try:
                    received = receive(self.sock, 65536)
                except OSError as e:
                    reason = "the connection failed: %s" % e
                    break
                if not received.data:
                    close_all(received.fds)
                    break
                for incoming in self._reader.feed(received):
                    self._dispatch(incoming)
        finally:
            self._reader.close()
            self.close(MediatorError(DISCONNECTED, reason))  # no-op when we closed it first
            self.sock.close()

    def _dispatch(self, incoming: Incoming) -> None:
        message = admitted(self, incoming)
        if message is None:
            return
        what = kind(message)
        if what == "response":
            call_id = message.get("id")
            responses = None
            if isinstance(call_id, int) and not isinstance(call_id, bool):  # else "id": null or not ours
                continues = message.get("continues") is True and "error" not in message
                with self._lock:
                    responses = self._pending.get(call_id)
                    if responses is not None and not continues:
                        del self._pending[call_id]
            if responses is None:
                for handle in incoming.handles:  # late, cancelled, or unknown
                    handle.close()
                return
            if "error" in message:
                responses.put(("error", MediatorError.from_wire(message["error"])))
            else:
                responses.put(("partial" if continues else "final", message.get("result")))
        elif what == "request":
            if self.hooks is not None:
                self.hooks.request(message)
            else:
                for handle in incoming.handles:
                    handle.close()
        elif what == "event":
            name, data = message.get("event"), message.get("data")
            if not isinstance(name, str):
                return
            if not control_event(self, name, data):
                self._on_event(Event(name, data))


class Ended(NamedTuple):
    """The last item of a subscription's queue: why it ended (None: closed by us)."""
    error: Optional[MediatorError]


class SubscriptionBase:
    """What the sync and asyncio subscriptions share: the queue of matching
    events, ended by an `Ended` item (put back, so every later read sees it)."""

    def __init__(self, client: Any, patterns: List[str], events: Any):
        self.patterns = list(patterns)
        self._client = client
        self._queue = events  # a queue.Queue or an asyncio.Queue: put_nowait, get_nowait, empty
        self.closed = False
        #: Why it ended when the connection was lost (`disconnected`), else None.
        self.error: Optional[MediatorError] = None

    def _finish(self, item: Any) -> Optional[Event]:
        """An event as it is; the end as None, or its error raised."""
        if isinstance(item, Ended):
            self.closed = True
            self.error = self.error or item.error
            self._queue.put_nowait(item)
        elif item is not None:
            return item
        if self.error is not None:
            raise self.error
        return None

    def close(self) -> None:
        """Stops the subscription (it ends normally); the daemon stops
        sending patterns that no other subscription of this client uses."""
        if not self.closed:
            self.closed = True
            self._client._unsubscribe(self)
            self._end()

    def _end(self, error: Optional[MediatorError] = None) -> None:
        self._queue.put_nowait(Ended(error))

    def _deliver(self, event: Event) -> None:
        if any(pattern_matches(p, event.name) for p in self.patterns):
            self._queue.put_nowait(event)


class Subscription(SubscriptionBase):
    """The events matching `patterns`, as an iterator. It ends normally when
    closed or when the client closes; when the connection is lost for good
    (no `reconnect`) it raises MediatorError `disconnected` saying why."""

    def __init__(self, client: "Client", patterns: List[str]):
        super().__init__(client, patterns, queue.Queue())

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> Event:
        if self.closed and self._queue.empty():
            self._finish(None)
            raise StopIteration
        event = self._finish(self._queue.get())
        if event is None:
            raise StopIteration
        return event

    def get(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, or None when none came within `timeout` or the
        subscription ended normally (see `closed`); raises `disconnected`
        when the connection was lost."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        return self._finish(item)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Stream:
    """The responses to a `more` call: each partial result, then the final
    one. An error response raises. Closing it early cancels the call."""

    def __init__(self, link: _Link, call_id: int, responses: "queue.Queue", timeout: Optional[float]):
        self._link, self._id, self._responses, self._timeout = link, call_id, responses, timeout
        self._done = False

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            kind_, value = self._link.wait(self._id, self._responses, self._timeout)
        except BaseException:
            self._done = True
            raise
        if kind_ == "final":
            self._done = True
        return value

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._link.cancel(self._id)
            drop_unread(self._responses)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Client:
    """A connection to mediatord. Use `mediator.connect()`.

    `timeout` (seconds) is the default of every call that gives none, and
    bounds connecting. With `reconnect=True`, a lost connection is opened
    again (backoff 0.1 s doubling to 5 s; every 0.05 s for 10 s first when
    the daemon said `mediator.restarting`) and subscriptions are renewed
    (also on the same connection after `mediator.reregister`);
    calls in flight when it was lost still fail with `disconnected`.
    It logs through `logger`, else the logger "mediator.client".
    """

    def __init__(self, socket: Optional[str] = None, name: Optional[str] = None,
                 timeout: Optional[float] = None, reconnect: bool = False, user: bool = False,
                 max_frame: int = MAX_FRAME, fds: bool = False, _hooks: Optional[Hooks] = None,
                 logger: Optional[logging.Logger] = None):
        self.log = logger or log
        self.socket_path = socket_path(socket, user=user)
        self.name = name
        #: Whether `hello` says `fds: true`: descriptors may be sent and received (fds.py).
        self.fds = fds
        self.timeout = timeout
        self.reconnect = reconnect
        self.max_frame = max_frame
        self.connection_id: Optional[int] = None
        self._hooks = _hooks
        self._lock = threading.Lock()  # guards _link, _subscriptions, _closed; held briefly
        self._connect_lock = threading.Lock()  # one reconnection at a time
        self._link: Optional[_Link] = None
        self._subscriptions: List[Subscription] = []
        self._closed = False
        self._retrying = False
        self._wake = threading.Event()
        self._ended = threading.Event()  # closed for good: by close(), or lost without reconnect
        self._end_reason: Optional[MediatorError] = None
        self._link = self._open()

    # -- connecting

    def _open(self) -> _Link:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout or 10.0)
            sock.connect(self.socket_path)
            sock.settimeout(None)
        except OSError as e:
            sock.close()
            raise MediatorError(UNREACHABLE, "cannot connect to %s: %s" % (self.socket_path, e)) from None
        link = _Link(sock, self._deliver_event, self._link_closed, self.max_frame, self.fds)
        link.hooks = self._hooks
        link.start()
        params = hello_params(self.name, self.fds)
        try:
            hello = self._call_on(link, DAEMON, "hello", params, self.timeout or 10.0)
        except MediatorError as e:
            link.close(MediatorError(DISCONNECTED, "closed after a failed hello"))
            if e.code == DISCONNECTED:
                raise MediatorError(UNREACHABLE, "cannot connect to %s: the daemon closed the connection"
                                    % self.socket_path) from None
            raise
        self.connection_id = read_hello(hello, link)
        self.log.debug("connected to %s as connection %s", self.socket_path, self.connection_id)
        return link

    def _current(self) -> _Link:
        """The live connection; with `reconnect`, opens a new one if needed."""
        link = self._link
        if not self._closed and link is not None and link.closed is None:
            return link
        with self._connect_lock:
            link = self._link
            if self._closed:
                raise MediatorError(DISCONNECTED, "the client is closed")
            if link is not None and link.closed is None:
                return link
            if not self.reconnect:
                raise link.closed if link is not None and link.closed else MediatorError(
                    DISCONNECTED, "the connection closed")
            link = self._open()
            with self._lock:
                closed = self._closed
                if not closed:
                    self._link = link
            if closed:
                link.close(MediatorError(DISCONNECTED, "the client is closed"))
                raise MediatorError(DISCONNECTED, "the client is closed")
            self._renew_subscriptions(link)
            return link

    def _patterns(self) -> List[str]:
        with self._lock:
            return sorted({p for s in self._subscriptions for p in s.patterns})

    def _renew_subscriptions(self, link: _Link) -> None:
        patterns = self._patterns()
        if patterns:
            self._call_on(link, DAEMON, "subscribe", {"events": patterns}, self.timeout)

    def _link_closed(self, link: _Link) -> None:
        with self._lock:
            if link is not self._link or self._closed:
                return
            log_lost(self.log, self.socket_path, link, self.reconnect)
            if not self.reconnect:
                subscriptions, self._subscriptions = self._subscriptions, []
                self._end_reason = link.closed
                self._ended.set()
                for subscription in subscriptions:
                    subscription._end(link.closed)
                return
            if self._retrying:
                return
            self._retrying = True
        threading.Thread(target=self._retry, name="mediator-reconnect", daemon=True).start()

    def _retry(self) -> None:
        """Reopens the connection in the background, so that events flow again."""
        backoff = Backoff()
        link = self._link
        if link is not None and link.restarting:
            backoff.restarting()
        delay = backoff.next()
        try:
            while True:
                if self._wake.wait(delay):
                    return  # closed
                try:
                    self._current()
                    self.log.info("reconnected to %s", self.socket_path)
                    return
                except MediatorError as e:
                    if self._closed:
                        return
                    delay = backoff.next()
                    self.log.debug("reconnecting to %s failed (next try in %.3g s): %s", self.socket_path, delay, e)
        finally:
            with self._lock:
                self._retrying = False

    # -- calls

    def _call_on(self, link: _Link, target: str, action: str, params: Any, timeout: Optional[float],
                 trace: Optional[TraceContext] = None) -> Any:
        call_id, responses = link.start_call(target, action, params, timeout, trace=trace)
        return link.wait(call_id, responses, timeout)[1]

    def call(self, target: str, action: str, params: Any = None, timeout: Optional[float] = None,
             trace: Optional[TraceContext] = None) -> Any:
        """Calls `action` of `target`; returns the result or raises MediatorError.
        The request carries `trace`, else the current trace context
        (`mediator.tracing`), if any."""
        timeout = self.timeout if timeout is None else timeout
        return self._call_on(self._current(), target, action, params, timeout, outgoing(trace))

    def stream(self, target: str, action: str, params: Any = None,
               timeout: Optional[float] = None, trace: Optional[TraceContext] = None) -> Iterator[Any]:
        """Calls with `more`: iterates over the partial results, then the final one.
        The timeout applies to each response in turn."""
        timeout = self.timeout if timeout is None else timeout
        link = self._current()
        call_id, responses = link.start_call(target, action, params, timeout, more=True, trace=outgoing(trace))
        return Stream(link, call_id, responses, timeout)

    def send(self, target: str, action: str, params: Any = None, trace: Optional[TraceContext] = None) -> None:
        """A oneway request: no id, and nothing comes back."""
        self._current().send(request_message(target, action, params, trace=outgoing(trace)))

    def open(self, url: str, timeout: Optional[float] = None) -> Any:
        """`mediator/open`: the result of the call the URL routes to."""
        return self.call(DAEMON, "open", {"url": url}, timeout)

    def publish(self, event: str, data: Any = None) -> int:
        """`mediator/publish`; returns how many connections got the event."""
        params: Dict[str, Any] = {"event": event}
        if data is not None:
            params["data"] = data
        result = self.call(DAEMON, "publish", params)
        delivered = result.get("delivered") if isinstance(result, dict) else None
        return delivered if isinstance(delivered, int) else 0

    def ping(self) -> None:
        self.call(DAEMON, "ping")

    def describe(self, target: str) -> Any:
        return self.call(DAEMON, "describe", {"target": target})

    # -- events

    def subscribe(self, patterns: List[str]) -> Subscription:
        """`mediator/subscribe`; returns the matching events as they arrive."""
        if isinstance(patterns, str):
            patterns = [patterns]
        subscription = Subscription(self, patterns)
        link = self._current()
        with self._lock:
            self._subscriptions.append(subscription)
        try:
            self._call_on(link, DAEMON, "subscribe", {"events": list(patterns)}, self.timeout)
        except BaseException:
            with self._lock:
                if subscription in self._subscriptions:
                    self._subscriptions.remove(subscription)
            raise
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription not in self._subscriptions:
                return
            self._subscriptions.remove(subscription)
            kept = {p for s in self._subscriptions for p in s.patterns}
            link = self._link
        orphans = [p for p in dict.fromkeys(subscription.patterns) if p not in kept]
        if orphans and link is not None and link.closed is None:
            try:
                link.send(request_message(DAEMON, "unsubscribe", {"events": orphans}))
            except MediatorError:
                pass

    def _deliver_event(self, event: Event) -> None:
        if event.name == REREGISTER:
            subscribe_again(self._link, self._patterns())
        with self._lock:
            subscriptions = list(self._subscriptions)
        for subscription in subscriptions:
            subscription._deliver(event)

    # -- closing

    def close(self) -> None:
        """Closes the connection; calls in flight fail with `disconnected`. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake.set()
            link = self._link
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription._end()
        if link is not None:
            link.close(MediatorError(DISCONNECTED, "the client is closed"))
            link.join(2.0)
        self._ended.set()

    def wait_until_closed(self, timeout: Optional[float] = None) -> Optional[MediatorError]:
        """Blocks until the client is closed for good and returns why: None
        when `close()` closed it, MediatorError `disconnected` saying why
        when the connection was lost (without `reconnect`; with it, only
        `close()` ends the client). Also returns None after `timeout`
        seconds with the client still open (see `is_connected`)."""
        self._ended.wait(timeout)
        return self._end_reason

    @property
    def is_connected(self) -> bool:
        link = self._link
        return not self._closed and link is not None and link.closed is None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(socket: Optional[str] = None, name: Optional[str] = None, timeout: Optional[float] = None,
            reconnect: bool = False, user: bool = False, fds: bool = False,
            logger: Optional[logging.Logger] = None) -> Client:
    """Connects to mediatord and says `hello` (with `name` when given, and
    `fds: true` with `fds=True`: see `mediator.FD`). Raises MediatorError
    `unreachable` when no daemon answers at the socket. The client logs
    through `logger`, else the logger "mediator.client"."""
    return Client(socket=socket, name=name, timeout=timeout, reconnect=reconnect, user=user, fds=fds, logger=logger)

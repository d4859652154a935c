"""The asyncio flavour: the same names as the sync API, over
`asyncio.open_unix_connection`.

    client = await mediator.aio.connect()
    result = await client.call("Notes", "add", {"text": "hi"})
    async for partial in client.stream("Notes", "watch"): ...
    sub = await client.subscribe(["user.*"])
    async for event in sub: ...

    svc = mediator.aio.Service("Notes")
    @svc.action("add")
    async def add(params, ctx): return {"id": 1}
    await svc.run()

Service handlers may be `async def` (cancelled as a task on
`mediator.cancel`) or plain functions (run in the default executor; they see
`ctx.cancelled`). `ctx.client` is the asyncio client.
"""
import asyncio
import collections
import contextvars
import functools
import inspect
import logging
import socket as _socket
import threading
from typing import Any, AsyncIterator, Callable, Deque, Dict, List, Optional, Tuple

from .client import (DAEMON, LOST, REREGISTER, Backoff, Event, Hooks, SubscriptionBase, admitted, control_event,
                     drop_unread, hello_params, log_lost, read_hello, request_message, subscribe_again)
from .errors import DISCONNECTED, UNREACHABLE, MediatorError, error_from_exception
from .fds import Incoming, MessageReader, Outgoing, close_all, prepare_frame, receive, send_first
from .framing import MAX_FRAME, FrameDecoder, kind, local_deadline
from .paths import socket_path
from .service import (REGISTER_TIMEOUT, SHUTDOWN_GRACE, SHUTDOWN_SIGNALS, STOP_TIMEOUT, CallContext, Responder,
                      ServiceBase, request_key)
from .tracing import TraceContext, outgoing, use

#: The loggers of the asyncio client and service when given none (`logger=`).
log = logging.getLogger("mediator.aio.client")
service_log = logging.getLogger("mediator.aio.service")

__all__ = ["CallContext", "Client", "Event", "MediatorError", "Service", "Subscription", "connect", "serve"]


#: Above this many bytes waiting to be written, `drain()` waits until the
#: socket took all but LOW_WATER of them (asyncio's own stream defaults).
HIGH_WATER = 64 * 1024
LOW_WATER = HIGH_WATER // 4
#: After a graceful shutdown's grace, how long the cancelled handlers get to
#: unwind before the connection closes.
CANCELLED_WAIT = 1.0


class _Link:
    """One connection: the writer, the calls in flight by id, the reader.

    It drives its non-blocking socket itself (add_reader/add_writer) rather
    than through asyncio streams, which cannot pass descriptors: each read
    is a recvmsg, and a frame's descriptors go with its first byte."""

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
        self.closed: Optional[MediatorError] = None
        self._on_event, self._on_closed = on_event, on_closed
        self._reader = MessageReader(FrameDecoder(max_frame), accept=fds)
        self._pending: Dict[int, asyncio.Queue] = {}
        self._next_id = 1
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._fileno = sock.fileno()
        self._outbox: Deque[List[Any]] = collections.deque()  # [the frame's unsent bytes, its descriptors]
        self._buffered = 0
        self._writing = False  # waiting for the socket to be writable
        self._unsent = False   # closed with bytes not written
        self._waiters: List[Tuple[int, asyncio.Future]] = []  # (at most this many bytes buffered, future)
        self._loop.add_reader(self._fileno, self._on_readable)

    def send(self, message: dict) -> None:
        """Queues a frame (with the descriptors its FD markers name); safe
        from other threads (sync handlers)."""
        frame = prepare_frame(message, self.peer_max_frame, self.max_fds, self.fds)
        if self.closed is not None:
            close_all(frame.fds)
            raise self.closed
        if threading.get_ident() == self._thread:
            self._write(frame)
            return
        try:
            self._loop.call_soon_threadsafe(self._write, frame)
        except RuntimeError:  # the loop is closed
            close_all(frame.fds)
            raise MediatorError(DISCONNECTED, "the event loop is closed") from None

    def _write(self, frame: Outgoing) -> None:
        if self.closed is not None:
            close_all(frame.fds)
            return
        self._outbox.append([memoryview(frame.data), frame.fds])
        self._buffered += len(frame.data)
        if not self._writing:
            self._flush()

    def _flush(self) -> None:
        try:
            while self._outbox:
                entry = self._outbox[0]
                sent = send_first(self.sock, Outgoing(entry[0], entry[1]))
                if entry[1]:
                    close_all(entry[1])  # they went with the first byte; the peer has its own copies
                    entry[1] = []
                self._buffered -= sent
                if sent < len(entry[0]):
                    entry[0] = entry[0][sent:]
                else:
                    self._outbox.popleft()
        except (BlockingIOError, InterruptedError):
            if not self._writing:
                self._loop.add_writer(self._fileno, self._flush)
                self._writing = True
        except OSError as e:
            self.close(MediatorError(DISCONNECTED, "cannot send: %s" % e))
            return
        else:
            if self._writing:
                self._loop.remove_writer(self._fileno)
                self._writing = False
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        waiting, self._waiters = self._waiters, []
        for limit, future in waiting:
            if self.closed is not None or self._buffered <= limit:
                if not future.done():
                    future.set_result(None)
            else:
                self._waiters.append((limit, future))

    async def _buffered_at_most(self, limit: int) -> None:
        if self.closed is None and self._buffered > limit:
            future = self._loop.create_future()
            self._waiters.append((limit, future))
            await future

    async def drain(self) -> None:
        """Waits while much is still to be written (flow control)."""
        if self._buffered > HIGH_WATER:
            await self._buffered_at_most(LOW_WATER)
        if self.closed is not None and self._unsent:
            raise self.closed

    async def flushed(self, timeout: float) -> None:
        """Waits (bounded) until everything queued is written."""
        try:
            await asyncio.wait_for(self._buffered_at_most(0), timeout)
        except asyncio.TimeoutError:
            pass

    def start_call(self, target: str, action: str, params: Any, timeout: Optional[float], more: bool = False,
                   trace: Optional[TraceContext] = None):
        if self.closed is not None:
            raise self.closed
        call_id = self._next_id
        self._next_id += 1
        responses: asyncio.Queue = asyncio.Queue()
        self._pending[call_id] = responses
        try:
            self.send(request_message(target, action, params, call_id, timeout, more, trace))
        except BaseException:
            self._pending.pop(call_id, None)
            raise
        return call_id, responses

    async def wait(self, call_id: int, responses: asyncio.Queue, timeout: Optional[float]):
        try:
            kind_, value = await asyncio.wait_for(responses.get(), local_deadline(timeout))
        except asyncio.TimeoutError:
            self.cancel(call_id)
            raise MediatorError("timeout", "no response within %.3g s" % local_deadline(timeout)) from None
        except asyncio.CancelledError:
            self.cancel(call_id)
            raise
        if kind_ == "error":
            raise value
        return kind_, value

    def cancel(self, call_id: int) -> None:
        if self._pending.pop(call_id, None) is not None and self.closed is None:
            try:
                self.send(request_message(DAEMON, "cancel", {"id": call_id}))
            except MediatorError:
                pass

    def fail_in_flight(self, error: MediatorError) -> None:
        """Fails every call in flight with `error`; the connection stays."""
        pending, self._pending = list(self._pending.values()), {}
        for responses in pending:
            responses.put_nowait(("error", error))

    def close(self, error: MediatorError) -> None:
        if self.closed is not None:
            return
        self.closed = error
        self._unsent = bool(self._outbox)
        pending, self._pending = list(self._pending.values()), {}
        for responses in pending:
            responses.put_nowait(("error", error))
        self._loop.remove_reader(self._fileno)
        if self._writing:
            self._loop.remove_writer(self._fileno)
            self._writing = False
        for _, fds in self._outbox:
            close_all(fds)
        self._outbox.clear()
        self._buffered = 0
        self._wake_waiters()
        self._reader.close()
        self.sock.close()
        if self.hooks is not None:
            self.hooks.closed()
        self._on_closed(self)

    def _on_readable(self) -> None:
        try:
            received = receive(self.sock, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.close(MediatorError(DISCONNECTED, "the connection failed: %s" % e))
            return
        if not received.data:
            close_all(received.fds)
            self.close(MediatorError(DISCONNECTED, LOST))
            return
        for incoming in self._reader.feed(received):
            if self.closed is not None:  # a handler closed it: nobody takes the rest
                for handle in incoming.handles:
                    handle.close()
                continue
            try:
                self._dispatch(incoming)
            except BaseException:
                # As the reading task did: a failure here ends the connection.
                self.close(MediatorError(DISCONNECTED, "the connection closed"))
                raise

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
                responses = self._pending.get(call_id)
                if responses is not None and not continues:
                    del self._pending[call_id]
            if responses is None:
                for handle in incoming.handles:  # late, cancelled, or unknown
                    handle.close()
                return
            if "error" in message:
                responses.put_nowait(("error", MediatorError.from_wire(message["error"])))
            else:
                responses.put_nowait(("partial" if continues else "final", message.get("result")))
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


class Subscription(SubscriptionBase):
    """The matching events as an async iterator: as `mediator.Subscription`,
    it ends normally when closed or when the client closes, and raises
    MediatorError `disconnected` when the connection is lost for good."""

    def __init__(self, client: "Client", patterns: List[str]):
        super().__init__(client, patterns, asyncio.Queue())

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Event:
        if self.closed and self._queue.empty():
            self._finish(None)
            raise StopAsyncIteration
        event = self._finish(await self._queue.get())
        if event is None:
            raise StopAsyncIteration
        return event

    async def get(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, or None when none came within `timeout` or it
        ended normally; raises `disconnected` when the connection was lost."""
        try:
            item = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            return None
        return self._finish(item)


class Client:
    """An asyncio connection to mediatord; use `await mediator.aio.connect()`.
    Same behaviour as `mediator.Client`; logs through `logger`, else the
    logger "mediator.aio.client"."""

    def __init__(self, socket: Optional[str] = None, name: Optional[str] = None,
                 timeout: Optional[float] = None, reconnect: bool = False, user: bool = False,
                 max_frame: int = MAX_FRAME, fds: bool = False, _hooks: Optional[Hooks] = None,
                 logger: Optional[logging.Logger] = None):
        self.log = logger or log
        self.socket_path = socket_path(socket, user=user)
        self.name, self.timeout, self.reconnect, self.max_frame = name, timeout, reconnect, max_frame
        #: Whether `hello` says `fds: true` (see `mediator.FD`).
        self.fds = fds
        self.connection_id: Optional[int] = None
        self._hooks = _hooks
        self._link: Optional[_Link] = None
        self._subscriptions: List[Subscription] = []
        self._closed = False
        self._connect_lock = asyncio.Lock()
        self._retry_task: Optional[asyncio.Task] = None
        self._ended = asyncio.Event()  # closed for good: by close(), or lost without reconnect
        self._end_reason: Optional[MediatorError] = None

    async def _open(self) -> _Link:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, self.socket_path),
                                   self.timeout or 10.0)
        except (OSError, asyncio.TimeoutError) as e:
            sock.close()
            raise MediatorError(UNREACHABLE, "cannot connect to %s: %s" % (self.socket_path, e or "timed out")) from None
        except BaseException:
            sock.close()
            raise
        link = _Link(sock, self._deliver_event, self._link_closed, self.max_frame, self.fds)
        link.hooks = self._hooks
        params = hello_params(self.name, self.fds)
        try:
            hello = await self._call_on(link, DAEMON, "hello", params, self.timeout or 10.0)
        except MediatorError as e:
            link.close(MediatorError(DISCONNECTED, "closed after a failed hello"))
            if e.code == DISCONNECTED:
                raise MediatorError(UNREACHABLE, "cannot connect to %s: the daemon closed the connection"
                                    % self.socket_path) from None
            raise
        self.connection_id = read_hello(hello, link)
        self.log.debug("connected to %s as connection %s", self.socket_path, self.connection_id)
        return link

    async def _current(self) -> _Link:
        link = self._link
        if not self._closed and link is not None and link.closed is None:
            return link
        async with self._connect_lock:
            link = self._link
            if self._closed:
                raise MediatorError(DISCONNECTED, "the client is closed")
            if link is not None and link.closed is None:
                return link
            if link is not None and not self.reconnect:
                raise link.closed or MediatorError(DISCONNECTED, "the connection closed")
            link = await self._open()
            if self._closed:
                link.close(MediatorError(DISCONNECTED, "the client is closed"))
                raise MediatorError(DISCONNECTED, "the client is closed")
            self._link = link
            patterns = self._patterns()
            if patterns:
                await self._call_on(link, DAEMON, "subscribe", {"events": patterns}, self.timeout)
            return link

    def _link_closed(self, link: _Link) -> None:
        if link is not self._link or self._closed:
            return
        log_lost(self.log, self.socket_path, link, self.reconnect)
        if not self.reconnect:
            subscriptions, self._subscriptions = self._subscriptions, []
            self._end_reason = link.closed
            self._ended.set()
            for subscription in subscriptions:
                subscription._end(link.closed)
        elif self._retry_task is None or self._retry_task.done():
            self._retry_task = asyncio.get_running_loop().create_task(self._retry())

    async def _retry(self) -> None:
        backoff = Backoff()
        if self._link is not None and self._link.restarting:
            backoff.restarting()
        delay = backoff.next()
        while not self._closed:
            await asyncio.sleep(delay)
            try:
                await self._current()
                self.log.info("reconnected to %s", self.socket_path)
                return
            except MediatorError as e:
                delay = backoff.next()
                self.log.debug("reconnecting to %s failed (next try in %.3g s): %s", self.socket_path, delay, e)

    async def _call_on(self, link: _Link, target: str, action: str, params: Any, timeout: Optional[float],
                       trace: Optional[TraceContext] = None) -> Any:
        call_id, responses = link.start_call(target, action, params, timeout, trace=trace)
        await link.drain()
        return (await link.wait(call_id, responses, timeout))[1]

    async def call(self, target: str, action: str, params: Any = None, timeout: Optional[float] = None,
                   trace: Optional[TraceContext] = None) -> Any:
        """The request carries `trace`, else the current trace context (`mediator.tracing`), if any."""
        timeout = self.timeout if timeout is None else timeout
        return await self._call_on(await self._current(), target, action, params, timeout, outgoing(trace))

    def stream(self, target: str, action: str, params: Any = None,
               timeout: Optional[float] = None, trace: Optional[TraceContext] = None) -> AsyncIterator[Any]:
        """`async for r in client.stream(...)`: the partial results, then the final one.
        The request carries `trace`, else the trace context current when
        `stream` is called (not when it is first iterated)."""
        timeout = self.timeout if timeout is None else timeout
        # Not an async generator itself: the body of one runs at the first
        # `__anext__`, possibly after the caller's `tracing.use` block ended.
        return self._stream(target, action, params, timeout, outgoing(trace))

    async def _stream(self, target: str, action: str, params: Any, timeout: Optional[float],
                      trace: Optional[TraceContext]) -> AsyncIterator[Any]:
        link = await self._current()
        call_id, responses = link.start_call(target, action, params, timeout, more=True, trace=trace)
        done = False
        try:
            await link.drain()
            while not done:
                kind_, value = await link.wait(call_id, responses, timeout)
                done = kind_ == "final"
                yield value
        finally:
            if not done:
                link.cancel(call_id)
                drop_unread(responses)

    async def send(self, target: str, action: str, params: Any = None, trace: Optional[TraceContext] = None) -> None:
        trace = outgoing(trace)
        link = await self._current()
        link.send(request_message(target, action, params, trace=trace))
        await link.drain()

    async def open(self, url: str, timeout: Optional[float] = None) -> Any:
        return await self.call(DAEMON, "open", {"url": url}, timeout)

    async def publish(self, event: str, data: Any = None) -> int:
        params: Dict[str, Any] = {"event": event}
        if data is not None:
            params["data"] = data
        result = await self.call(DAEMON, "publish", params)
        delivered = result.get("delivered") if isinstance(result, dict) else None
        return delivered if isinstance(delivered, int) else 0

    async def ping(self) -> None:
        await self.call(DAEMON, "ping")

    async def describe(self, target: str) -> Any:
        return await self.call(DAEMON, "describe", {"target": target})

    async def subscribe(self, patterns: List[str]) -> Subscription:
        if isinstance(patterns, str):
            patterns = [patterns]
        subscription = Subscription(self, patterns)
        link = await self._current()
        self._subscriptions.append(subscription)
        try:
            await self._call_on(link, DAEMON, "subscribe", {"events": list(patterns)}, self.timeout)
        except BaseException:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
            raise
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        if subscription not in self._subscriptions:
            return
        self._subscriptions.remove(subscription)
        kept = {p for s in self._subscriptions for p in s.patterns}
        orphans = [p for p in dict.fromkeys(subscription.patterns) if p not in kept]
        link = self._link
        if orphans and link is not None and link.closed is None:
            try:
                link.send(request_message(DAEMON, "unsubscribe", {"events": orphans}))
            except MediatorError:
                pass

    def _patterns(self) -> List[str]:
        return sorted({p for s in self._subscriptions for p in s.patterns})

    def _deliver_event(self, event: Event) -> None:
        if event.name == REREGISTER:
            subscribe_again(self._link, self._patterns())
        for subscription in list(self._subscriptions):
            subscription._deliver(event)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._retry_task is not None:
            self._retry_task.cancel()
        subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription._end()
        link = self._link
        if link is not None:
            await link.flushed(2.0)  # what was sent goes out first, as a stream writer's close does
            link.close(MediatorError(DISCONNECTED, "the client is closed"))
        self._ended.set()

    async def wait_until_closed(self) -> Optional[MediatorError]:
        """Waits until the client is closed for good and returns why: None
        when `close()` closed it, MediatorError `disconnected` saying why
        when the connection was lost (without `reconnect`). Bound it with
        `asyncio.wait_for` if needed."""
        await self._ended.wait()
        return self._end_reason

    @property
    def is_connected(self) -> bool:
        link = self._link
        return not self._closed and link is not None and link.closed is None

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def connect(socket: Optional[str] = None, name: Optional[str] = None, timeout: Optional[float] = None,
                  reconnect: bool = False, user: bool = False, fds: bool = False,
                  logger: Optional[logging.Logger] = None) -> Client:
    """Connects and says `hello` (with `fds: true` with `fds=True`); raises
    MediatorError `unreachable` without a daemon. Logs through `logger`,
    else the logger "mediator.aio.client"."""
    client = Client(socket=socket, name=name, timeout=timeout, reconnect=reconnect, user=user, fds=fds,
                    logger=logger)
    await client._current()
    return client


class _Session:
    """One connection of a running asyncio service: a task per call."""

    def __init__(self, service: "Service"):
        self.service = service
        self.client: Optional[Client] = None
        self.calls: Dict[Any, Any] = {}  # daemon id -> (ctx, task)
        self.tasks: set = set()
        self.registering: Optional[asyncio.Task] = None
        self.ended = asyncio.Event()
        self.leaving = False

    @property
    def hooks(self) -> Hooks:
        return Hooks(self.on_request, self.on_cancel, self.on_stop, self.ended.set, self.on_reregister)

    def on_reregister(self) -> None:
        """`mediator.reregister` (on the loop): registers again on this connection."""
        # Kept so that it is not collected while it runs; not a call, so not in `tasks`.
        self.registering = asyncio.get_running_loop().create_task(self.register_again())

    async def register_again(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            with use(None):
                await client.call(DAEMON, "register", self.service.register_params(), timeout=REGISTER_TIMEOUT)
            self.service.log.info("registered %s again, as the daemon asked", self.service.target)
        except MediatorError as e:
            self.service._reregister_failed(client._link, e)

    def on_request(self, request: dict) -> None:
        client = self.client
        if client is None or client._link is None:
            return
        responder = Responder(request.get("id"), request.get("more") is True, client._link.send)
        ctx = CallContext(self.service.target, request, client, responder)
        task = asyncio.get_running_loop().create_task(self.execute(ctx))
        self.tasks.add(task)
        if ctx.id is not None:
            self.calls[request_key(ctx.id)] = (ctx, task)

    async def execute(self, ctx: CallContext) -> None:
        try:
            handler, args = self.service.resolve(ctx)
            # The handler's calls continue the request's trace (a task has a context of its own).
            with use(ctx.trace):
                if inspect.iscoroutinefunction(handler):
                    result = await handler(*args)
                else:
                    loop = asyncio.get_running_loop()
                    run = contextvars.copy_context().run  # an executor thread does not inherit it
                    result = await loop.run_in_executor(None, functools.partial(run, handler, *args))
                if inspect.isawaitable(result):
                    result = await result
            ctx._responder.finish(result=result)
        except asyncio.CancelledError:
            ctx._responder.finish(error=MediatorError("cancelled", "the handler was cancelled"))
        except Exception as e:
            ctx._responder.finish(error=error_from_exception(e, "%s.%s" % (ctx.target, ctx.action), self.service.log))
        finally:
            ctx.close_received()
            self.tasks.discard(asyncio.current_task())
            key = request_key(ctx.id)
            if ctx.id is not None and self.calls.get(key, (None,))[0] is ctx:
                del self.calls[key]

    def on_cancel(self, request_id: Any) -> None:
        entry = self.calls.pop(request_key(request_id), None)
        if entry is not None:
            ctx, task = entry
            ctx._responder.suppress()
            ctx.cancelled.set()
            task.cancel()

    def on_stop(self) -> None:
        self.leaving = True
        self.ended.set()

    async def drain(self, timeout: float) -> None:
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout)

    def abandon(self) -> List[asyncio.Task]:
        """Cancels the calls still running (their answers are dropped); returns their tasks."""
        for ctx, task in list(self.calls.values()):
            ctx._responder.suppress()
            ctx.cancelled.set()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        self.calls.clear()
        return tasks


class Service(ServiceBase):
    """`mediator.Service` for asyncio: `await svc.run(...)`. Logs through
    `logger`, else the logger "mediator.aio.service"."""

    default_log = service_log

    def __init__(self, target: str, description: Optional[str] = None, mode: str = "exclusive",
                 actions: Optional[List[Any]] = None, logger: Optional[logging.Logger] = None):
        super().__init__(target, description, mode, actions, logger)
        self.stop_timeout = STOP_TIMEOUT
        self._stopping = False
        self._grace: Optional[float] = None  # set by graceful_shutdown()
        self._session: Optional[_Session] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._wake: Optional[asyncio.Event] = None
        self._loop_thread: Optional[int] = None
        self._finished: Optional[asyncio.Event] = None  # set when run() returns

    def stop(self) -> None:
        """Makes `run()` return: it unregisters the target, lets the calls
        in flight finish (bounded by `stop_timeout`), cancels the rest and
        closes. Safe from any thread; does not wait."""
        self._stopping = True
        loop, session = self._loop, self._session
        if loop is not None:
            def wake() -> None:
                if session is not None:
                    session.ended.set()
                if self._wake is not None:
                    self._wake.set()
            if threading.get_ident() != self._loop_thread:
                loop.call_soon_threadsafe(wake)
            else:
                wake()

    async def graceful_shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        """Unregisters the target (the daemon routes new calls elsewhere),
        lets the calls in flight finish within `grace` seconds, cancels
        those still running, closes; returns once `run()` has returned.
        Call it from the loop running `run()` (from another thread, use
        `stop()`); not from a handler of this service, which it would wait
        for. Cancelling the task running `run()` instead leaves at once."""
        finished = self._finished
        self._grace = grace
        self.stop()
        if finished is not None and self._loop is asyncio.get_running_loop():
            await finished.wait()

    async def _leave(self, session: _Session, client: Client) -> None:
        """The end of `run()` on a stop: unregister (unless the daemon asked
        us to leave), let the calls in flight finish, cancel the rest, close."""
        grace = self.stop_timeout if self._grace is None else self._grace
        self._log_leaving(session.leaving, grace, len(session.tasks))
        try:
            if not session.leaving:
                try:
                    with use(None):
                        await client.call(DAEMON, "unregister", {"target": self.target}, timeout=REGISTER_TIMEOUT)
                except MediatorError:
                    pass  # the connection is going anyway: closing it unregisters too
            await session.drain(grace)
            self._log_cut(len(session.tasks), grace)
            cancelled = session.abandon()
            if cancelled:  # let them see their CancelledError before the connection goes (bounded)
                await asyncio.wait(cancelled, timeout=CANCELLED_WAIT)
        except BaseException:  # cancelled while leaving: leave at once
            session.abandon()
            await asyncio.shield(client.close())
            raise
        await client.close()

    async def _pause(self, delay: float) -> None:
        try:
            await asyncio.wait_for(self._wake.wait(), delay)
        except asyncio.TimeoutError:
            pass

    async def run(self, socket: Optional[str] = None, name: Optional[str] = None, reconnect: bool = True,
                  user: bool = False, on_registered: Optional[Callable[[], Any]] = None, fds: bool = False) -> None:
        """As `mediator.Service.run` (`fds` included); `on_registered` may be a coroutine function."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._finished = asyncio.Event()
        self._stopping = False
        self._grace = None
        registered_once = False
        backoff = Backoff()
        try:
            while not self._stopping:
                session = _Session(self)
                self._session = session
                client = Client(socket=socket, name=name, user=user, fds=fds, _hooks=session.hooks, logger=self.log)
                session.client = client
                try:
                    await client._current()
                    with use(None):  # as hello and cancel: the library's own calls carry no trace
                        await client.call(DAEMON, "register", self.register_params(), timeout=REGISTER_TIMEOUT)
                except MediatorError as e:
                    await client.close()
                    if self._stopping:
                        break
                    if not registered_once or not reconnect:
                        raise
                    delay = backoff.next()
                    self._log_lost(delay, e)
                    await self._pause(delay)
                    continue
                registered_once = True
                backoff.reset()
                self.log.info("registered %s at %s", self.target, client.socket_path)
                if self._stopping:
                    session.ended.set()
                elif on_registered is not None:
                    outcome = on_registered()
                    if inspect.isawaitable(outcome):
                        await outcome
                try:
                    await session.ended.wait()
                except BaseException:  # the task running run() was cancelled
                    session.abandon()
                    await asyncio.shield(client.close())
                    raise
                if session.leaving or self._stopping:
                    await self._leave(session, client)
                    break
                session.abandon()
                await client.close()
                if not reconnect:
                    raise MediatorError(DISCONNECTED, "the connection to the daemon closed")
                if client._link is not None and client._link.restarting:
                    backoff.restarting()
                delay = backoff.next()
                self._log_lost(delay)
                await self._pause(delay)
        finally:
            self._session = None
            self._loop = None
            self._finished.set()


async def serve(service: Service, *, signals: bool = True, grace: float = SHUTDOWN_GRACE, **run_kwargs: Any) -> None:
    """Awaits `service.run(**run_kwargs)`, for a script's `asyncio.run(serve(svc))`.
    With `signals` (on the main thread's loop), SIGTERM and SIGINT shut it
    down gracefully (`Service.graceful_shutdown(grace)`); a second one
    cancels `run()`, which leaves at once, and `serve()` returns. The
    handlers are removed when it returns."""
    if not signals:
        await service.run(**run_kwargs)
        return
    loop = asyncio.get_running_loop()
    running = loop.create_task(service.run(**run_kwargs))
    shutting_down: List[asyncio.Task] = []

    forced: List[bool] = []

    def on_signal() -> None:
        if shutting_down:
            forced.append(True)
            running.cancel()
        else:
            shutting_down.append(loop.create_task(service.graceful_shutdown(grace)))

    for number in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(number, on_signal)
    try:
        await running
    except asyncio.CancelledError:
        if not forced or not running.cancelled():
            raise  # serve() itself was cancelled
    finally:
        for number in SHUTDOWN_SIGNALS:
            loop.remove_signal_handler(number)
        if not running.done():  # serve() itself was cancelled
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        for task in shutting_down:
            await asyncio.gather(task, return_exceptions=True)

"""Serving a target: register its actions and answer the daemon's calls,
each in its own thread."""
import logging
import signal
import threading
from typing import Any, Callable, Dict, List, Optional

from .client import DAEMON, Backoff, Client, Hooks
from .errors import DISCONNECTED, FAILED, MediatorError, error_from_exception, log
from .fds import check_json, close_received, discard
from .tracing import TraceContext, use

#: How long `run()` lets calls in flight finish after `mediator.stop` or `stop()`.
STOP_TIMEOUT = 2.5
#: How long `run()` waits for the daemon to answer `register` (and `unregister`).
REGISTER_TIMEOUT = 10.0
#: How long `graceful_shutdown()` and `serve()` let calls in flight finish
#: after unregistering (the Swift Component's default too).
SHUTDOWN_GRACE = 10.0
#: What the link raises, before writing anything, for a result it cannot
#: send (fds.prepare_frame): answered to the caller as the call's error.
UNSENDABLE = ("frame_too_large", "fds_not_supported", "bad_request")


class Responder:
    """Sends the responses of one request: partials while open, then at most
    one final response; nothing for a oneway request or once suppressed
    (the daemon cancelled the call, or the connection is going away)."""

    def __init__(self, request_id: Any, more: bool, send: Callable[[dict], None]):
        self.id = request_id
        self.more = more
        self._send = send
        self._lock = threading.Lock()
        self._state = "open"  # "finished", "suppressed"

    def suppress(self) -> None:
        with self._lock:
            if self._state == "open":
                self._state = "suppressed"

    def partial(self, value: Any) -> None:
        with self._lock:
            dropped = not self.more or self.id is None or self._state != "open"
        if dropped:
            discard(value)
            return
        self._deliver({"id": self.id, "result": value, "continues": True}, final=False)

    def finish(self, result: Any = None, error: Optional[MediatorError] = None) -> None:
        with self._lock:
            dropped = self._state != "open" or self.id is None
            if self._state == "open":
                self._state = "finished"
        if dropped:
            discard(result)
            return
        if error is not None:
            self._deliver({"id": self.id, "error": error.to_wire()}, final=True)
        else:
            self._deliver({"id": self.id, "result": result}, final=True)

    def _deliver(self, message: dict, final: bool) -> None:
        # The link encodes the whole frame before writing any of it, so a
        # result it cannot send never reaches the wire half-made: the caller
        # gets an error instead, and the call is over.
        try:
            check_json(message)
            self._send(message)  # which closes the FD(..., close=True) sources, sent or not
            return
        except (TypeError, ValueError) as e:
            discard(message.get("result"))
            # Not JSON, or an FD marker whose descriptor is not open.
            error = MediatorError(FAILED, "the result cannot be sent: %s" % e)
        except MediatorError as e:
            if e.code not in UNSENDABLE:
                return  # the connection is gone: nobody to answer
            error = e
        with self._lock:
            self._state = "finished"
        try:
            self._send({"id": self.id, "error": error.to_wire()})
        except MediatorError:
            pass


class CallContext:
    """What a handler knows about the call it serves."""

    def __init__(self, target: str, request: dict, client: Any, responder: Responder):
        params = request.get("params")
        caller = request.get("caller")
        timeout_ms = request.get("timeout_ms")
        self.target = target
        #: The action called; for a `not_found` handler, the action asked for.
        self.action: str = request.get("action", "")
        #: The params (`{}` when absent); for `not_found`, the original params.
        self.params: Any = {} if params is None else params
        #: {"pid", "uid", "gid", "name"?, ...} from the daemon, or None.
        self.caller: Optional[dict] = caller if isinstance(caller, dict) else None
        #: Seconds the daemon still gives the call, or None.
        self.timeout: Optional[float] = timeout_ms / 1000.0 if isinstance(timeout_ms, (int, float)) else None
        #: Whether the caller accepts partial results (`more`).
        self.more: bool = request.get("more") is True
        #: The daemon's id of the call (None for a oneway call).
        self.id: Any = request.get("id")
        #: The connection, for nested calls (`mediator.Client` or `mediator.aio.Client`).
        self.client = client
        #: The trace context the request carried (W3C traceparent/tracestate), or None.
        self.caller_trace: Optional[TraceContext] = TraceContext.parse(
            request.get("traceparent"), request.get("tracestate"))
        #: The handler's own: a child of the caller's, current while the handler runs,
        #: so its calls continue the trace; None without a trace.
        self.trace: Optional[TraceContext] = None if self.caller_trace is None else self.caller_trace.child()
        #: Set when the daemon cancels the call (its answer is then not sent).
        self.cancelled = threading.Event()
        self._responder = responder
        self._received = params  # as it came, for closing its descriptors when the handler is done

    def close_received(self) -> None:
        """Closes the descriptors that came in the params (ReceivedFD) and
        that the handler neither closed nor detached: called when the
        handler is done, so that a service does not leak them."""
        close_received(self._received)

    def send_partial(self, value: Any) -> None:
        """A non-final result; sent only when the request had `more` and an id."""
        self._responder.partial(value)


class ServiceBase:
    """Actions, handlers and the `register` params; shared by the sync and asyncio services."""

    #: The logger of a service given none.
    default_log = log

    def __init__(self, target: str, description: Optional[str] = None, mode: str = "exclusive",
                 actions: Optional[List[Any]] = None, logger: Optional[logging.Logger] = None):
        #: Where the service and its connection log (handler tracebacks included).
        self.log = logger or self.default_log
        if mode not in ("exclusive", "pool"):
            raise ValueError("mode must be 'exclusive' or 'pool'")
        self.target = target
        self.description = description
        self.mode = mode
        self.actions = None if actions is None else list(actions)
        self._specs: Dict[str, Any] = {}  # name -> spec dict or bare name, in order declared
        self._handlers: Dict[str, Callable] = {}
        self._not_found: Optional[Callable] = None

    def action(self, name: str, spec: Optional[dict] = None) -> Callable[[Callable], Callable]:
        """Decorator: `handler(params, ctx)` serves `name`. `spec` is the
        ActionSpec dict to register (its `name` must be `name`)."""
        if spec is not None and spec.get("name") != name:
            raise ValueError("spec name %r does not match the action %r" % (spec.get("name"), name))

        def decorate(handler: Callable) -> Callable:
            self._specs.pop(name, None)
            self._specs[name] = name if spec is None else spec
            self._handlers[name] = handler
            return handler
        return decorate

    def not_found(self, handler: Callable) -> Callable:
        """`handler(action, params, ctx)` serves every action not declared
        (registered as `notFound`). Usable as a decorator."""
        self._not_found = handler
        return handler

    def _log_leaving(self, leaving: bool, grace: float, running: int) -> None:
        if leaving:
            self.log.info("the daemon asked %s to stop: up to %.3g s for %d calls in flight",
                          self.target, grace, running)
        else:
            self.log.info("shutting down %s: unregistering, then up to %.3g s for %d calls in flight",
                          self.target, grace, running)

    def _log_cut(self, running: int, grace: float) -> None:
        if running:
            self.log.warning("%d calls of %s still running after %.3g s are cancelled", running, self.target, grace)

    def _log_lost(self, delay: float, error: Optional[MediatorError] = None) -> None:
        if error is None:
            self.log.warning("%s lost its connection: registering again in %.3g s", self.target, delay)
        else:
            self.log.warning("registering %s again failed (next try in %.3g s): %s", self.target, delay, error)

    def _reregister_failed(self, link: Any, error: MediatorError) -> None:
        """Registering again on the same connection failed: the connection
        goes, and the usual reconnect registers on a new one."""
        self.log.warning("registering %s again failed: %s; connecting again", self.target, error)
        if link is not None:
            link.close(MediatorError(DISCONNECTED, "registering again failed: %s" % error.message))

    def register_params(self) -> dict:
        if self.actions is not None:
            actions = list(self.actions)  # exactly as given
        else:
            actions = list(self._specs.values())
            if self._not_found is not None and "notFound" not in self._specs:
                actions.append("notFound")
        params: Dict[str, Any] = {"target": self.target, "actions": actions, "mode": self.mode}
        if self.description is not None:
            params["description"] = self.description
        return params

    def resolve(self, ctx: CallContext):
        """The handler of a call and its arguments; adjusts ctx for `notFound`."""
        if ctx.action == "notFound" and self._not_found is not None and "notFound" not in self._handlers:
            inner = ctx.params if isinstance(ctx.params, dict) else {}
            action, params = inner.get("action"), inner.get("params", {})
            if not isinstance(action, str):
                raise MediatorError("invalid_params", "params.action: expected an action name")
            if not isinstance(params, dict):
                raise MediatorError("invalid_params", "params.params: expected an object")
            ctx.action, ctx.params = action, params
            return self._not_found, (action, params, ctx)
        handler = self._handlers.get(ctx.action)
        if handler is not None:
            return handler, (ctx.params, ctx)
        if self._not_found is not None:
            return self._not_found, (ctx.action, ctx.params, ctx)
        raise MediatorError("action_not_found", "%r does not declare the action %r" % (self.target, ctx.action))


def request_key(request_id: Any) -> Any:
    return request_id if isinstance(request_id, (int, str)) else repr(request_id)


class _Session:
    """One connection of a running service: a thread per call, kept by the
    daemon's id so that `mediator.cancel` reaches it."""

    def __init__(self, service: "Service"):
        self.service = service
        self.client: Optional[Client] = None
        self.calls: Dict[Any, CallContext] = {}
        self.running = 0
        self.lock = threading.Condition()
        self.ended = threading.Event()  # connection closed, mediator.stop, or stop()
        self.leaving = False            # mediator.stop

    @property
    def hooks(self) -> Hooks:
        return Hooks(self.on_request, self.on_cancel, self.on_stop, self.ended.set, self.on_reregister)

    def on_reregister(self) -> None:
        """`mediator.reregister`: registers again on this connection, from
        another thread (the reader thread reads the answer)."""
        threading.Thread(target=self.register_again, name="mediator-reregister", daemon=True).start()

    def register_again(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            with use(None):
                client.call(DAEMON, "register", self.service.register_params(), timeout=REGISTER_TIMEOUT)
            self.service.log.info("registered %s again, as the daemon asked", self.service.target)
        except MediatorError as e:
            self.service._reregister_failed(client._link, e)

    def on_request(self, request: dict) -> None:
        client = self.client
        if client is None:
            return
        link = client._link
        responder = Responder(request.get("id"), request.get("more") is True, link.send)
        ctx = CallContext(self.service.target, request, client, responder)
        with self.lock:
            self.running += 1
            if ctx.id is not None:
                self.calls[request_key(ctx.id)] = ctx
        threading.Thread(target=self.execute, args=(ctx,), name="mediator-call", daemon=True).start()

    def execute(self, ctx: CallContext) -> None:
        try:
            handler, args = self.service.resolve(ctx)
            with use(ctx.trace):
                result = handler(*args)
            ctx._responder.finish(result=result)
        except BaseException as e:  # a handler's failure must not kill the service
            ctx._responder.finish(error=error_from_exception(e, "%s.%s" % (ctx.target, ctx.action), self.service.log))
        finally:
            ctx.close_received()
            with self.lock:
                self.running -= 1
                if ctx.id is not None and self.calls.get(request_key(ctx.id)) is ctx:
                    del self.calls[request_key(ctx.id)]
                self.lock.notify_all()

    def on_cancel(self, request_id: Any) -> None:
        with self.lock:
            ctx = self.calls.pop(request_key(request_id), None)
        if ctx is not None:
            ctx._responder.suppress()
            ctx.cancelled.set()

    def on_stop(self) -> None:
        self.leaving = True
        self.ended.set()

    def drain(self, timeout: float) -> None:
        """Waits (bounded) for the calls in flight to finish."""
        with self.lock:
            self.lock.wait_for(lambda: self.running == 0, timeout)

    def abandon(self) -> None:
        """The connection is gone: nothing can be answered; tell the handlers."""
        with self.lock:
            calls, self.calls = list(self.calls.values()), {}
        for ctx in calls:
            ctx._responder.suppress()
            ctx.cancelled.set()


class Service(ServiceBase):
    """A target served by this process.

        svc = mediator.Service("Notes")

        @svc.action("add", spec={"name": "add", "params": {...}})
        def add(params, ctx):
            return {"id": 1}

        svc.run()

    A handler that raises MediatorError is answered with its code, message
    and data; any other exception with the code `failed`. The service logs
    through `logger`, else the logger "mediator.service".
    """

    def __init__(self, target: str, description: Optional[str] = None, mode: str = "exclusive",
                 actions: Optional[List[Any]] = None, logger: Optional[logging.Logger] = None):
        super().__init__(target, description, mode, actions, logger)
        self.stop_timeout = STOP_TIMEOUT
        self._stopping = threading.Event()
        self._grace: Optional[float] = None  # set by graceful_shutdown()
        self._session: Optional[_Session] = None
        self._idle = threading.Event()  # set while run() is not running
        self._idle.set()

    def stop(self) -> None:
        """Makes `run()` return (from another thread or a signal handler):
        it unregisters the target, so that the daemon routes new calls
        elsewhere, lets the calls in flight finish (bounded by
        `stop_timeout`), and closes. Does not wait."""
        self._stopping.set()
        session = self._session
        if session is not None:
            session.ended.set()

    def graceful_shutdown(self, grace: float = SHUTDOWN_GRACE, wait: bool = True) -> None:
        """As `stop()`, with `grace` seconds for the calls in flight; past
        it, their answers are dropped and their `ctx.cancelled` set. With
        `wait`, returns once `run()` has returned (unless called from the
        thread running it, a handler say, or from a signal handler: pass
        `wait=False` there)."""
        self._grace = grace
        self.stop()
        if wait:
            self._idle.wait(grace + 2 * REGISTER_TIMEOUT)

    def _leave(self, session: _Session, client: Client) -> None:
        """The end of `run()` on a stop: unregister (unless the daemon asked
        us to leave), let the calls in flight finish, close."""
        grace = self.stop_timeout if self._grace is None else self._grace
        self._log_leaving(session.leaving, grace, session.running)
        try:
            if not session.leaving:
                try:
                    with use(None):
                        client.call(DAEMON, "unregister", {"target": self.target}, timeout=REGISTER_TIMEOUT)
                except MediatorError:
                    pass  # the connection is going anyway: closing it unregisters too
            session.drain(grace)
            self._log_cut(session.running, grace)
        finally:  # KeyboardInterrupt (serve()'s second signal) too: leave at once
            session.abandon()
            client.close()

    def run(self, socket: Optional[str] = None, name: Optional[str] = None, reconnect: bool = True,
            user: bool = False, on_registered: Optional[Callable[[], None]] = None, fds: bool = False) -> None:
        """Connects, registers, and serves until `mediator.stop` or `stop()`.

        The first connection or registration failing raises MediatorError
        (`unreachable`, `already_registered`...). Later, a lost connection is
        opened again with backoff (0.1 s doubling to 5 s; every 0.05 s for
        10 s first after `mediator.restarting`) and the target registered
        again (also on the same connection after `mediator.reregister`); without `reconnect`, it raises `disconnected`.
        `on_registered` is called after each registration. With `fds=True`
        the connection says `fds: true` in `hello`: handlers may receive
        descriptors in params (`mediator.ReceivedFD`) and return `mediator.FD`
        markers in results and partials.
        """
        self._stopping.clear()
        self._grace = None
        self._idle.clear()
        try:
            self._serve(socket, name, reconnect, user, on_registered, fds)
        finally:
            self._session = None
            self._idle.set()

    def _serve(self, socket: Optional[str], name: Optional[str], reconnect: bool, user: bool,
               on_registered: Optional[Callable[[], None]], fds: bool) -> None:
        registered_once = False
        backoff = Backoff()
        while not self._stopping.is_set():
            session = _Session(self)
            self._session = session
            client = None
            try:
                client = Client(socket=socket, name=name, user=user, fds=fds, _hooks=session.hooks, logger=self.log)
                session.client = client
                with use(None):  # as hello and cancel: the library's own calls carry no trace
                    client.call(DAEMON, "register", self.register_params(), timeout=REGISTER_TIMEOUT)
            except MediatorError as e:
                if client is not None:
                    client.close()
                if self._stopping.is_set():
                    break
                if not registered_once or not reconnect:
                    raise
                delay = backoff.next()
                self._log_lost(delay, e)
                self._stopping.wait(delay)
                continue
            registered_once = True
            backoff.reset()
            self.log.info("registered %s at %s", self.target, client.socket_path)
            if self._stopping.is_set():
                session.ended.set()
            elif on_registered is not None:
                on_registered()
            try:
                session.ended.wait()
            except BaseException:  # KeyboardInterrupt: leave at once
                session.abandon()
                client.close()
                raise
            if session.leaving or self._stopping.is_set():
                self._leave(session, client)
                break
            session.abandon()
            client.close()
            if not reconnect:
                raise MediatorError(DISCONNECTED, "the connection to the daemon closed")
            if client._link is not None and client._link.restarting:
                backoff.restarting()
            delay = backoff.next()
            self._log_lost(delay)
            self._stopping.wait(delay)


#: The signals `serve()` answers with a graceful shutdown.
SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def serve(
    service: Service, *, signals: Optional[bool] = None, grace: float = SHUTDOWN_GRACE, **run_kwargs: Any
) -> None:
    """Runs `service.run(**run_kwargs)` in this thread, for a script's main.
    With `signals` (the main thread only; None, the default: when called
    from the main thread), SIGTERM and SIGINT shut it down gracefully
    (`Service.graceful_shutdown(grace)`: unregister, let the calls in flight
    finish within `grace`, close); a second one raises KeyboardInterrupt,
    which leaves at once. The previous handlers are restored when it
    returns."""
    if signals is None:
        # Python lets only the main thread set signal handlers.
        signals = threading.current_thread() is threading.main_thread()
    if not signals:
        service.run(**run_kwargs)
        return
    previous = {number: signal.getsignal(number) for number in SHUTDOWN_SIGNALS}

    def interrupt(number: int, frame: Any) -> None:
        raise KeyboardInterrupt

    def shut_down(number: int, frame: Any) -> None:
        for each in SHUTDOWN_SIGNALS:
            signal.signal(each, interrupt)
        service.graceful_shutdown(grace, wait=False)

    try:
        for number in SHUTDOWN_SIGNALS:
            signal.signal(number, shut_down)
        service.run(**run_kwargs)
    finally:
        for number, handler in previous.items():
            if handler is not None:  # None: set outside Python, cannot be put back
                signal.signal(number, handler)

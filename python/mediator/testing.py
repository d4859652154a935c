"""Testing against a real mediatord from `unittest` (or anything else).

    from mediator.testing import DaemonTestCase

    class NotesTests(DaemonTestCase):
        def test_add(self):
            self.serve(make_notes_service())         # registered when it returns
            self.assertEqual(self.connect().call("Notes", "add", {"text": "hi"})["id"], 1)

`TestDaemon` starts a mediatord of its own on a private socket in a temp
folder (no manifests, no policy files), waits until it answers `ping`, and
stops it on exit. It needs the mediatord binary: `$MEDIATORD`, else
`mediatord` on PATH (the package cannot host the broker in-process as the
Swift library's harness does). Every wait here is bounded.
"""
import asyncio
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
from typing import Any, List, Optional, Sequence

from .client import Client
from .errors import MediatorError
from .service import REGISTER_TIMEOUT, SHUTDOWN_GRACE, Service

__all__ = ["DaemonNotFound", "DaemonTestCase", "ServiceThread", "TestDaemon", "find_mediatord", "start_service"]

#: How long `TestDaemon.start()` waits for the daemon to answer `ping`.
READY_TIMEOUT = 15.0
#: How often it asks meanwhile.
READY_POLL = 0.05
#: How long `stop()` waits after SIGTERM before SIGKILL, and after SIGKILL.
STOP_TIMEOUT = 5.0
#: How long `ServiceThread` and `start_service` wait for the registration.
SERVICE_START_TIMEOUT = REGISTER_TIMEOUT


class DaemonNotFound(RuntimeError):
    """No mediatord binary: set $MEDIATORD or put mediatord on PATH."""


def find_mediatord(binary: Optional[str] = None) -> str:
    """The mediatord to run: `binary`, else `$MEDIATORD`, else `mediatord`
    on PATH; raises DaemonNotFound saying where it looked."""
    candidate = binary or os.environ.get("MEDIATORD") or shutil.which("mediatord")
    if candidate and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
        return candidate
    where = ("%r is not an executable file" % candidate) if candidate else "$MEDIATORD is not set and PATH has none"
    raise DaemonNotFound("mediator.testing needs the mediatord binary: %s (build it with `swift build` and set "
                         "MEDIATORD=.build/debug/mediatord, or install it on PATH)" % where)


class TestDaemon:
    """A mediatord of its own, in a temp folder (`dir`) with empty
    `components` and `policy` folders, listening on `socket_path`.

    `with TestDaemon() as daemon:` starts it and, on exit, stops it and
    removes the folder. `stop()` then `start()` restarts it on the same
    socket (to test reconnection). `args` are extra mediatord flags.
    """

    __test__ = False  # not a test class, whatever its name (pytest)

    def __init__(self, *args: str, binary: Optional[str] = None, ready_timeout: float = READY_TIMEOUT):
        self.binary = find_mediatord(binary)
        self.args: List[str] = list(args)
        self.ready_timeout = ready_timeout
        self.dir = tempfile.mkdtemp(prefix="mediator-test-")
        self.socket_path = os.path.join(self.dir, "mediator.sock")
        self.components = os.path.join(self.dir, "components")
        self.policy = os.path.join(self.dir, "policy")
        os.mkdir(self.components)
        os.mkdir(self.policy)
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> "TestDaemon":
        """Starts mediatord and returns once it answers `ping` (within
        `ready_timeout`, else RuntimeError with the end of its log)."""
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--socket", self.socket_path, "--components", self.components,
                 "--policy", self.policy, "--log-target", "stderr", "--log-level", "warning"] + self.args,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + self.ready_timeout
        while not self._answers_ping():
            if time.monotonic() >= deadline:
                self.stop()
                raise RuntimeError("mediatord did not answer ping within %s s; log:\n%s"
                                   % (self.ready_timeout, self.log()))
            time.sleep(READY_POLL)
        return self

    def _answers_ping(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            code = None if self.process is None else self.process.returncode
            raise RuntimeError("mediatord exited with %s; log:\n%s" % (code, self.log()))
        try:
            with Client(self.socket_path, timeout=1.0) as client:
                client.call("mediator", "ping", timeout=1.0)
            return True
        except MediatorError:
            return False

    def connect(self, **kwargs: Any) -> Client:
        """A client of this daemon (`timeout` 10 s unless given); close it."""
        kwargs.setdefault("timeout", 10.0)
        return Client(self.socket_path, **kwargs)

    def log(self, limit: int = 4000) -> str:
        """The end of the daemon's log (stdout and stderr)."""
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-limit:]
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers (bounded); keeps the folder."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def cleanup(self) -> None:
        """Stops it and removes its folder."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "TestDaemon":
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


class ServiceThread:
    """Runs a sync `Service` in a thread against `socket`; `start()` returns
    once it is registered (or raises what `run()` raised); `stop()` shuts it
    down gracefully and joins the thread. Usable with `with`."""

    def __init__(self, service: Service, socket: str, grace: float = SHUTDOWN_GRACE, **run_kwargs: Any):
        self.service, self.socket, self.grace, self.run_kwargs = service, socket, grace, run_kwargs
        self.error: Optional[BaseException] = None  # what run() raised, if it did
        self._registered = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mediator-test-service", daemon=True)

    def _run(self) -> None:
        user_callback = self.run_kwargs.pop("on_registered", None)

        def registered() -> None:
            if user_callback is not None:
                user_callback()
            self._registered.set()
        try:
            self.service.run(socket=self.socket, on_registered=registered, **self.run_kwargs)
        except BaseException as e:  # reported by start(), or kept in `error`
            self.error = e
        finally:
            self._registered.set()

    def start(self, timeout: float = SERVICE_START_TIMEOUT) -> "ServiceThread":
        self._thread.start()
        if not self._registered.wait(timeout):
            self.stop()
            raise RuntimeError("%s did not register within %s s" % (self.service.target, timeout))
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        """Graceful shutdown (unregister, `grace` for the calls in flight); joins."""
        if self._thread.is_alive():
            self.service.graceful_shutdown(self.grace)
            self._thread.join(self.grace + 2 * REGISTER_TIMEOUT)

    def join(self, timeout: Optional[float] = None) -> None:
        """Waits (bounded by `timeout`) for `run()` to return."""
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether `run()` is still running."""
        return self._thread.is_alive()

    def __enter__(self) -> "ServiceThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


async def start_service(service: Any, socket: str, timeout: float = SERVICE_START_TIMEOUT,
                        **run_kwargs: Any) -> "asyncio.Task":
    """Runs a `mediator.aio.Service` as a task against `socket`; returns the
    task once the service is registered (raises what `run()` raised, or
    RuntimeError after `timeout`). End it with `await
    service.graceful_shutdown()` then `await task`, or `task.cancel()`."""
    registered = asyncio.Event()
    user_callback = run_kwargs.pop("on_registered", None)

    async def on_registered() -> None:
        if user_callback is not None:
            outcome = user_callback()
            if asyncio.iscoroutine(outcome):
                await outcome
        registered.set()
    task = asyncio.ensure_future(service.run(socket=socket, on_registered=on_registered, **run_kwargs))
    waiting = asyncio.ensure_future(registered.wait())
    try:
        await asyncio.wait([task, waiting], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if task.done():
        task.result()  # raises the failure
        raise RuntimeError("%s returned before registering" % service.target)
    if not registered.is_set():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise RuntimeError("%s did not register within %s s" % (service.target, timeout))
    return task


class DaemonTestCase(unittest.TestCase):
    """A `unittest.TestCase` with a fresh mediatord for each test:
    `self.daemon` (a TestDaemon), `self.socket_path`, `self.connect()` and
    `self.serve(service)`, all cleaned up after the test. Without a
    mediatord binary each test fails with DaemonNotFound, or is skipped
    when the class sets `skip_without_daemon = True`. `daemon_args` are
    extra mediatord flags."""

    skip_without_daemon = False
    daemon_args: Sequence[str] = ()

    def make_daemon(self) -> TestDaemon:
        """The daemon of each test (not started): override to configure it."""
        return TestDaemon(*self.daemon_args)

    def setUp(self) -> None:
        super().setUp()
        try:
            self.daemon = self.make_daemon()
        except DaemonNotFound as e:
            if self.skip_without_daemon:
                raise unittest.SkipTest(str(e))
            raise
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        self.socket_path = self.daemon.socket_path

    def connect(self, **kwargs: Any) -> Client:
        """A client of the test's daemon, closed after the test."""
        client = self.daemon.connect(**kwargs)
        self.addCleanup(client.close)
        return client

    def serve(self, service: Service, **run_kwargs: Any) -> ServiceThread:
        """Runs a sync service in a thread until the test ends; returns once registered."""
        running = ServiceThread(service, self.socket_path, **run_kwargs)
        self.addCleanup(running.stop)
        return running.start()

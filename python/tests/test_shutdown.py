"""Graceful shutdown of services (sync and asyncio), TaskGroup cooperation
and serve() with signals, against the real mediatord."""
import asyncio
import os
import signal
import sys
import threading
import unittest

from support import DaemonTestCase, wait_until

import mediator
import mediator.aio as aio


def gone(client, target):
    """Whether the daemon no longer routes to `target`."""
    try:
        client.call(target, "nothing", timeout=5)
    except mediator.MediatorError as e:
        return e.code == "target_not_found"
    return False


class AioShutdownTests(DaemonTestCase):
    def run_async(self, coroutine, timeout=60):
        return asyncio.run(asyncio.wait_for(coroutine, timeout))

    def service(self, started, release, seen):
        svc = aio.Service("Slow")

        @svc.action("slow")
        async def slow(params, ctx):
            started.set()
            await release.wait()
            return "finished"

        @svc.action("hang")
        async def hang(params, ctx):
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
        return svc

    async def registered(self, svc, **kwargs):
        ready = asyncio.Event()
        task = asyncio.get_running_loop().create_task(svc.run(socket=self.socket, on_registered=ready.set, **kwargs))
        await asyncio.wait_for(ready.wait(), 10)
        return task

    def test_graceful_shutdown_unregisters_then_lets_calls_finish(self):
        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            task = await self.registered(svc)
            async with await aio.connect(self.socket, timeout=10) as client:
                call = asyncio.ensure_future(client.call("Slow", "slow"))
                await asyncio.wait_for(started.wait(), 10)
                shutdown = asyncio.ensure_future(svc.graceful_shutdown(grace=30))
                # New calls are no longer routed here while the old one runs.
                sync = mediator.connect(self.socket, timeout=10)
                try:
                    self.assertTrue(await asyncio.get_running_loop().run_in_executor(
                        None, wait_until, lambda: gone(sync, "Slow")))
                finally:
                    sync.close()
                self.assertFalse(shutdown.done())
                release.set()
                self.assertEqual(await call, "finished")
                await asyncio.wait_for(shutdown, 10)
                self.assertTrue(task.done())
                self.assertIsNone(task.result())
        self.run_async(main())

    def test_past_the_grace_the_calls_are_cancelled(self):
        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            task = await self.registered(svc)
            async with await aio.connect(self.socket, timeout=10) as client:
                call = asyncio.ensure_future(client.call("Slow", "hang", timeout=30))
                await asyncio.wait_for(started.wait(), 10)
                await asyncio.wait_for(svc.graceful_shutdown(grace=0.2), 10)
                self.assertTrue(task.done())
                self.assertEqual(seen, ["cancelled"])
                with self.assertRaises(mediator.MediatorError):
                    await asyncio.wait_for(call, 10)
        self.run_async(main())

    def test_cancelling_run_leaves_at_once(self):
        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            task = await self.registered(svc)
            async with await aio.connect(self.socket, timeout=10) as client:
                call = asyncio.ensure_future(client.call("Slow", "hang", timeout=30))
                await asyncio.wait_for(started.wait(), 10)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await asyncio.wait_for(task, 5)
                with self.assertRaises(mediator.MediatorError):
                    await asyncio.wait_for(call, 10)
            self.assertEqual(seen, ["cancelled"])
        self.run_async(main())

    @unittest.skipIf(sys.version_info < (3, 11), "asyncio.TaskGroup is Python 3.11+")
    def test_a_task_group_failing_cancels_run(self):
        class Boom(Exception):
            pass

        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            ready = asyncio.Event()

            async def fail_once_registered():
                await ready.wait()
                raise Boom()
            with self.assertRaises(BaseException) as caught:
                async with asyncio.TaskGroup() as group:
                    group.create_task(svc.run(socket=self.socket, on_registered=ready.set))
                    group.create_task(fail_once_registered())
            self.assertEqual([type(e) for e in caught.exception.exceptions], [Boom])
            with mediator.connect(self.socket, timeout=10) as client:
                self.assertTrue(wait_until(lambda: gone(client, "Slow")))
        self.run_async(main())

    def test_serve_shuts_down_gracefully_on_sigterm(self):
        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            ready = asyncio.Event()
            serving = asyncio.ensure_future(aio.serve(svc, grace=30, socket=self.socket, on_registered=ready.set))
            await asyncio.wait_for(ready.wait(), 10)
            async with await aio.connect(self.socket, timeout=10) as client:
                call = asyncio.ensure_future(client.call("Slow", "slow"))
                await asyncio.wait_for(started.wait(), 10)
                os.kill(os.getpid(), signal.SIGTERM)
                await asyncio.sleep(0)
                self.assertFalse(serving.done())
                release.set()
                self.assertEqual(await call, "finished")
                await asyncio.wait_for(serving, 10)
        self.run_async(main())
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)

    def test_serve_leaves_at_once_on_a_second_signal(self):
        async def main():
            started, release, seen = asyncio.Event(), asyncio.Event(), []
            svc = self.service(started, release, seen)
            ready = asyncio.Event()
            serving = asyncio.ensure_future(aio.serve(svc, grace=60, socket=self.socket, on_registered=ready.set))
            await asyncio.wait_for(ready.wait(), 10)
            async with await aio.connect(self.socket, timeout=10) as client:
                call = asyncio.ensure_future(client.call("Slow", "hang", timeout=60))
                await asyncio.wait_for(started.wait(), 10)
                os.kill(os.getpid(), signal.SIGTERM)
                sync = mediator.connect(self.socket, timeout=10)
                try:  # the graceful shutdown has begun: the target is unregistered
                    self.assertTrue(await asyncio.get_running_loop().run_in_executor(
                        None, wait_until, lambda: gone(sync, "Slow")))
                finally:
                    sync.close()
                os.kill(os.getpid(), signal.SIGINT)
                self.assertIsNone(await asyncio.wait_for(serving, 10))  # well before the 60 s grace
                self.assertEqual(seen, ["cancelled"])
                with self.assertRaises(mediator.MediatorError):
                    await asyncio.wait_for(call, 10)
        self.run_async(main())
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)


class SyncShutdownTests(DaemonTestCase):
    def service(self, started, release):
        svc = mediator.Service("SlowSync")

        @svc.action("slow")
        def slow(params, ctx):
            started.set()
            release.wait(30)
            return "finished"

        @svc.action("hang")
        def hang(params, ctx):
            started.set()
            return "cancelled" if ctx.cancelled.wait(30) else "not cancelled"
        return svc

    def test_graceful_shutdown_unregisters_then_lets_calls_finish(self):
        started, release = threading.Event(), threading.Event()
        svc = self.service(started, release)
        running = self.serve(svc)
        client = self.connect()
        results = []
        caller = threading.Thread(target=lambda: results.append(client.call("SlowSync", "slow")), daemon=True)
        caller.start()
        self.assertTrue(started.wait(10))
        stopper = threading.Thread(target=svc.graceful_shutdown, kwargs={"grace": 30}, daemon=True)
        stopper.start()
        self.assertTrue(wait_until(lambda: gone(client, "SlowSync")))
        self.assertTrue(stopper.is_alive())
        release.set()
        caller.join(10)
        stopper.join(10)
        self.assertEqual(results, ["finished"])
        self.assertFalse(stopper.is_alive())
        running.join(10)
        self.assertFalse(running.running)
        self.assertIsNone(running.error)

    def test_past_the_grace_the_handlers_see_cancelled(self):
        started, release = threading.Event(), threading.Event()
        svc = self.service(started, release)
        running = self.serve(svc)
        client = self.connect()
        errors = []

        def call():
            try:
                client.call("SlowSync", "hang", timeout=30)
            except mediator.MediatorError as e:
                errors.append(e)
        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        self.assertTrue(started.wait(10))
        svc.graceful_shutdown(grace=0.2)
        running.join(10)
        self.assertFalse(running.running)
        caller.join(15)
        self.assertEqual(len(errors), 1)

    def test_serve_shuts_down_gracefully_on_sigterm(self):
        started, release = threading.Event(), threading.Event()
        svc = self.service(started, release)
        registered = threading.Event()
        results = []

        def drive():
            if not registered.wait(10):
                return
            with mediator.connect(self.socket, timeout=10) as client:
                caller = threading.Thread(target=lambda: results.append(client.call("SlowSync", "slow")))
                caller.start()
                if started.wait(10):
                    os.kill(os.getpid(), signal.SIGTERM)
                    wait_until(lambda: gone(client, "SlowSync"))
                release.set()
                caller.join(10)
        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        previous = signal.getsignal(signal.SIGTERM)
        mediator.serve(svc, grace=30, socket=self.socket, on_registered=registered.set)
        driver.join(20)
        self.assertEqual(results, ["finished"])
        self.assertIs(signal.getsignal(signal.SIGTERM), previous)


if __name__ == "__main__":
    unittest.main()

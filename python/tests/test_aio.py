"""Integration tests of mediator.aio against the real mediatord."""
import asyncio
import json
import os
import threading
import unittest

import support
from support import DaemonTestCase

import mediator
import mediator.aio as aio


def aio_notes(seen):
    """An asyncio service with async and plain handlers; `seen` is a list of what they saw."""
    svc = aio.Service("AioNotes", description="asyncio notes")

    @svc.action("add", spec={"name": "add", "params": {"type": "object", "required": ["text"]}})
    async def add(params, ctx):
        return {"text": params["text"], "caller": ctx.caller, "timeout": ctx.timeout}

    @svc.action("watch")
    async def watch(params, ctx):
        for i in range(3):
            ctx.send_partial(i)
            await asyncio.sleep(0)
        return "end"

    @svc.action("plain")
    def plain(params, ctx):  # a plain function runs in a thread
        ctx.send_partial("from a thread")
        return {"thread": threading.current_thread() is not threading.main_thread()}

    @svc.action("touch")
    async def touch(params, ctx):
        seen.append(("touch", params, ctx.id))

    @svc.action("fail")
    async def fail(params, ctx):
        if params.get("kind") == "mediator":
            raise mediator.MediatorError("busy", "try later", {"retry": 1})
        raise KeyError("k")

    @svc.action("sleep")
    async def sleep(params, ctx):
        try:
            await asyncio.sleep(20)
        except asyncio.CancelledError:
            seen.append(("cancelled", ctx.cancelled.is_set()))
            raise
        return "slept"

    @svc.action("nested")
    async def nested(params, ctx):
        return await ctx.client.call("mediator", "ping")
    return svc


class AioTests(DaemonTestCase):
    def run_async(self, coroutine, timeout=60):
        return asyncio.run(asyncio.wait_for(coroutine, timeout))

    async def eventually(self, predicate, timeout=10.0):
        """Polls `predicate` (bounded) and fails when it stays false."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            self.assertLess(asyncio.get_running_loop().time(), deadline, "condition not met in time")
            await asyncio.sleep(0.02)

    async def start_service(self, seen, **kwargs):
        svc = aio_notes(seen)
        registered = asyncio.Event()
        task = asyncio.get_running_loop().create_task(
            svc.run(socket=self.socket, on_registered=registered.set, **kwargs))
        done, _ = await asyncio.wait([task, asyncio.ensure_future(registered.wait())], timeout=10,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()  # raises the failure
        self.assertTrue(registered.is_set())
        return svc, task

    def test_main_paths(self):
        seen = []

        async def main():
            svc, task = await self.start_service(seen)
            async with await aio.connect(self.socket, name="aio-test", timeout=10) as client:
                result = await client.call("AioNotes", "add", {"text": "hi"}, timeout=5)
                self.assertEqual((result["text"], result["caller"]["name"]), ("hi", "aio-test"))
                self.assertTrue(0 < result["timeout"] <= 5)
                self.assertEqual([r async for r in client.stream("AioNotes", "watch")], [0, 1, 2, "end"])
                self.assertEqual([r async for r in client.stream("AioNotes", "plain")],
                                 ["from a thread", {"thread": True}])
                await client.send("AioNotes", "touch", {"x": 1})
                sub = await client.subscribe(["aio.*"])
                self.assertEqual(await client.publish("aio.event", [1]), 1)
                self.assertEqual(await sub.get(timeout=10), mediator.Event("aio.event", [1]))
                await self.eventually(lambda: ("touch", {"x": 1}, None) in seen)
                sub.close()
                self.assertEqual((await client.open("app://AioNotes/add?text=url"))["text"], "url")
                self.assertEqual(await client.call("AioNotes", "nested"), {})
                for params, code, data in [({"kind": "mediator"}, "busy", {"retry": 1}), ({}, "failed", {"type": "KeyError"})]:
                    with self.assertRaises(mediator.MediatorError) as caught:
                        await client.call("AioNotes", "fail", params)
                    self.assertEqual((caught.exception.code, caught.exception.data), (code, data))
                with self.assertRaises(mediator.MediatorError) as caught:
                    await client.call("AioNotes", "add", {})
                self.assertEqual(caught.exception.code, "invalid_params")
                # A client-side timeout: the daemon cancels the call, the handler's task is cancelled.
                with self.assertRaises(mediator.MediatorError) as caught:
                    await client.call("AioNotes", "sleep", timeout=0.3)
                self.assertEqual(caught.exception.code, "timeout")
                await self.eventually(lambda: ("cancelled", True) in seen)
            svc.stop()
            await asyncio.wait_for(task, 10)
        self.run_async(main())

    def test_sync_client_and_mediatorctl_call_an_aio_service(self):
        seen, ready, stop = [], threading.Event(), threading.Event()
        holder = {}

        async def serve():
            holder["svc"], task = await self.start_service(seen)
            ready.set()
            await asyncio.get_running_loop().run_in_executor(None, stop.wait, 30)
            holder["svc"].stop()  # from the loop's thread
            await asyncio.wait_for(task, 10)
        thread = threading.Thread(target=lambda: self.run_async(serve()), daemon=True)
        thread.start()
        self.addCleanup(lambda: (stop.set(), thread.join(10)))
        self.assertTrue(ready.wait(10))
        client = self.connect()
        self.assertEqual(client.call("AioNotes", "add", {"text": "sync"})["text"], "sync")
        if os.access(support.MEDIATORCTL, os.X_OK):
            done = self.daemon.ctl("call", "--json", "AioNotes", "add", "text=ctl")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout)["text"], "ctl")
        stop.set()
        thread.join(10)
        self.assertFalse(thread.is_alive())

    def test_unreachable_and_disconnected(self):
        async def main():
            with self.assertRaises(mediator.MediatorError) as caught:
                await aio.connect(os.path.join(self.daemon.dir, "none.sock"))
            self.assertEqual(caught.exception.code, "unreachable")
            seen = []
            svc, task = await self.start_service(seen)
            client = await aio.connect(self.socket, timeout=10)
            call = asyncio.ensure_future(client.call("AioNotes", "sleep"))
            await asyncio.sleep(0.2)
            self.daemon.proc.kill()
            with self.assertRaises(mediator.MediatorError) as caught:
                await asyncio.wait_for(call, 10)
            self.assertEqual(caught.exception.code, "disconnected")
            await client.close()
            svc.stop()
            await asyncio.wait_for(task, 10)
        self.run_async(main())

    def test_service_reconnects_after_a_daemon_restart(self):
        async def main():
            seen = []
            svc = aio_notes(seen)
            registrations = asyncio.Queue()
            task = asyncio.get_running_loop().create_task(
                svc.run(socket=self.socket, on_registered=lambda: registrations.put_nowait(1)))
            await asyncio.wait_for(registrations.get(), 10)
            client = await aio.connect(self.socket, timeout=10, reconnect=True)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.daemon.stop)
            await loop.run_in_executor(None, self.daemon.start)
            await asyncio.wait_for(registrations.get(), 20)
            self.assertEqual((await client.call("AioNotes", "add", {"text": "back"}))["text"], "back")
            await client.close()
            svc.stop()
            await asyncio.wait_for(task, 10)
        self.run_async(main())


if __name__ == "__main__":
    unittest.main()

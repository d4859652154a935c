"""The daemon's events about itself (docs/protocol.md): after
`mediator.restarting` the libraries retry quickly; after
`mediator.reregister` they register and subscribe again on the same
connection."""
import asyncio
import logging
import threading
import unittest

import support
from support import HAVE_DAEMON, NO_DAEMON, DaemonTestCase, FakeDaemon, wait_until

import mediator
import mediator.aio as aio
from mediator.client import (INITIAL_BACKOFF, MAX_BACKOFF, RESTART_RETRY_INTERVAL, RESTART_RETRY_WINDOW, Backoff)
from mediator.testing import ServiceThread

REREGISTER = {"event": "mediator.reregister", "data": {"reason": "state_lost"}}


def answer_subscribe(message, send):
    """The fake daemon answers `subscribe` calls; oneway ones get nothing."""
    if message.get("action") == "subscribe" and "id" in message:
        send({"id": message["id"], "result": {}})


def registers(fake):
    return [m for m in fake.received if m.get("action") == "register"]


def oneway_subscribes(fake):
    return [m for m in fake.received if m.get("action") == "subscribe" and "id" not in m]


class BackoffTests(unittest.TestCase):
    def test_doubles_to_the_maximum_and_starts_again_after_reset(self):
        backoff = Backoff(clock=lambda: 0.0)
        delays = [backoff.next() for _ in range(8)]
        self.assertEqual(delays[:3], [INITIAL_BACKOFF, 2 * INITIAL_BACKOFF, 4 * INITIAL_BACKOFF])
        self.assertEqual(delays[-1], MAX_BACKOFF)
        backoff.reset()
        self.assertEqual(backoff.next(), INITIAL_BACKOFF)

    def test_restarting_retries_quickly_for_the_window_then_backs_off(self):
        now = [100.0]
        backoff = Backoff(clock=lambda: now[0])
        backoff.next()
        backoff.next()  # some backoff already: restarting overrides it
        backoff.restarting()
        self.assertEqual([backoff.next() for _ in range(50)], [RESTART_RETRY_INTERVAL] * 50)
        now[0] += RESTART_RETRY_WINDOW
        self.assertGreater(backoff.next(), RESTART_RETRY_INTERVAL)
        backoff.restarting()
        backoff.reset()  # connected: the next loss starts from the usual schedule
        self.assertEqual(backoff.next(), INITIAL_BACKOFF)


class FakeDaemonTestCase(unittest.TestCase):
    def setUp(self):
        self.fake = FakeDaemon(answer_subscribe)
        self.addCleanup(self.fake.close)

    def run_async(self, coroutine, timeout=30):
        return asyncio.run(asyncio.wait_for(coroutine, timeout))


class ReregisterTests(FakeDaemonTestCase):
    def test_a_service_registers_again_on_the_same_connection(self):
        service = mediator.Service("Again")
        service.action("noop")(lambda params, ctx: {})
        with ServiceThread(service, self.fake.socket):
            self.assertEqual(len(registers(self.fake)), 1)
            self.fake.send_to_all(REREGISTER)
            self.assertTrue(wait_until(lambda: len(registers(self.fake)) == 2))
            self.assertEqual(registers(self.fake)[1]["params"]["target"], "Again")
            self.assertEqual(len(self.fake.connections), 1)

    def test_a_client_subscribes_again_and_its_subscribers_keep_going(self):
        with mediator.Client(self.fake.socket, timeout=10) as client:
            sub = client.subscribe(["again.*", "other.x"])
            everything = client.subscribe(["mediator.*"])
            self.fake.send_to_all(REREGISTER)
            self.assertTrue(wait_until(lambda: len(oneway_subscribes(self.fake)) == 1))
            self.assertEqual(oneway_subscribes(self.fake)[0]["params"], {"events": ["again.*", "mediator.*", "other.x"]})
            self.assertEqual(everything.get(timeout=10).name, "mediator.reregister")
            self.fake.send_to_all({"event": "again.one"})
            self.assertEqual(sub.get(timeout=10).name, "again.one")
            self.assertTrue(client.is_connected)

    def test_a_call_in_flight_fails_with_component_unavailable_and_the_connection_stays(self):
        with mediator.Client(self.fake.socket, timeout=10) as client:
            outcome = []

            def call():
                try:
                    outcome.append(client.call("Lost", "wait"))
                except mediator.MediatorError as e:
                    outcome.append(e)
            thread = threading.Thread(target=call)
            thread.start()
            self.assertTrue(wait_until(lambda: any(m.get("target") == "Lost" for m in self.fake.received)))
            self.fake.send_to_all(REREGISTER)
            thread.join(10)
            self.assertEqual(getattr(outcome[0], "code", outcome), "component_unavailable")
            client.ping()
            self.assertEqual(len(self.fake.connections), 1)

    def test_a_client_without_subscriptions_sends_nothing(self):
        with mediator.Client(self.fake.socket, timeout=10) as client:
            self.fake.send_to_all(REREGISTER)
            try:
                client.ping()  # after the event: it was read
            except mediator.MediatorError as e:
                # Sent before the event was read: failed with the calls the daemon lost.
                self.assertEqual(e.code, "component_unavailable")
                client.ping()
            self.assertEqual(oneway_subscribes(self.fake), [])

    def test_an_asyncio_service_and_client_do_the_same(self):
        async def main():
            service = aio.Service("AgainAio")
            service.action("noop")(lambda params, ctx: {})
            registered = asyncio.Event()
            task = asyncio.ensure_future(service.run(socket=self.fake.socket, on_registered=registered.set))
            client = await aio.connect(self.fake.socket, timeout=10)
            try:
                await asyncio.wait_for(registered.wait(), 10)
                sub = await client.subscribe(["again.*"])
                self.fake.send_to_all(REREGISTER)
                for _ in range(500):
                    if len(registers(self.fake)) == 2 and len(oneway_subscribes(self.fake)) == 1:
                        break
                    await asyncio.sleep(0.02)
                self.assertEqual([m["params"]["target"] for m in registers(self.fake)], ["AgainAio", "AgainAio"])
                self.assertEqual(oneway_subscribes(self.fake)[0]["params"], {"events": ["again.*"]})
                self.fake.send_to_all({"event": "again.two"})
                self.assertEqual((await sub.get(timeout=10)).name, "again.two")
            finally:
                await client.close()
                service.stop()
                await asyncio.wait_for(task, 10)
        self.run_async(main())

    def test_a_failed_register_again_closes_the_connection_to_connect_again(self):
        service = mediator.Service("Refused")
        service.action("noop")(lambda params, ctx: {})
        with ServiceThread(service, self.fake.socket):
            # The next register is refused ...
            self.fake.own_actions = ("hello", "unregister", "ping")

            def refuse(message, send):
                if message.get("action") == "register":
                    self.fake.own_actions = support.DAEMON_ACTIONS  # ... and only that one
                    send({"id": message["id"], "error": {"code": "conflict", "message": "taken"}})
            self.fake.on_message = refuse
            self.fake.send_to_all(REREGISTER)
            # so the connection goes, and a new one registers.
            self.assertTrue(wait_until(lambda: len(self.fake.connections) == 2, timeout=20))
            self.assertTrue(wait_until(lambda: len(registers(self.fake)) == 3, timeout=20))


@unittest.skipUnless(HAVE_DAEMON, NO_DAEMON)
class RestartingTests(DaemonTestCase):
    def test_a_service_and_a_client_retry_quickly_after_a_graceful_stop(self):
        service = mediator.Service("Quick")
        service.action("noop")(lambda params, ctx: {})
        service_log = logging.getLogger("test.restarting.service")
        client_log = logging.getLogger("test.restarting.client")
        service.log = service_log
        with self.assertLogs(service_log, logging.WARNING) as service_lines, \
                self.assertLogs(client_log, logging.DEBUG) as client_lines:
            running = ServiceThread(service, self.socket_path).start()
            self.addCleanup(running.stop)
            client = self.connect(reconnect=True, logger=client_log)
            self.addCleanup(client.close)
            self.daemon.stop()  # SIGTERM: mediator.restarting, then EOF
            quick = "%.3g s" % RESTART_RETRY_INTERVAL
            self.assertTrue(wait_until(lambda: any(quick in line for line in service_lines.output)
                                       and any("next try in " + quick in line for line in client_lines.output)),
                            service_lines.output + client_lines.output)
            self.daemon.start()
            self.assertTrue(wait_until(lambda: self._answers(client)), service_lines.output[-5:] + client_lines.output[-5:])
            self.assertEqual(client.call("Quick", "noop"), {})

    def test_the_asyncio_service_and_client_retry_quickly_too(self):
        async def main():
            service = aio.Service("QuickAio")
            service.action("noop")(lambda params, ctx: {})
            service.log = logging.getLogger("test.restarting.aio.service")
            client_log = logging.getLogger("test.restarting.aio.client")
            with self.assertLogs(service.log, logging.WARNING) as service_lines, \
                    self.assertLogs(client_log, logging.DEBUG) as client_lines:
                registered = asyncio.Event()
                task = asyncio.ensure_future(service.run(socket=self.socket_path, on_registered=registered.set))
                client = await aio.connect(self.socket_path, timeout=10, reconnect=True, logger=client_log)
                try:
                    await asyncio.wait_for(registered.wait(), 10)
                    await asyncio.get_running_loop().run_in_executor(None, self.daemon.stop)
                    quick = "%.3g s" % RESTART_RETRY_INTERVAL
                    for _ in range(500):
                        if any(quick in line for line in service_lines.output) and \
                                any("next try in " + quick in line for line in client_lines.output):
                            break
                        await asyncio.sleep(0.02)
                    self.assertTrue(any(quick in line for line in service_lines.output), service_lines.output)
                    self.assertTrue(any("next try in " + quick in line for line in client_lines.output),
                                    client_lines.output)
                    await asyncio.get_running_loop().run_in_executor(None, self.daemon.start)
                    for _ in range(500):
                        try:
                            self.assertEqual(await client.call("QuickAio", "noop", timeout=1), {})
                            break
                        except mediator.MediatorError:
                            await asyncio.sleep(0.02)
                    self.assertEqual(await client.call("QuickAio", "noop", timeout=10), {})
                finally:
                    await client.close()
                    service.stop()
                    await asyncio.wait_for(task, 10)
        asyncio.run(asyncio.wait_for(main(), 60))

    def _answers(self, client):
        try:
            client.call("Quick", "noop", timeout=1)
            return True
        except mediator.MediatorError:
            return False


if __name__ == "__main__":
    unittest.main()


class ReexecTests(DaemonTestCase):
    def test_a_service_and_a_client_see_nothing_of_a_reexec(self):
        service = mediator.Service("Steady")
        service.action("noop")(lambda params, ctx: {})
        running = ServiceThread(service, self.socket_path).start()
        self.addCleanup(running.stop)
        client = self.connect()
        self.addCleanup(client.close)
        sub = client.subscribe(["steady.*"])
        def instances():
            return [t["instances"] for t in client.call("mediator", "list")["targets"]]
        before = instances()
        for n in (1, 2):
            self.assertEqual(client.call("mediator", "reexec", timeout=20)["reexecs"], n)
            self.assertEqual(client.call("Steady", "noop"), {})
        # The same registration (instance), the same connection, the subscription kept.
        self.assertEqual(instances(), before)
        client.call("mediator", "publish", {"event": "steady.one"})
        self.assertEqual(sub.get(timeout=10).name, "steady.one")
        self.assertTrue(client.is_connected)


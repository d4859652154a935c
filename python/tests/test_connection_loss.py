"""Connection loss is visible: subscriptions raise `disconnected` saying why
when the daemon is lost, end normally when closed; wait_until_closed()."""
import asyncio
import threading
import unittest

from support import DaemonTestCase

import mediator
import mediator.aio as aio


class SyncConnectionLossTests(DaemonTestCase):
    def test_a_lost_daemon_ends_the_subscription_with_disconnected(self):
        client = self.connect()
        sub = client.subscribe(["loss.*"])
        iterated = client.subscribe(["loss.*"])
        self.assertEqual(client.publish("loss.one"), 1)
        self.daemon.stop()
        self.assertEqual(sub.get(timeout=10).name, "loss.one")  # what came before is still read
        with self.assertRaises(mediator.MediatorError) as caught:
            sub.get(timeout=10)
        self.assertEqual(caught.exception.code, "disconnected")
        self.assertIn("the daemon closed the connection", caught.exception.message)
        self.assertTrue(sub.closed)
        self.assertIs(sub.error, caught.exception)
        with self.assertRaises(mediator.MediatorError):  # and again: it stays ended with the error
            sub.get(timeout=10)
        with self.assertRaises(mediator.MediatorError) as iterating:
            for _ in iterated:
                pass
        self.assertEqual(iterating.exception.code, "disconnected")
        reason = client.wait_until_closed(10)
        self.assertEqual((reason.code, reason.message), ("disconnected", "the daemon closed the connection"))

    def test_closing_ends_the_subscription_normally(self):
        client = self.connect()
        unsubscribed = client.subscribe(["quiet.*"])
        closed_with_client = client.subscribe(["quiet.*"])
        self.assertIsNone(client.wait_until_closed(0.01))  # still open
        unsubscribed.close()
        self.assertEqual(list(unsubscribed), [])
        client.close()
        self.assertEqual(list(closed_with_client), [])
        self.assertIsNone(closed_with_client.get(timeout=1))
        self.assertIsNone(closed_with_client.error)
        self.assertIsNone(client.wait_until_closed(10))

    def test_wait_until_closed_wakes_on_close(self):
        client = self.connect()
        reasons = []
        waiter = threading.Thread(target=lambda: reasons.append(client.wait_until_closed(20)), daemon=True)
        waiter.start()
        client.close()
        waiter.join(10)
        self.assertEqual(reasons, [None])


class AioConnectionLossTests(DaemonTestCase):
    def run_async(self, coroutine, timeout=60):
        return asyncio.run(asyncio.wait_for(coroutine, timeout))

    def test_a_lost_daemon_ends_the_subscription_with_disconnected(self):
        async def main():
            client = await aio.connect(self.socket, timeout=10)
            try:
                sub = await client.subscribe(["loss.*"])
                waiting = asyncio.ensure_future(client.wait_until_closed())
                await asyncio.get_running_loop().run_in_executor(None, self.daemon.stop)
                with self.assertRaises(mediator.MediatorError) as caught:
                    async for _ in sub:
                        pass
                self.assertEqual((caught.exception.code, caught.exception.message),
                                 ("disconnected", "the daemon closed the connection"))
                with self.assertRaises(mediator.MediatorError):
                    await sub.get(timeout=10)
                reason = await asyncio.wait_for(waiting, 10)
                self.assertIs(reason, caught.exception)
            finally:
                await client.close()
        self.run_async(main())

    def test_closing_ends_the_subscription_normally(self):
        async def main():
            client = await aio.connect(self.socket, timeout=10)
            unsubscribed = await client.subscribe(["quiet.*"])
            closed_with_client = await client.subscribe(["quiet.*"])
            waiting = asyncio.ensure_future(client.wait_until_closed())
            unsubscribed.close()
            self.assertEqual([e async for e in unsubscribed], [])
            await client.close()
            self.assertEqual([e async for e in closed_with_client], [])
            self.assertIsNone(await closed_with_client.get(timeout=1))
            self.assertIsNone(await asyncio.wait_for(waiting, 10))
        self.run_async(main())


if __name__ == "__main__":
    unittest.main()

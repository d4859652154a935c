"""The package logs through `logging` (loggers under "mediator"), or through
the logger given to connect/Client/Service."""
import asyncio
import logging
import unittest

from support import DaemonTestCase

import mediator
import mediator.aio as aio


class LoggingTests(DaemonTestCase):
    def test_the_default_loggers_are_below_mediator(self):
        svc = mediator.Service("Quiet")
        self.assertEqual(svc.log.name, "mediator.service")
        self.assertEqual(aio.Service("Quiet").log.name, "mediator.aio.service")
        self.assertEqual(self.connect().log.name, "mediator.client")
        self.assertEqual(aio.log.name, "mediator.aio.client")

    def test_a_service_logs_through_the_logger_it_is_given(self):
        logger = logging.getLogger("app.notes")
        svc = mediator.Service("Logged", logger=logger)

        @svc.action("boom")
        def boom(params, ctx):
            raise ValueError("bad amount")
        with self.assertLogs(logger, "INFO") as logged:
            self.serve(svc)
            with self.assertRaises(mediator.MediatorError):
                self.connect().call("Logged", "boom")
            svc.graceful_shutdown(grace=1)
        text = "\n".join(logged.output)
        self.assertIn("registered Logged", text)
        self.assertIn("the handler of Logged.boom raised ValueError", text)
        self.assertIn("shutting down Logged: unregistering", text)
        self.assertTrue(all(r.name == "app.notes" for r in logged.records))

    def test_a_client_logs_a_lost_connection_through_its_logger(self):
        logger = logging.getLogger("app.client")
        with self.assertLogs(logger, "INFO") as logged:
            client = mediator.connect(self.socket, timeout=10, logger=logger)
            self.addCleanup(client.close)
            self.daemon.stop()
            self.assertIsNotNone(client.wait_until_closed(10))
        self.assertIn("lost the connection to %s: the daemon closed the connection" % self.socket,
                      "\n".join(logged.output))

    def test_an_asyncio_service_and_client_take_a_logger(self):
        logger = logging.getLogger("app.aio")

        async def main():
            svc = aio.Service("AioLogged", logger=logger)

            @svc.action("boom")
            async def boom(params, ctx):
                raise KeyError("k")
            ready = asyncio.Event()
            task = asyncio.ensure_future(svc.run(socket=self.socket, on_registered=ready.set))
            await asyncio.wait_for(ready.wait(), 10)
            async with await aio.connect(self.socket, timeout=10, logger=logger) as client:
                self.assertIs(client.log, logger)
                with self.assertRaises(mediator.MediatorError):
                    await client.call("AioLogged", "boom")
            await asyncio.wait_for(svc.graceful_shutdown(grace=1), 10)
            await task
        with self.assertLogs(logger, "INFO") as logged:
            asyncio.run(asyncio.wait_for(main(), 60))
        text = "\n".join(logged.output)
        self.assertIn("registered AioLogged", text)
        self.assertIn("the handler of AioLogged.boom raised KeyError", text)
        self.assertIn("shutting down AioLogged", text)


if __name__ == "__main__":
    unittest.main()

"""mediator.testing: the harness for testing against a real mediatord."""
import asyncio
import io
import os
import unittest
from unittest import mock

import support

import mediator
import mediator.aio as aio
from mediator import testing

if support.HAVE_DAEMON:  # the harness finds it as a user's tests would: $MEDIATORD
    os.environ.setdefault("MEDIATORD", support.MEDIATORD)


def echo_service(target="Echo"):
    svc = mediator.Service(target)
    svc.action("echo")(lambda params, ctx: params)
    return svc


class FindingTheDaemonTests(unittest.TestCase):
    def test_a_missing_binary_is_a_clear_error(self):
        with mock.patch.dict(os.environ, {"MEDIATORD": "", "PATH": ""}):
            with self.assertRaises(testing.DaemonNotFound) as caught:
                testing.find_mediatord()
        self.assertIn("needs the mediatord binary", str(caught.exception))
        self.assertIn("MEDIATORD", str(caught.exception))
        with self.assertRaises(testing.DaemonNotFound) as caught:
            testing.TestDaemon(binary=support.HERE)  # a folder, not a program
        self.assertIn(repr(support.HERE), str(caught.exception))

    def test_without_a_daemon_a_test_case_fails_or_skips_as_it_says(self):
        class Needs(testing.DaemonTestCase):
            def test_something(self):
                pass

        class Skips(Needs):
            skip_without_daemon = True
        with mock.patch.dict(os.environ, {"MEDIATORD": "", "PATH": ""}):
            for case, errors, skipped in ((Needs, 1, 0), (Skips, 0, 1)):
                result = unittest.TextTestRunner(stream=io.StringIO()).run(case("test_something"))
                self.assertEqual((len(result.errors), len(result.skipped)), (errors, skipped), case)


@unittest.skipUnless(support.HAVE_DAEMON, support.NO_DAEMON)
class TestDaemonTests(unittest.TestCase):
    def test_a_daemon_of_its_own_answers_then_goes_away_with_its_folder(self):
        with testing.TestDaemon() as daemon:
            with daemon.connect() as client:
                client.ping()
            process, folder = daemon.process, daemon.dir
            self.assertTrue(os.path.exists(daemon.socket_path))
        self.assertIsNotNone(process.poll())
        self.assertFalse(os.path.exists(folder))

    def test_a_daemon_that_exits_at_start_is_reported_with_its_log(self):
        daemon = testing.TestDaemon("--no-such-flag")
        with self.assertRaises(RuntimeError) as caught:
            with daemon:
                pass
        self.assertIn("mediatord exited", str(caught.exception))
        self.assertFalse(os.path.exists(daemon.dir))

    def test_a_service_thread_and_an_asyncio_service_task(self):
        with testing.TestDaemon() as daemon:
            with testing.ServiceThread(echo_service(), daemon.socket_path, grace=1) as running:
                with daemon.connect() as client:
                    self.assertEqual(client.call("Echo", "echo", {"a": 1}), {"a": 1})
            self.assertFalse(running.running)
            self.assertIsNone(running.error)

            async def main():
                svc = aio.Service("AioEcho")

                @svc.action("echo")
                async def echo(params, ctx):
                    return params
                task = await testing.start_service(svc, daemon.socket_path)
                async with await aio.connect(daemon.socket_path, timeout=10) as client:
                    self.assertEqual(await client.call("AioEcho", "echo", {"c": 3}), {"c": 3})
                await svc.graceful_shutdown(grace=1)
                await task
            asyncio.run(asyncio.wait_for(main(), 60))

    def test_a_service_that_cannot_register_is_reported(self):
        with testing.TestDaemon() as daemon:
            with testing.ServiceThread(echo_service(), daemon.socket_path, grace=1):
                with self.assertRaises(mediator.MediatorError) as caught:
                    testing.ServiceThread(echo_service(), daemon.socket_path).start()
                self.assertEqual(caught.exception.code, "already_registered")


class HarnessTestCaseTests(testing.DaemonTestCase):
    """The test case as a user of the package writes one."""

    skip_without_daemon = True

    def test_serve_and_connect(self):
        running = self.serve(echo_service())
        self.assertTrue(running.running)
        self.assertEqual(self.connect().call("Echo", "echo", {"b": 2}), {"b": 2})
        self.assertTrue(os.path.exists(self.socket_path))


if __name__ == "__main__":
    unittest.main()

"""The typed Notes example (Examples/python): its generated notes.py is what
`mediatorctl generate` writes today, and the typed component, the typed
client and the `mediator` package work together through the real mediatord."""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import support
from support import DaemonTestCase, wait_until

import mediator

EXAMPLES = os.path.join(support.REPO, "Examples", "python")
INTERFACE_FILE = os.path.join(EXAMPLES, "Notes.mediator.json")
COMPONENT = os.path.join(EXAMPLES, "notes_component.py")
TYPED_CLIENT = os.path.join(EXAMPLES, "typed_client.py")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)

import notes  # noqa: E402  (Examples/python/notes.py, generated)

HAVE_CTL = os.access(support.MEDIATORCTL, os.X_OK)


@unittest.skipUnless(HAVE_CTL, "mediatorctl not found at %s: run `swift build`" % support.MEDIATORCTL)
class GeneratedModuleTests(unittest.TestCase):
    def test_interface_file_is_valid(self):
        done = subprocess.run([support.MEDIATORCTL, "interface", "check", INTERFACE_FILE],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (0, "", ""))

    def test_committed_notes_py_is_what_generate_writes(self):
        with tempfile.TemporaryDirectory(prefix="medpy-gen-") as out:
            done = subprocess.run([support.MEDIATORCTL, "generate", "python", INTERFACE_FILE, "--output", out],
                                  capture_output=True, text=True, timeout=30)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["notes.py"])
            with open(os.path.join(out, "notes.py"), "rb") as f:
                fresh = f.read()
        with open(os.path.join(EXAMPLES, "notes.py"), "rb") as f:
            committed = f.read()
        self.assertTrue(fresh == committed,
                        "Examples/python/notes.py is stale: run `mediatorctl generate python "
                        "Examples/python/Notes.mediator.json --output Examples/python`")


class Component:
    """Examples/python/notes_component.py as a child process."""

    def __init__(self, test, socket, *arguments):
        self.proc = subprocess.Popen(
            [sys.executable, "-u", COMPONENT, "--socket", socket] + list(arguments),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.ready = threading.Semaphore(0)
        threading.Thread(target=self._read, daemon=True).start()
        test.addCleanup(self.kill)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.strip() == "ready":
                self.ready.release()

    def wait_ready(self, timeout=20.0):
        if not self.ready.acquire(timeout=timeout):
            self.kill()
            raise AssertionError("notes_component.py printed no ready line: %s" % self.proc.stderr.read())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()


class Broken(notes.NotesService):
    """A typed service whose `add` answers a result its interface does not allow."""

    def add(self, params, ctx):
        return notes.AddResult(id="seven")  # dataclasses do not check types; the daemon does

    def whoami(self, params, ctx):
        return notes.WhoamiResult(pid=os.getpid())


class TypedNotesTests(DaemonTestCase):
    def test_typed_client_and_typed_component(self):
        component = Component(self, self.socket)
        component.wait_ready()
        service = notes.NotesClient(self.connect())

        self.assertEqual(service.add(notes.AddParams(text="milk", tags=["shop"])), notes.AddResult(id=1))
        self.assertEqual(service.add(notes.AddParams(text="call Ann")).id, 2)
        listing = service.list()
        self.assertEqual(listing, notes.ListResult(notes=[notes.Note(id=1, text="milk", tags=["shop"]),
                                                         notes.Note(id=2, text="call Ann", tags=[])]))
        self.assertEqual(service.get(notes.GetParams(id=2)).text, "call Ann")
        self.assertEqual(service.get(notes.GetParams(id="1")).tags, ["shop"])  # a digit string, as URLs send
        with self.assertRaises(mediator.MediatorError) as caught:
            service.get(notes.GetParams(id=99))
        self.assertEqual(caught.exception.code, "not_found")
        self.assertEqual(service.whoami().pid, component.proc.pid)
        self.assertEqual(service.sleep(notes.SleepParams(ms=10)), notes.SleepResult(slept=10))
        echoed = service.echo({"a": [1, "two"]})
        self.assertEqual(echoed["a"], [1, "two"])
        self.assertEqual(echoed["caller"]["pid"], os.getpid())
        # An undeclared action reaches the typed not_found.
        client = self.connect()
        self.assertEqual(client.call("Notes", "zap", {"q": 1}), {"fallback": "zap", "params": {"q": 1}})
        # The daemon checks params against the interface: a missing text never reaches the component.
        with self.assertRaises(mediator.MediatorError) as caught:
            client.call("Notes", "add", {"tags": ["x"]})
        self.assertEqual(caught.exception.code, "invalid_params")

        # The example's typed client, as a user runs it.
        done = subprocess.run([sys.executable, TYPED_CLIENT, "--socket", self.socket, "buy bread", "--tag", "shop"],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("added note 3", done.stdout)
        self.assertIn("   3  buy bread [shop]", done.stdout)
        self.assertIn("   1  milk [shop]", done.stdout)
        self.assertIn("error not_found", done.stdout)

        component.proc.send_signal(signal.SIGTERM)
        self.assertEqual(component.proc.wait(10), 0)

    def test_sleep_cancelled_gets_no_answer_and_the_component_goes_on(self):
        component = Component(self, self.socket)
        component.wait_ready()
        service = notes.NotesClient(self.connect())
        with self.assertRaises(mediator.MediatorError) as caught:
            service.sleep(notes.SleepParams(ms=30000), timeout=0.3)
        self.assertEqual(caught.exception.code, "timeout")
        self.assertEqual(service.whoami().pid, component.proc.pid)

    def test_target_and_pool_mode_options(self):
        first = Component(self, self.socket, "--target", "Pool", "--mode", "pool")
        second = Component(self, self.socket, "--target", "Pool", "--mode", "pool")
        first.wait_ready()
        second.wait_ready()

        class PoolClient(notes.NotesClient):
            TARGET = "Pool"

        service = PoolClient(self.connect())
        pids = {service.whoami().pid for _ in range(20)}
        self.assertEqual(pids, {first.proc.pid, second.proc.pid})
        listed = {t["target"]: t for t in self.connect().call("mediator", "list")["targets"]}
        self.assertEqual(listed["Pool"]["mode"], "pool")
        self.assertEqual(listed["Pool"]["actions"], [a["name"] for a in notes.INTERFACE["actions"]])

    def test_exit_status_when_the_daemon_goes_away(self):
        component = Component(self, self.socket)
        component.wait_ready()
        self.daemon.stop()
        self.assertEqual(component.proc.wait(15), 1)
        self.assertIn("the daemon closed the connection", component.proc.stderr.read())

    def test_reconnect_registers_again_and_prints_ready(self):
        component = Component(self, self.socket, "--reconnect")
        component.wait_ready()
        self.daemon.stop()
        self.daemon.start()
        component.wait_ready()
        self.assertEqual(notes.NotesClient(self.connect()).whoami().pid, component.proc.pid)
        component.proc.send_signal(signal.SIGINT)
        self.assertEqual(component.proc.wait(10), 0)

    def test_a_result_breaking_the_interface_reaches_the_typed_caller_as_invalid_result(self):
        self.serve(notes.make_service(Broken()))
        service = notes.NotesClient(self.connect())
        with self.assertRaises(mediator.MediatorError) as caught:
            service.add(notes.AddParams(text="x"))
        self.assertEqual(caught.exception.code, "invalid_result")
        self.assertIn("result.id", caught.exception.message)
        self.assertEqual(service.whoami().pid, os.getpid())  # the call after it is answered as usual

    def test_make_service_registers_another_target_in_pool_mode_with_the_interface_specs(self):
        self.serve(notes.make_service(Broken(), target="Other", mode="pool"))
        described = self.connect().call("mediator", "describe", {"target": "Other"})
        self.assertEqual(described["mode"], "pool")
        self.assertEqual(described["description"], notes.INTERFACE["description"])
        self.assertEqual(described["actions"], notes.INTERFACE["actions"])
        with self.assertRaises(mediator.MediatorError) as caught:
            notes.NotesClient(self.connect()).whoami()
        self.assertEqual(caught.exception.code, "target_not_found")

    def test_a_generated_method_left_unimplemented_answers_not_implemented(self):
        self.serve(notes.make_service(Broken()))  # overrides add and whoami only
        with self.assertRaises(mediator.MediatorError) as caught:
            notes.NotesClient(self.connect()).list()
        self.assertEqual((caught.exception.code, caught.exception.message, caught.exception.data),
                         (mediator.NOT_IMPLEMENTED, "not implemented: Notes.list", {"type": "NotImplementedError"}))


if __name__ == "__main__":
    unittest.main()

"""A stand-in for the project's `mediator` package, with only the names the
generated modules use (contract section 3), recording what they do."""


class MediatorError(Exception):
    pass


SHUTDOWN_GRACE = 10.0


class FD:
    """A descriptor to send: the package writes {"$fd": I} in its place."""

    def __init__(self, source, close=False):
        self.source = source
        self.close = close


class ReceivedFD:
    """What the package gives for each {"$fd": I} of a message."""

    def __init__(self, fd):
        self.fd = fd


def serve(service, *, signals=None, grace=SHUTDOWN_GRACE, **run_kwargs):
    """Records what a generated module's serve() asked for."""
    served.append((service, grace, run_kwargs))


served = []


class CallContext:
    def __init__(self):
        self.partials = []

    def send_partial(self, value):
        self.partials.append(value)


class Client:
    """Answers each call with the next of `answers`; records what was sent."""

    def __init__(self, answers=()):
        self.answers = list(answers)
        self.sent = []

    def call(self, target, action, params=None, timeout=None):
        self.sent.append((target, action, params))
        return self.answers.pop(0)

    def stream(self, target, action, params=None, timeout=None):
        self.sent.append((target, action, params))
        while self.answers:
            yield self.answers.pop(0)

    def send(self, target, action, params=None):
        self.sent.append((target, action, params))


class Service:
    def __init__(self, target, description=None, mode="exclusive", actions=None):
        self.target = target
        self.description = description
        self.actions = actions
        self.handlers = {}

    def action(self, name, spec=None):
        def register(handler):
            self.handlers[name] = handler
            return handler

        return register

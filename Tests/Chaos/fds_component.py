#!/usr/bin/env python3
"""The chaos run's component that passes descriptors (issue 26): a pool
member of `ChaosFds`, with the Python package and `fds=True`.

    read    {"f": fd, "c", "n"}          -> {"content": what f holds, "copy": a new memfd holding it too}
    stream  {"f": fd, "count", "interval_ms"} -> partials {"i": k, "f": a memfd "part k"}, then
                                            {"done": true, "count": count, "content": what f holds}
    sleep   {"f": fd, "ms"}              -> {"slept": ms}, unless cancelled; holds f meanwhile

The package closes the descriptors a handler leaves open when it returns,
and those of answers it cannot send; the run counts this process's
descriptors at the end (/proc/PID/fd) against its count when idle.
"""
import argparse
import os
import signal
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "python")
if os.path.isdir(_PACKAGE) and _PACKAGE not in sys.path:
    sys.path.insert(0, _PACKAGE)

import mediator  # noqa: E402

#: The most a descriptor's content is read (the run sends short tags).
MAX_CONTENT = 4096


def content(handle):
    return os.pread(handle.fileno(), MAX_CONTENT, 0).decode("utf-8", "replace")


def make_service(target):
    service = mediator.Service(target, description="chaos: passes descriptors", mode="pool")

    @service.action("read")
    def read(params, ctx):
        with params["f"] as handle:
            text = content(handle)
        return {"content": text, "copy": mediator.FD(mediator.memfd_from_bytes(text.encode()), close=True)}

    @service.action("stream")
    def stream(params, ctx):
        for i in range(1, params["count"] + 1):
            if ctx.cancelled.wait(params["interval_ms"] / 1000):
                return None  # not sent: the call is over
            ctx.send_partial({"i": i, "f": mediator.FD(mediator.memfd_from_bytes(b"part %d" % i), close=True)})
        with params["f"] as handle:
            return {"done": True, "count": params["count"], "content": content(handle)}

    @service.action("sleep")
    def sleep(params, ctx):
        ctx.cancelled.wait(max(params["ms"], 0) / 1000)  # holding params["f"]
        return {"slept": params["ms"]}
    return service


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--target", default="ChaosFds")
    args = parser.parse_args()
    service = make_service(args.target)
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    service.run(socket=args.socket, reconnect=False, fds=True, on_registered=lambda: print("ready", flush=True))


if __name__ == "__main__":
    main()

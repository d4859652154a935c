"""Where the daemon's socket is (PROTOCOL.md section 1)."""
import os
from typing import Mapping, Optional

from .errors import UNREACHABLE, MediatorError

SYSTEM_SOCKET = "/run/mediator/mediator.sock"


def socket_path(explicit: Optional[str] = None, user: bool = False,
                environ: Optional[Mapping[str, str]] = None) -> str:
    """An explicit path (like `--socket`) wins; then `$MEDIATOR_SOCKET`; then,
    with `user=True`, `$XDG_RUNTIME_DIR/mediator/mediator.sock`; else the
    system instance's `/run/mediator/mediator.sock`. `user=True` without
    `$XDG_RUNTIME_DIR` raises MediatorError (`unreachable`), never the
    system socket instead, as `systemctl --user` refuses."""
    env = os.environ if environ is None else environ
    if explicit:
        return os.fspath(explicit)
    if env.get("MEDIATOR_SOCKET"):
        return env["MEDIATOR_SOCKET"]
    if not user:
        return SYSTEM_SOCKET
    if not env.get("XDG_RUNTIME_DIR"):
        raise MediatorError(UNREACHABLE, "user=True: $XDG_RUNTIME_DIR not set: the user instance's socket is "
                            "$XDG_RUNTIME_DIR/mediator/mediator.sock; run from a login session (which sets it) "
                            "or pass socket=PATH")
    return os.path.join(env["XDG_RUNTIME_DIR"], "mediator", "mediator.sock")

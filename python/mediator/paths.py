"""Where the daemon's socket is (PROTOCOL.md section 1)."""
import os
from typing import Mapping, Optional

SYSTEM_SOCKET = "/run/mediator/mediator.sock"


def socket_path(explicit: Optional[str] = None, user: bool = False,
                environ: Optional[Mapping[str, str]] = None) -> str:
    """An explicit path (like `--socket`) wins; then `$MEDIATOR_SOCKET`; then,
    with `user=True`, `$XDG_RUNTIME_DIR/mediator/mediator.sock`; else the
    system instance's `/run/mediator/mediator.sock`."""
    env = os.environ if environ is None else environ
    if explicit:
        return os.fspath(explicit)
    if env.get("MEDIATOR_SOCKET"):
        return env["MEDIATOR_SOCKET"]
    if user and env.get("XDG_RUNTIME_DIR"):
        return os.path.join(env["XDG_RUNTIME_DIR"], "mediator", "mediator.sock")
    return SYSTEM_SOCKET

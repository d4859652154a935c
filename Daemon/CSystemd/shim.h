// The parts of libsystemd that mediatord uses: sd-daemon (socket
// activation, readiness, watchdog) and sd-journal (structured logging).
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

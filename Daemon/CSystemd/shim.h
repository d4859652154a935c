// The parts of libsystemd that mediatord uses: sd-daemon (socket
// activation, readiness, watchdog), sd-journal (structured logging),
// sd-bus (starting and stopping component units through systemd's D-Bus API)
// and sd-event (the loop that owns the sockets which carry descriptors; its
// cross-thread wake-up is an eventfd), and epoll for LineServer's set of
// connections.
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <string.h>

// Calls org.freedesktop.systemd1.Manager.METHOD(unit, "replace") on BUS, for
// METHOD "StartUnit" or "StopUnit", which both take (s name, s mode) and
// return the queued job's object path. `sd_bus_call_method` is variadic and
// cannot be called from Swift: this is a fixed-arity wrapper.
//
// Returns >= 0 when systemd queued the job; then *job_path (if job_path is not
// NULL) is the job's object path, to free(). Returns a negative errno-style
// code otherwise; then *error_name and *error_message are the D-Bus error's
// name and message (either may be NULL: free() them). The call never asks for
// interactive authorization.
static inline int mediator_manage_unit(sd_bus *bus, const char *method, const char *unit,
                                       char **job_path, char **error_name, char **error_message) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    if (job_path) *job_path = NULL;
    *error_name = NULL;
    *error_message = NULL;
    int r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", method, &error, &reply,
                               "ss", unit, "replace");
    if (r < 0) {
        if (error.name) *error_name = strdup(error.name);
        if (error.message) *error_message = strdup(error.message);
    } else if (job_path) {
        const char *path = NULL;
        if (sd_bus_message_read(reply, "o", &path) >= 0 && path) *job_path = strdup(path);
    }
    sd_bus_message_unref(reply);
    sd_bus_error_free(&error);
    return r;
}

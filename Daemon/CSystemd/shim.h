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
#include <errno.h>
#include <stdint.h>

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

// The type of the job systemd runs now for the unit of process PID
// (org.freedesktop.systemd1.Manager.GetUnitByPID, then the unit's `Job`
// property, then the job's `JobType`): "restart", "stop", ... The daemon asks
// at SIGTERM whether it is being restarted or stopped (issue 28).
// `sd_bus_call_method` and `sd_bus_message_read` are variadic: wrapped here.
//
// Returns >= 0 on an answer; then *job_type is the type (to free()), or NULL
// when the unit has no job. Returns a negative errno-style code otherwise, with
// *error_message the D-Bus error's message when there was one (to free()).
static inline int mediator_unit_job_type(sd_bus *bus, unsigned pid, char **job_type, char **error_message) {
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    char *unit_path = NULL;
    *job_type = NULL;
    *error_message = NULL;
    int r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnitByPID", &error, &reply, "u", pid);
    if (r >= 0) {
        const char *path = NULL;
        r = sd_bus_message_read(reply, "o", &path);
        if (r >= 0 && path) unit_path = strdup(path);
        if (r >= 0 && !unit_path) r = -ENOMEM;
    }
    reply = sd_bus_message_unref(reply);
    char *job_path = NULL;
    uint32_t job_id = 0;
    if (r >= 0) {
        r = sd_bus_get_property(bus, "org.freedesktop.systemd1", unit_path, "org.freedesktop.systemd1.Unit", "Job",
                                &error, &reply, "(uo)");
        if (r >= 0) {
            const char *path = NULL;
            r = sd_bus_message_read(reply, "(uo)", &job_id, &path);
            if (r >= 0 && job_id != 0 && path) job_path = strdup(path);
            if (r >= 0 && job_id != 0 && !job_path) r = -ENOMEM;
        }
        reply = sd_bus_message_unref(reply);
    }
    if (r >= 0 && job_id != 0) {
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", job_path, "org.freedesktop.systemd1.Job",
                                       "JobType", &error, job_type);
    }
    if (r < 0 && error.message) *error_message = strdup(error.message);
    free(unit_path);
    free(job_path);
    sd_bus_error_free(&error);
    return r < 0 ? r : 0;
}

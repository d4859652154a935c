/* echo-service: the D-Bus side's component. Owns org.mediator.Bench on the
 * bus at --address and answers org.mediator.Bench.Echo(s) -> s with the
 * string it got, through sd-bus (libsystemd) as a typical C service would.
 * Prints "ready" once the name is owned; exits when the bus goes away or on
 * SIGTERM/SIGINT. */
#define _GNU_SOURCE
#include <getopt.h>
#include <systemd/sd-bus.h>

#include "bench-common.h"

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
        (void) sig;
        stop_requested = 1;
}

static int method_echo(sd_bus_message *call, void *userdata, sd_bus_error *error) {
        const char *text;
        int r;
        (void) userdata;
        (void) error;
        r = sd_bus_message_read(call, "s", &text);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(call, "s", text);
}

static const sd_bus_vtable echo_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD(BENCH_METHOD, "s", "s", method_echo, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "address", required_argument, NULL, 'a' },
                { 0 },
        };
        const char *address = NULL;
        int opt, r;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                if (opt != 'a') {
                        fprintf(stderr, "usage: echo-service --address unix:path=SOCKET\n");
                        return 2;
                }
                address = optarg;
        }
        if (!address) {
                fprintf(stderr, "echo-service: --address is required\n");
                return 2;
        }
        die_with_parent();
        struct sigaction action = { .sa_handler = on_stop_signal };
        sigaction(SIGTERM, &action, NULL);
        sigaction(SIGINT, &action, NULL);

        sd_bus *bus = NULL;
        if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_address(bus, address)) < 0
            || (r = sd_bus_set_bus_client(bus, 1)) < 0 || (r = sd_bus_start(bus)) < 0) {
                fprintf(stderr, "echo-service: cannot connect to %s: %s\n", address, strerror(-r));
                return 1;
        }
        r = sd_bus_add_object_vtable(bus, NULL, BENCH_OBJECT_PATH, BENCH_INTERFACE, echo_vtable, NULL);
        if (r < 0) {
                fprintf(stderr, "echo-service: cannot export the object: %s\n", strerror(-r));
                return 1;
        }
        r = sd_bus_request_name(bus, BENCH_SERVICE_NAME, 0);
        if (r < 0) {
                fprintf(stderr, "echo-service: cannot own %s: %s\n", BENCH_SERVICE_NAME, strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);

        while (!stop_requested) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break; /* the bus went away: the run is over */
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        break;
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}

/* idle-connections: opens --count connections to a bus and holds them idle,
 * so that the bus's memory per connection can be read from its RSS.
 *
 *   --dbus unix:path=SOCKET   each connection authenticates and says Hello
 *                             (sd-bus), so the bus holds a full peer
 *   --mediator SOCKET         each connection sends mediatord a `ping`
 *                             and reads the answer
 *
 * Connections are opened one after another, each finished before the next
 * (neither bus sees more than one unauthenticated peer at once). Prints
 * "held N" when all are open, then waits until stdin closes, SIGTERM, or
 * --hold seconds, and exits (closing them all). */
#define _GNU_SOURCE
#include <getopt.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>

#include "bench-common.h"

static int open_dbus(const char *address, sd_bus **out) {
        sd_bus *bus = NULL;
        const char *unique;
        int r;
        if ((r = sd_bus_new(&bus)) < 0)
                return r;
        if ((r = sd_bus_set_address(bus, address)) < 0 || (r = sd_bus_set_bus_client(bus, 1)) < 0
            || (r = sd_bus_start(bus)) < 0
            /* Blocks until the Hello reply has come: the bus holds a named peer. */
            || (r = sd_bus_get_unique_name(bus, &unique)) < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *out = bus;
        return 0;
}

static int open_mediator(const char *path, int *out) {
        static const char ping[] = "{\"id\":1,\"target\":\"mediator\",\"action\":\"ping\"}\n";
        struct sockaddr_un address = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof address.sun_path)
                return -ENAMETOOLONG;
        strcpy(address.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct timeval timeout = { .tv_sec = 5 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        if (connect(fd, (struct sockaddr *) &address, sizeof address) < 0
            || write(fd, ping, sizeof ping - 1) != (ssize_t) (sizeof ping - 1)) {
                int error = errno ? errno : EIO;
                close(fd);
                return -error;
        }
        /* The answer is one line; anything but a result (an `overloaded` line, a close) is a failure. */
        char line[512];
        size_t used = 0;
        while (used < sizeof line - 1) {
                ssize_t n = read(fd, line + used, sizeof line - 1 - used);
                if (n <= 0) {
                        close(fd);
                        return n == 0 ? -ECONNRESET : -errno;
                }
                used += (size_t) n;
                line[used] = '\0';
                if (memchr(line, '\n', used))
                        break;
        }
        if (!strstr(line, "\"result\"")) {
                fprintf(stderr, "idle-connections: mediatord answered: %s", line);
                close(fd);
                return -EPROTO;
        }
        *out = fd;
        return 0;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "dbus", required_argument, NULL, 'd' },
                { "mediator", required_argument, NULL, 'm' },
                { "count", required_argument, NULL, 'c' },
                { "hold", required_argument, NULL, 'h' },
                { 0 },
        };
        const char *dbus_address = NULL, *mediator_path = NULL;
        long count = 10000;
        double hold_seconds = 120;
        int opt;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                switch (opt) {
                case 'd': dbus_address = optarg; break;
                case 'm': mediator_path = optarg; break;
                case 'c': count = atol(optarg); break;
                case 'h': hold_seconds = atof(optarg); break;
                default:
                        fprintf(stderr, "usage: idle-connections (--dbus ADDRESS | --mediator SOCKET) [--count N] [--hold S]\n");
                        return 2;
                }
        }
        if ((!dbus_address == !mediator_path) || count <= 0 || hold_seconds <= 0) {
                fprintf(stderr, "idle-connections: give one of --dbus or --mediator, and a positive --count\n");
                return 2;
        }
        die_with_parent();
        signal(SIGPIPE, SIG_IGN);
        long limit = raise_fd_limit(count + 64);
        if (limit < count + 16) {
                fprintf(stderr, "idle-connections: only %ld file descriptors allowed; need %ld\n", limit, count + 16);
                return 1;
        }

        sd_bus **buses = dbus_address ? calloc((size_t) count, sizeof(sd_bus *)) : NULL;
        int *fds = mediator_path ? calloc((size_t) count, sizeof(int)) : NULL;
        if (!buses && !fds)
                return 1;
        uint64_t begin = now_ns();
        for (long i = 0; i < count; i++) {
                int r = dbus_address ? open_dbus(dbus_address, &buses[i]) : open_mediator(mediator_path, &fds[i]);
                if (r < 0) {
                        fprintf(stderr, "idle-connections: connection %ld of %ld failed: %s\n", i + 1, count, strerror(-r));
                        return 1;
                }
        }
        printf("held %ld %.3f\n", count, (double) (now_ns() - begin) / 1e9);
        fflush(stdout);

        /* Hold until told (stdin closes) or the bound passes. */
        struct pollfd input = { .fd = STDIN_FILENO, .events = POLLIN };
        uint64_t deadline = now_ns() + (uint64_t) (hold_seconds * 1e9);
        char scratch[64];
        while (now_ns() < deadline) {
                int ready = poll(&input, 1, 200);
                if (ready > 0 && read(STDIN_FILENO, scratch, sizeof scratch) <= 0)
                        break;
        }
        return 0;
}

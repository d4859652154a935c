/* journal-sink: a stand-in for journald's socket. dbus-broker-launch aborts
 * at start without a datagram socket at /run/systemd/journal/socket, and
 * both it and dbus-broker log there; this binds PATH and discards what
 * arrives (reading it, so that a logging broker never blocks on a full
 * queue). Started inside a private mount namespace with a tmpfs on
 * /run/systemd, so the host's /run is never touched. */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/un.h>

#include "bench-common.h"

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: journal-sink PATH\n");
                return 2;
        }
        die_with_parent();
        struct sockaddr_un address = { .sun_family = AF_UNIX };
        if (strlen(argv[1]) >= sizeof address.sun_path) {
                fprintf(stderr, "journal-sink: path too long\n");
                return 2;
        }
        strcpy(address.sun_path, argv[1]);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &address, sizeof address) < 0) {
                fprintf(stderr, "journal-sink: cannot bind %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        char buffer[65536];
        for (;;)
                if (recv(fd, buffer, sizeof buffer, 0) < 0 && errno != EINTR)
                        return 1;
}

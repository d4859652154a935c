/* echo-client: calls org.mediator.Bench.Echo(s) through a D-Bus bus with
 * sd-bus (libsystemd) in one of mediator-bench's three shapes, and prints
 * one result as JSON with mediator-bench's field names (ShapeResult):
 *
 *   latency      1 connection, 1 call in flight: --warmup calls, then
 *                --calls timed calls (sd_bus_call_method, blocking)
 *   pipelined    1 connection, --in-flight calls outstanding
 *                (sd_bus_call_async; each reply's callback sends the next);
 *                answers counted for --duration s after --warmup answers
 *   connections  --connections threads, each with its own connection and
 *                1 call in flight; --warmup/connections calls each, a
 *                barrier, then --duration s
 *
 * Every phase gives up at --time-limit seconds. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <systemd/sd-bus.h>

#include "bench-common.h"

typedef enum { SHAPE_LATENCY, SHAPE_PIPELINED, SHAPE_CONNECTIONS } Shape;
static const char *const shape_names[] = { "latency", "pipelined", "connections" };

typedef struct Settings {
        const char *address;
        Shape shape;
        long calls;
        long warmup;
        double duration;
        int in_flight;
        int connections;
        int payload_bytes;
        double time_limit;
} Settings;

static const uint64_t call_timeout_usec = 5 * 1000000ull;

static int open_bus(const char *address, sd_bus **out) {
        sd_bus *bus = NULL;
        int r;
        if ((r = sd_bus_new(&bus)) < 0)
                return r;
        if ((r = sd_bus_set_address(bus, address)) < 0 || (r = sd_bus_set_bus_client(bus, 1)) < 0
            || (r = sd_bus_set_method_call_timeout(bus, call_timeout_usec)) < 0 || (r = sd_bus_start(bus)) < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *out = bus;
        return 0;
}

/* One blocking call; checks that the echo is the payload. */
static int echo_call(sd_bus *bus, const char *payload, char *why, size_t why_size) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *echoed;
        int r = sd_bus_call_method(bus, BENCH_SERVICE_NAME, BENCH_OBJECT_PATH, BENCH_INTERFACE, BENCH_METHOD,
                                   &error, &reply, "s", payload);
        if (r < 0) {
                snprintf(why, why_size, "call failed: %s", error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "s", &echoed);
        if (r >= 0 && strcmp(echoed, payload) != 0)
                r = -EBADMSG;
        if (r < 0)
                snprintf(why, why_size, "bad answer: %s", strerror(-r));
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

static void print_result(const Settings *s, int connections, int in_flight, long measured, long total,
                         double seconds, Samples *latency, int stopped_by_time_limit) {
        printf("{\"shape\":\"%s\",\"connections\":%d,\"inFlightPerConnection\":%d,\"measuredCalls\":%ld,"
               "\"totalCalls\":%ld,\"seconds\":%.6f,\"callsPerSecond\":%.3f,",
               shape_names[s->shape], connections, in_flight, measured, total, seconds,
               seconds > 0 ? (double) measured / seconds : 0.0);
        if (latency)
                print_latency_json(stdout, latency);
        else
                printf("\"latencyMicros\":null");
        printf(",\"stoppedByTimeLimit\":%s}\n", stopped_by_time_limit ? "true" : "false");
}

/* Shape 1 */
static int run_latency(const Settings *s, const char *payload) {
        sd_bus *bus;
        char why[256] = "";
        int r = open_bus(s->address, &bus);
        if (r < 0) {
                fprintf(stderr, "echo-client: cannot connect to %s: %s\n", s->address, strerror(-r));
                return 1;
        }
        Samples samples = { 0 };
        uint64_t hard_deadline = now_ns() + (uint64_t) (s->time_limit * 1e9);
        long total = 0, measured = 0;
        int stopped = 0;
        for (long i = 0; i < s->warmup && !stopped; i++, total++) {
                if (echo_call(bus, payload, why, sizeof why) < 0)
                        goto failed;
                if ((i & 255) == 255 && now_ns() >= hard_deadline)
                        stopped = 1;
        }
        uint64_t start = now_ns();
        while (!stopped && measured < s->calls) {
                uint64_t t0 = now_ns();
                if (echo_call(bus, payload, why, sizeof why) < 0)
                        goto failed;
                uint64_t t1 = now_ns();
                total++;
                if (samples_add(&samples, t1 - t0) < 0) {
                        snprintf(why, sizeof why, "out of memory");
                        goto failed;
                }
                measured++;
                if ((measured & 255) == 0 && t1 >= hard_deadline)
                        stopped = 1;
        }
        print_result(s, 1, 1, measured, total, (double) (now_ns() - start) / 1e9, &samples, stopped);
        sd_bus_flush_close_unref(bus);
        return 0;
failed:
        fprintf(stderr, "echo-client (latency): %s\n", why);
        return 1;
}

/* Shape 2 */
typedef struct Pipeline {
        const Settings *settings;
        sd_bus *bus;
        const char *payload;
        long sent;
        long received;
        uint64_t hard_deadline;
        uint64_t measure_start;
        long measure_start_received;
        uint64_t measure_end;
        long measure_end_received;
        int measuring;
        int draining;
        int stopped_by_time_limit;
        int failed;
        char why[256];
} Pipeline;

static int pipeline_send(Pipeline *p);

static int on_echo_reply(sd_bus_message *reply, void *userdata, sd_bus_error *unused) {
        Pipeline *p = userdata;
        const char *echoed;
        (void) unused;
        p->received++;
        if (sd_bus_message_is_method_error(reply, NULL)) {
                const sd_bus_error *error = sd_bus_message_get_error(reply);
                snprintf(p->why, sizeof p->why, "call failed: %s", error && error->message ? error->message : "?");
                p->failed = 1;
                return 0;
        }
        if (sd_bus_message_read(reply, "s", &echoed) < 0 || strcmp(echoed, p->payload) != 0) {
                snprintf(p->why, sizeof p->why, "bad answer");
                p->failed = 1;
                return 0;
        }
        if (p->draining)
                return 0;
        uint64_t now = now_ns();
        if (!p->measuring && p->received >= p->settings->warmup) {
                p->measuring = 1;
                p->measure_start = now;
                p->measure_start_received = p->received;
        }
        int duration_over = p->measuring && now >= p->measure_start + (uint64_t) (p->settings->duration * 1e9);
        if (duration_over || now >= p->hard_deadline) {
                p->stopped_by_time_limit = !duration_over;
                p->draining = 1;
                p->measure_end = now;
                p->measure_end_received = p->received;
                return 0;
        }
        return pipeline_send(p);
}

static int pipeline_send(Pipeline *p) {
        /* A floating slot (NULL): sd-bus frees it after the reply. */
        int r = sd_bus_call_method_async(p->bus, NULL, BENCH_SERVICE_NAME, BENCH_OBJECT_PATH, BENCH_INTERFACE,
                                         BENCH_METHOD, on_echo_reply, p, "s", p->payload);
        if (r < 0) {
                snprintf(p->why, sizeof p->why, "cannot send: %s", strerror(-r));
                p->failed = 1;
                return 0;
        }
        p->sent++;
        return 0;
}

static int run_pipelined(const Settings *s, const char *payload) {
        Pipeline p = { .settings = s, .payload = payload };
        int r = open_bus(s->address, &p.bus);
        if (r < 0) {
                fprintf(stderr, "echo-client: cannot connect to %s: %s\n", s->address, strerror(-r));
                return 1;
        }
        uint64_t begin = now_ns();
        p.hard_deadline = begin + (uint64_t) (s->time_limit * 1e9);
        for (int i = 0; i < s->in_flight && !p.failed; i++)
                pipeline_send(&p);
        while (!p.failed && p.received < p.sent) {
                r = sd_bus_process(p.bus, NULL);
                if (r < 0) {
                        snprintf(p.why, sizeof p.why, "connection lost: %s", strerror(-r));
                        p.failed = 1;
                        break;
                }
                if (r > 0)
                        continue;
                /* Bounded: a lost reply ends in sd-bus's call timeout, a dead bus in an error. */
                r = sd_bus_wait(p.bus, call_timeout_usec);
                if (r < 0 && r != -EINTR) {
                        snprintf(p.why, sizeof p.why, "wait failed: %s", strerror(-r));
                        p.failed = 1;
                }
        }
        if (p.failed) {
                fprintf(stderr, "echo-client (pipelined): %s\n", p.why);
                return 1;
        }
        if (!p.measuring) {
                p.measure_start = begin;
                p.measure_start_received = 0;
        }
        if (!p.draining) {
                p.measure_end = now_ns();
                p.measure_end_received = p.received;
        }
        print_result(s, 1, s->in_flight, p.measure_end_received - p.measure_start_received, p.received,
                     (double) (p.measure_end - p.measure_start) / 1e9, NULL, p.stopped_by_time_limit);
        sd_bus_flush_close_unref(p.bus);
        return 0;
}

/* Shape 3 */
typedef struct Worker {
        const Settings *settings;
        const char *payload;
        pthread_barrier_t *barrier;
        uint64_t hard_deadline;
        long warmup;
        long calls;
        long measured;
        uint64_t start;
        uint64_t end;
        Samples samples;
        int stopped_by_time_limit;
        int failed;
        char why[256];
} Worker;

static void *worker_run(void *argument) {
        Worker *w = argument;
        sd_bus *bus = NULL;
        int r = open_bus(w->settings->address, &bus);
        if (r < 0) {
                snprintf(w->why, sizeof w->why, "cannot connect: %s", strerror(-r));
                w->failed = 1;
        }
        for (long i = 0; !w->failed && i < w->warmup && now_ns() < w->hard_deadline; i++, w->calls++)
                if (echo_call(bus, w->payload, w->why, sizeof w->why) < 0)
                        w->failed = 1;
        /* Everyone reaches the barrier, failed or not, so that nobody waits forever. */
        pthread_barrier_wait(w->barrier);
        if (!w->failed) {
                w->start = now_ns();
                uint64_t stop = w->start + (uint64_t) (w->settings->duration * 1e9);
                if (stop >= w->hard_deadline) {
                        stop = w->hard_deadline;
                        w->stopped_by_time_limit = 1;
                }
                uint64_t now = w->start;
                while (now < stop) {
                        if (echo_call(bus, w->payload, w->why, sizeof w->why) < 0) {
                                w->failed = 1;
                                break;
                        }
                        uint64_t done = now_ns();
                        w->calls++;
                        w->measured++;
                        if (samples_add(&w->samples, done - now) < 0) {
                                snprintf(w->why, sizeof w->why, "out of memory");
                                w->failed = 1;
                                break;
                        }
                        now = done;
                }
                w->end = now_ns();
        }
        if (bus)
                sd_bus_flush_close_unref(bus);
        return NULL;
}

static int run_connections(const Settings *s, const char *payload) {
        int count = s->connections > 0 ? s->connections : 1;
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, (unsigned) count);
        Worker *workers = calloc((size_t) count, sizeof(Worker));
        pthread_t *threads = calloc((size_t) count, sizeof(pthread_t));
        if (!workers || !threads) {
                fprintf(stderr, "echo-client: out of memory\n");
                return 1;
        }
        uint64_t hard_deadline = now_ns() + (uint64_t) (s->time_limit * 1e9);
        for (int i = 0; i < count; i++) {
                workers[i] = (Worker) {
                        .settings = s, .payload = payload, .barrier = &barrier, .hard_deadline = hard_deadline,
                        .warmup = s->warmup / count > 0 ? s->warmup / count : 1,
                };
                int r = pthread_create(&threads[i], NULL, worker_run, &workers[i]);
                if (r != 0) {
                        fprintf(stderr, "echo-client: pthread_create: %s\n", strerror(r));
                        return 1; /* the threads already started die with the process */
                }
        }
        for (int i = 0; i < count; i++)
                pthread_join(threads[i], NULL);
        pthread_barrier_destroy(&barrier);

        Samples all = { 0 };
        uint64_t start = UINT64_MAX, end = 0;
        long measured = 0, total = 0;
        int stopped = 0;
        for (int i = 0; i < count; i++) {
                Worker *w = &workers[i];
                if (w->failed) {
                        fprintf(stderr, "echo-client (connections): %s\n", w->why);
                        return 1;
                }
                if (samples_append(&all, &w->samples) < 0) {
                        fprintf(stderr, "echo-client: out of memory\n");
                        return 1;
                }
                start = w->start < start ? w->start : start;
                end = w->end > end ? w->end : end;
                measured += w->measured;
                total += w->calls;
                stopped |= w->stopped_by_time_limit;
        }
        print_result(s, count, 1, measured, total, end > start ? (double) (end - start) / 1e9 : 0, &all, stopped);
        return 0;
}

static void usage(void) {
        fprintf(stderr,
                "usage: echo-client --address unix:path=SOCKET --shape latency|pipelined|connections\n"
                "       [--calls N] [--warmup N] [--duration S] [--in-flight N] [--connections N]\n"
                "       [--payload BYTES] [--time-limit S]\n");
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "address", required_argument, NULL, 'a' },
                { "shape", required_argument, NULL, 's' },
                { "calls", required_argument, NULL, 'c' },
                { "warmup", required_argument, NULL, 'w' },
                { "duration", required_argument, NULL, 'd' },
                { "in-flight", required_argument, NULL, 'i' },
                { "connections", required_argument, NULL, 'n' },
                { "payload", required_argument, NULL, 'p' },
                { "time-limit", required_argument, NULL, 't' },
                { 0 },
        };
        Settings s = {
                .shape = SHAPE_LATENCY, .calls = 20000, .warmup = 2000, .duration = 2.0,
                .in_flight = 64, .connections = 16, .payload_bytes = 100, .time_limit = 20.0,
        };
        const char *shape = "latency";
        int opt;
        while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
                switch (opt) {
                case 'a': s.address = optarg; break;
                case 's': shape = optarg; break;
                case 'c': s.calls = atol(optarg); break;
                case 'w': s.warmup = atol(optarg); break;
                case 'd': s.duration = atof(optarg); break;
                case 'i': s.in_flight = atoi(optarg); break;
                case 'n': s.connections = atoi(optarg); break;
                case 'p': s.payload_bytes = atoi(optarg); break;
                case 't': s.time_limit = atof(optarg); break;
                default: usage(); return 2;
                }
        }
        if (!s.address || s.calls <= 0 || s.warmup < 0 || s.duration <= 0 || s.in_flight <= 0
            || s.connections <= 0 || s.payload_bytes <= 0 || s.time_limit <= 0) {
                usage();
                return 2;
        }
        if (!strcmp(shape, "latency"))
                s.shape = SHAPE_LATENCY;
        else if (!strcmp(shape, "pipelined"))
                s.shape = SHAPE_PIPELINED;
        else if (!strcmp(shape, "connections"))
                s.shape = SHAPE_CONNECTIONS;
        else {
                usage();
                return 2;
        }
        die_with_parent();
        signal(SIGPIPE, SIG_IGN);
        char *payload = make_payload(s.payload_bytes);
        if (!payload)
                return 1;
        switch (s.shape) {
        case SHAPE_LATENCY: return run_latency(&s, payload);
        case SHAPE_PIPELINED: return run_pipelined(&s, payload);
        case SHAPE_CONNECTIONS: return run_connections(&s, payload);
        }
        return 2;
}

/* What the D-Bus benchmark programs share: the bus names of the echo
 * service, a monotonic clock, dying with the parent, and the JSON that
 * mediator-bench's `client` role prints (same field names, so the runner
 * merges both without translation). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BENCH_SERVICE_NAME "org.mediator.Bench"
#define BENCH_OBJECT_PATH "/org/mediator/Bench"
#define BENCH_INTERFACE "org.mediator.Bench"
#define BENCH_METHOD "Echo"

static inline uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The kernel kills us when the script that started us dies, so that no
 * benchmark process outlives a run that was interrupted. */
static inline void die_with_parent(void) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
                _exit(1);
}

/* Room for `wanted` descriptors: the soft limit up to the hard one, and the
 * hard one too when we may (root). Returns the soft limit in force. */
static inline long raise_fd_limit(long wanted) {
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) < 0)
                return -1;
        if ((long) limit.rlim_cur >= wanted)
                return (long) limit.rlim_cur;
        if ((long) limit.rlim_max < wanted) {
                struct rlimit raised = { (rlim_t) wanted, (rlim_t) wanted };
                if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
                        return wanted;
        }
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
        return (long) limit.rlim_cur;
}

/* A string of `bytes` printable characters, like mediator-bench's payload. */
static inline char *make_payload(int bytes) {
        char *text = malloc((size_t) bytes + 1);
        if (!text)
                return NULL;
        for (int i = 0; i < bytes; i++)
                text[i] = (char) ('a' + i % 26);
        text[bytes] = '\0';
        return text;
}

/* Round-trip samples in nanoseconds. Percentiles are exact: the samples are
 * sorted and the nearest-rank value is taken (HdrHistogram, which
 * mediator-bench uses, reports the same value to within 0.1%). */
typedef struct Samples {
        uint64_t *values;
        size_t count;
        size_t capacity;
} Samples;

static inline int samples_add(Samples *samples, uint64_t value) {
        if (samples->count == samples->capacity) {
                size_t capacity = samples->capacity ? samples->capacity * 2 : 65536;
                uint64_t *values = realloc(samples->values, capacity * sizeof(uint64_t));
                if (!values)
                        return -ENOMEM;
                samples->values = values;
                samples->capacity = capacity;
        }
        samples->values[samples->count++] = value;
        return 0;
}

static inline int samples_append(Samples *into, const Samples *from) {
        for (size_t i = 0; i < from->count; i++)
                if (samples_add(into, from->values[i]) < 0)
                        return -ENOMEM;
        return 0;
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static inline double samples_percentile_us(const Samples *sorted, double percentile) {
        size_t rank = (size_t) ceil(percentile / 100.0 * (double) sorted->count);
        if (rank < 1)
                rank = 1;
        if (rank > sorted->count)
                rank = sorted->count;
        return (double) sorted->values[rank - 1] / 1000.0;
}

/* `"latencyMicros": {...}` as mediator-bench's LatencySummary; sorts the samples. */
static inline void print_latency_json(FILE *out, Samples *samples) {
        if (samples->count == 0) {
                fprintf(out, "\"latencyMicros\":null");
                return;
        }
        qsort(samples->values, samples->count, sizeof(uint64_t), compare_u64);
        double sum = 0;
        for (size_t i = 0; i < samples->count; i++)
                sum += (double) samples->values[i];
        fprintf(out,
                "\"latencyMicros\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"mean\":%.3f}",
                samples_percentile_us(samples, 50), samples_percentile_us(samples, 90),
                samples_percentile_us(samples, 99), samples_percentile_us(samples, 99.9),
                (double) samples->values[samples->count - 1] / 1000.0,
                sum / (double) samples->count / 1000.0);
}

#endif

/*
 * omprpc_bench: one workload of `make bench`, through the C API, in its own process.
 *
 *   omprpc_bench [--pin CPU] MODE AGENT ARGS…
 *
 *   turn    AGENT N drain|nodrain S   prompt_and_wait("burst N"); "drain": a second thread
 *                                     takes the events with next_events as a host would
 *   events  AGENT N batch|lines|single S
 *                                     prompt("burst N"), then next_events (batches of BATCH),
 *                                     next_events_lines (the same, split at newlines) or
 *                                     next_event until agent_end; no turn assembly
 *   huge    AGENT BYTES turn|events   prompt "huge BYTES": prompt_and_wait (with a draining
 *                                     thread) or prompt + next_event until agent_end
 *   rtt     AGENT COUNT               COUNT sequential get_state round trips (after a warm-up)
 *   clients AGENT COUNT BURST         COUNT clients open at once, idle, then "burst BURST" on
 *                                     each in turn (prompt_and_wait, then its queue drained)
 *
 * S is the byte count of the burst's event frames (every stdout line after the prompt's
 * response, without newlines); with it the number of events taken through next_events is
 * exact without scanning them: a batch array is its events + commas + 2 brackets, so
 * events = total bytes - S - batches.
 *
 * Prints one line of `key=value` pairs on stdout (the driver, examples/bench_run.rs, reads
 * it); `secs` is the timed part only (client start and close are outside it), `hwm_kib` the
 * process's peak RSS (VmHWM) at the end, `rss_end_kib` its RSS then (the client still open,
 * every string it returned freed: what the client keeps). Exit status 1 on any failure, with
 * the reason on stderr. BATCH is env OMPRPC_BENCH_BATCH (default 4096).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "omprpc.h"

/* No single wait in a workload may take longer than this (a hang fails, it never hangs). */
#define WAIT_MS 60000

static const char *g_agent;
static size_t g_batch = 4096;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, omprpc_status st, char *err) {
    fprintf(stderr, "omprpc_bench: %s: %s %s\n", what, omprpc_status_name((int)st), err ? err : "");
    omprpc_string_free(err);
    exit(1);
}

/* A field of /proc/self/status in kB (VmHWM, VmRSS), -1 if absent. */
static long status_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

static long count_dir(const char *path) {
    DIR *d = opendir(path);
    struct dirent *e;
    long n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static omprpc_client *start_client(void) {
    /* The agent path is a plain file path: JSON-escape only what can occur in one. */
    char opts[8192], esc[4096];
    size_t j = 0;
    omprpc_client *c = NULL;
    char *err = NULL;
    omprpc_status st;
    for (const char *p = g_agent; *p && j + 2 < sizeof esc; p++) {
        if (*p == '"' || *p == '\\') esc[j++] = '\\';
        esc[j++] = *p;
    }
    esc[j] = 0;
    snprintf(opts, sizeof opts, "{\"command\":[\"%s\"],\"max_event_history\":null}", esc);
    st = omprpc_client_start(opts, &c, &err);
    if (st != OMPRPC_STATUS_OK) die("client_start", st, err);
    /* The ready frame is also an event, and start may return before the reader queued it:
     * take it now, so that it is not counted in the timed part. */
    char *ev = NULL;
    st = omprpc_client_next_event(c, WAIT_MS, &ev, &err);
    if (st != OMPRPC_STATUS_OK) die("next_event (ready)", st, err);
    if (strncmp(ev, "{\"type\":\"ready\"", 15) != 0) {
        fprintf(stderr, "omprpc_bench: first event is not ready: %.200s\n", ev);
        exit(1);
    }
    omprpc_string_free(ev);
    return c;
}

/* Takes whatever is queued now (the ready event after start, leftovers after a turn);
 * returns the number of batches taken. */
static long drain_now(omprpc_client *c, size_t *bytes, int *overflow) {
    long batches = 0;
    for (;;) {
        char *evs = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_events(c, 65536, 0, &evs, &err);
        if (st == OMPRPC_STATUS_TIMEOUT) {
            omprpc_string_free(err);
            return batches;
        }
        if (st != OMPRPC_STATUS_OK) die("next_events (drain)", st, err);
        if (bytes) *bytes += strlen(evs);
        if (overflow && strstr(evs, "\"type\":\"event_overflow\"")) *overflow = 1;
        batches++;
        omprpc_string_free(evs);
    }
}

/* Does this batch array end with the agent_end frame? It is the burst's last event, and
 * shorter than 2 KiB, so only the tail is searched. */
static int ends_with_agent_end(const char *arr, size_t len) {
    size_t from = len > 2048 ? len - 2048 : 0;
    return memmem(arr + from, len - from, "{\"type\":\"agent_end\"", 19) != NULL;
}

struct drainer {
    omprpc_client *c;
    size_t bytes;
    long batches;
    double done_at;
    int failed;
};

/* The host's event loop: takes batches until the run's agent_end. */
static void *drain_thread(void *arg) {
    struct drainer *d = arg;
    for (;;) {
        char *evs = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_events(d->c, g_batch, WAIT_MS, &evs, &err);
        if (st != OMPRPC_STATUS_OK) {
            fprintf(stderr, "omprpc_bench: drainer: %s %s\n", omprpc_status_name((int)st), err ? err : "");
            omprpc_string_free(err);
            d->failed = 1;
            break;
        }
        size_t len = strlen(evs);
        int end = ends_with_agent_end(evs, len);
        d->bytes += len;
        d->batches++;
        omprpc_string_free(evs);
        if (end) break;
    }
    d->done_at = now_s();
    return NULL;
}

static void finish(omprpc_client *c) {
    char *err = NULL;
    omprpc_status st = omprpc_client_close(c, &err);
    if (st != OMPRPC_STATUS_OK) die("client_close", st, err);
    omprpc_client_free(c);
}

/* prompt_and_wait over a burst (or a huge frame), with or without a draining thread. */
static int run_turn(const char *message, long expect_events, int drain, long long s_bytes) {
    omprpc_client *c = start_client();
    char *turn = NULL, *err = NULL;
    struct drainer d = {c, 0, 0, 0, 0};
    pthread_t th;
    drain_now(c, NULL, NULL);
    if (drain && pthread_create(&th, NULL, drain_thread, &d) != 0) {
        fprintf(stderr, "omprpc_bench: pthread_create failed\n");
        return 1;
    }
    double t0 = now_s();
    omprpc_status st = omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &turn, &err);
    double t1 = now_s();
    if (st != OMPRPC_STATUS_OK) die("prompt_and_wait", st, err);
    if (drain) pthread_join(th, NULL);
    size_t turn_len = strlen(turn);
    if (strncmp(turn, "{\"events\":[", 11) != 0) {
        fprintf(stderr, "omprpc_bench: unexpected turn JSON\n");
        return 1;
    }
    omprpc_string_free(turn);
    long drained = -1;
    int overflow = 0;
    if (drain) {
        if (d.failed) return 1;
        if (s_bytes >= 0) drained = (long)((long long)d.bytes - s_bytes - d.batches);
    } else {
        /* What the queue kept (outside the timed part): did it overflow? */
        drain_now(c, NULL, &overflow);
    }
    long hwm = status_kib("VmHWM"), rss = status_kib("VmRSS");
    finish(c);
    printf("secs=%.6f events=%ld events_per_sec=%.0f turn_bytes=%zu drained=%ld drain_secs=%.6f "
           "batches=%ld overflow=%d hwm_kib=%ld rss_end_kib=%ld\n",
           t1 - t0, expect_events, (double)expect_events / (t1 - t0), turn_len, drained,
           drain ? d.done_at - t0 : 0.0, d.batches, overflow, hwm, rss);
    return 0;
}

enum poll_mode { POLL_SINGLE, POLL_ARRAY, POLL_LINES };

/* prompt, then next_event / next_events / next_events_lines until agent_end. */
static int run_events(const char *message, long expect_events, enum poll_mode mode, long long s_bytes) {
    omprpc_client *c = start_client();
    char *id = NULL, *err = NULL;
    size_t bytes = 0;
    long batches = 0, got = 0;
    drain_now(c, NULL, NULL);
    double t0 = now_s();
    omprpc_status st = omprpc_client_prompt(c, message, NULL, WAIT_MS, &id, &err);
    if (st != OMPRPC_STATUS_OK) die("prompt", st, err);
    omprpc_string_free(id);
    for (;;) {
        char *ev = NULL;
        int end;
        if (mode == POLL_ARRAY) {
            st = omprpc_client_next_events(c, g_batch, WAIT_MS, &ev, &err);
            if (st != OMPRPC_STATUS_OK) die("next_events", st, err);
            size_t len = strlen(ev);
            end = ends_with_agent_end(ev, len);
            bytes += len;
            batches++;
        } else if (mode == POLL_LINES) {
            /* What a host does with it: split at each newline (a byte search). */
            st = omprpc_client_next_events_lines(c, g_batch, WAIT_MS, &ev, &err);
            if (st != OMPRPC_STATUS_OK) die("next_events_lines", st, err);
            const char *line = ev, *nl, *last = ev;
            while ((nl = strchr(line, '\n')) != NULL) {
                got++;
                last = line;
                line = nl + 1;
            }
            end = strncmp(last, "{\"type\":\"agent_end\"", 19) == 0;
            batches++;
        } else {
            st = omprpc_client_next_event(c, WAIT_MS, &ev, &err);
            if (st != OMPRPC_STATUS_OK) die("next_event", st, err);
            end = strncmp(ev, "{\"type\":\"agent_end\"", 19) == 0;
            got++;
        }
        omprpc_string_free(ev);
        if (end) break;
    }
    double t1 = now_s();
    if (mode == POLL_ARRAY) got = s_bytes >= 0 ? (long)((long long)bytes - s_bytes - batches) : -1;
    long hwm = status_kib("VmHWM"), rss = status_kib("VmRSS");
    finish(c);
    printf("secs=%.6f events=%ld events_per_sec=%.0f received=%ld batches=%ld hwm_kib=%ld rss_end_kib=%ld\n",
           t1 - t0, expect_events, (double)expect_events / (t1 - t0), got, batches, hwm, rss);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, long n, double p) {
    long k = (long)(p * (double)n + 0.999999) - 1;
    if (k < 0) k = 0;
    if (k >= n) k = n - 1;
    return v[k];
}

static int run_rtt(long count) {
    omprpc_client *c = start_client();
    double *lat = calloc((size_t)count, sizeof *lat);
    char *state = NULL, *err = NULL;
    omprpc_status st;
    if (!lat) return 1;
    for (int i = 0; i < 100; i++) { /* warm-up */
        st = omprpc_client_get_state(c, WAIT_MS, &state, &err);
        if (st != OMPRPC_STATUS_OK) die("get_state", st, err);
        omprpc_string_free(state);
    }
    for (long i = 0; i < count; i++) {
        double t0 = now_s();
        st = omprpc_client_get_state(c, WAIT_MS, &state, &err);
        double t1 = now_s();
        if (st != OMPRPC_STATUS_OK) die("get_state", st, err);
        if (state[0] != '{') {
            fprintf(stderr, "omprpc_bench: get_state returned %s\n", state);
            return 1;
        }
        omprpc_string_free(state);
        lat[i] = (t1 - t0) * 1e6;
    }
    double sum = 0;
    for (long i = 0; i < count; i++) sum += lat[i];
    qsort(lat, (size_t)count, sizeof *lat, cmp_double);
    long hwm = status_kib("VmHWM");
    finish(c);
    printf("count=%ld p50_us=%.2f p99_us=%.2f mean_us=%.2f max_us=%.2f hwm_kib=%ld\n", count, pct(lat, count, 0.50),
           pct(lat, count, 0.99), sum / (double)count, lat[count - 1], hwm);
    free(lat);
    return 0;
}

static int run_clients(long count, long burst) {
    omprpc_client **cs = calloc((size_t)count, sizeof *cs);
    char msg[64];
    if (!cs) return 1;
    snprintf(msg, sizeof msg, "burst %ld", burst);
    long tasks0 = count_dir("/proc/self/task"), fds0 = count_dir("/proc/self/fd"), rss0 = status_kib("VmRSS");
    double t0 = now_s();
    for (long i = 0; i < count; i++) cs[i] = start_client();
    double t1 = now_s();
    for (long i = 0; i < count; i++) drain_now(cs[i], NULL, NULL);
    long tasks1 = count_dir("/proc/self/task"), fds1 = count_dir("/proc/self/fd"), rss1 = status_kib("VmRSS");
    /* Idle: what do 100 open clients cost while nothing happens? */
    double cpu0 = cpu_s(), w0 = now_s();
    usleep(1000000);
    double idle_cpu = cpu_s() - cpu0, idle_wall = now_s() - w0;
    /* One burst each, in turn: the host takes the turn, then drains that client's queue. */
    double b0 = now_s();
    for (long i = 0; i < count; i++) {
        char *turn = NULL, *err = NULL;
        omprpc_status st = omprpc_client_prompt_and_wait(cs[i], msg, NULL, WAIT_MS, &turn, &err);
        if (st != OMPRPC_STATUS_OK) die("prompt_and_wait (clients)", st, err);
        omprpc_string_free(turn);
        drain_now(cs[i], NULL, NULL);
    }
    double b1 = now_s();
    long tasks2 = count_dir("/proc/self/task"), rss2 = status_kib("VmRSS"), hwm = status_kib("VmHWM");
    double c0 = now_s();
    for (long i = 0; i < count; i++) {
        char *err = NULL;
        omprpc_status st = omprpc_client_close(cs[i], &err);
        if (st != OMPRPC_STATUS_OK) die("client_close", st, err);
    }
    double c1 = now_s();
    for (long i = 0; i < count; i++) omprpc_client_free(cs[i]);
    long tasks3 = count_dir("/proc/self/task"), fds3 = count_dir("/proc/self/fd");
    double events = (double)count * (double)(burst + 6);
    printf("clients=%ld threads_per_client=%.2f fds_per_client=%.2f idle_rss_kib_per_client=%.1f "
           "start_ms_per_client=%.2f idle_cpu_ms=%.1f idle_wall_ms=%.0f burst_secs=%.6f events_per_sec=%.0f "
           "threads_after_bursts=%ld retained_kib_per_client=%.1f hwm_kib=%ld close_ms=%.1f "
           "threads_after_free=%ld fds_after_free=%ld threads_before=%ld fds_before=%ld\n",
           count, (double)(tasks1 - tasks0) / (double)count, (double)(fds1 - fds0) / (double)count,
           (double)(rss1 - rss0) / (double)count, (t1 - t0) * 1e3 / (double)count, idle_cpu * 1e3, idle_wall * 1e3,
           b1 - b0, events / (b1 - b0), tasks2, (double)(rss2 - rss0) / (double)count, hwm, (c1 - c0) * 1e3, tasks3,
           fds3, tasks0, fds0);
    free(cs);
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: omprpc_bench [--pin CPU] turn AGENT N drain|nodrain S\n"
            "       omprpc_bench [--pin CPU] events AGENT N batch|lines|single S\n"
            "       omprpc_bench [--pin CPU] huge AGENT BYTES turn|events\n"
            "       omprpc_bench [--pin CPU] rtt AGENT COUNT\n"
            "       omprpc_bench [--pin CPU] clients AGENT COUNT BURST\n");
    exit(2);
}

int main(int argc, char **argv) {
    int a = 1;
    char msg[64];
    const char *batch = getenv("OMPRPC_BENCH_BATCH");
    if (batch && atol(batch) > 0) g_batch = (size_t)atol(batch);
    if (a + 1 < argc && strcmp(argv[a], "--pin") == 0) {
        /* Inherited by the library's threads and by the agent it spawns. */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[a + 1]), &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) perror("omprpc_bench: sched_setaffinity");
        a += 2;
    }
    if (argc - a < 3) usage();
    const char *mode = argv[a];
    g_agent = argv[a + 1];
    long n = atol(argv[a + 2]);
    if (n <= 0) usage();
    if (strcmp(mode, "turn") == 0 && argc - a >= 5) {
        snprintf(msg, sizeof msg, "burst %ld", n);
        return run_turn(msg, n + 6, strcmp(argv[a + 3], "drain") == 0, atoll(argv[a + 4]));
    }
    if (strcmp(mode, "events") == 0 && argc - a >= 5) {
        snprintf(msg, sizeof msg, "burst %ld", n);
        const char *m = argv[a + 3];
        enum poll_mode mode = strcmp(m, "batch") == 0 ? POLL_ARRAY : strcmp(m, "lines") == 0 ? POLL_LINES : POLL_SINGLE;
        return run_events(msg, n + 6, mode, atoll(argv[a + 4]));
    }
    if (strcmp(mode, "huge") == 0 && argc - a >= 4) {
        /* agent_start, tool_execution_start, tool_execution_end, agent_end */
        snprintf(msg, sizeof msg, "huge %ld", n);
        if (strcmp(argv[a + 3], "turn") == 0) return run_turn(msg, 4, 1, -1);
        return run_events(msg, 4, POLL_SINGLE, -1);
    }
    if (strcmp(mode, "rtt") == 0) return run_rtt(n);
    if (strcmp(mode, "clients") == 0 && argc - a >= 4) return run_clients(n, atol(argv[a + 3]));
    usage();
    return 2;
}

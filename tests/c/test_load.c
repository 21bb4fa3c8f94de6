/*
 * Concurrency and load through the C API (issue 7, parts 4 and 5):
 *
 * - one client, eight threads (requests, a prompt loop with host tool calls, event pollers
 *   answering those calls, a UI poller) while another thread closes it mid-flight: nothing
 *   deadlocks, every call ends OK or with a CLOSED-type status (no TIMEOUT: no response is
 *   lost), every blocked call returns promptly after close, no process is left;
 * - free right after close while other threads are still inside a poll: free waits for
 *   them (no use-after-free; ASan and valgrind run this program too);
 * - many clients at once (100 by default), each running turns from a few threads: every
 *   turn completes, and the figures are printed: threads, fds, peak RSS, turns/s, events/s;
 *   threads, descriptors and processes return to the baseline after free.
 *
 * Scale by environment: OMPRPC_LOAD_CLIENTS (100; 8 under valgrind, 24 under TSan),
 * OMPRPC_LOAD_THREADS (4), OMPRPC_LOAD_TURNS (turns per client: 6; 2 under valgrind, 4 under
 * TSan), OMPRPC_LOAD_ROUNDS (close-mid-flight rounds: 4; 2 under valgrind).
 * OMPRPC_LOAD_REPORT=path appends the figures there (markdown).
 */
#include "harness.h"
#include "proc.h"

/* valgrind preloads its own core into every program it runs: slow down the scale there. */
static int under_valgrind(void) {
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "vgpreload") != NULL;
}

/* ThreadSanitizer runs every access through its shadow state: 100 clients take a minute there. */
#if defined(__SANITIZE_THREAD__)
#define LOAD_SLOW 1
#else
#define LOAD_SLOW 0
#endif

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    long n;
    if (!v || !*v) return dflt;
    n = atol(v);
    return n > 0 ? n : dflt;
}

/* The time a woken call may take to return after close began: a hang guard only. */
static long close_guard_ms(void) { return under_valgrind() ? 30000 : 5000; }

static int closed_type(omprpc_status st) {
    return st == OMPRPC_STATUS_CLOSED || st == OMPRPC_STATUS_PROCESS_EXITED;
}

/* ---- one client, many threads, closed mid-flight ----------------------------------- */

typedef enum { ROLE_REQUESTS, ROLE_PROMPTS, ROLE_EVENTS, ROLE_UI } role;

typedef struct {
    omprpc_client *c;
    role role;
    int index;
    long ok;                 /* calls that returned OK */
    long answered;           /* host tool calls answered (event pollers) */
    omprpc_status last;      /* the status that ended the loop */
    char last_err[512];
    char bad[512];           /* the first unexpected status, if any */
    int64_t ended_at;
} worker;

/* Written by the closer thread, read after joining it. */
static int64_t g_close_started;

static void note_bad(worker *w, const char *what, omprpc_status st, const char *err) {
    if (!w->bad[0])
        snprintf(w->bad, sizeof w->bad, "%s returned %s: %s", what, h_name(st), err ? err : "(no error)");
}

static void end_with(worker *w, omprpc_status st, char **err) {
    w->last = st;
    snprintf(w->last_err, sizeof w->last_err, "%s", *err ? *err : "");
    h_strfree(err);
}

static void *requests_thread(void *arg) {
    worker *w = (worker *)arg;
    long i;
    for (i = 0;; i++) {
        char *out = NULL, *err = NULL;
        omprpc_status st;
        const char *what;
        switch ((i + w->index) % 4) {
        case 0: what = "get_state"; st = omprpc_client_get_state(w->c, WAIT_MS, &out, &err); break;
        case 1: what = "bash"; st = omprpc_client_bash(w->c, "echo hello", WAIT_MS, &out, &err); break;
        case 2: what = "get_session_stats"; st = omprpc_client_request(w->c, "get_session_stats", NULL, WAIT_MS, &out, &err); break;
        default: what = "set_session_name";
            st = omprpc_client_request(w->c, "set_session_name", "{\"name\":\"load\"}", WAIT_MS, &out, &err);
            break;
        }
        h_strfree(&out);
        if (st == OMPRPC_STATUS_OK) {
            w->ok++;
            h_strfree(&err);
            continue;
        }
        if (!closed_type(st)) note_bad(w, what, st, err);
        end_with(w, st, &err);
        break;
    }
    w->ended_at = h_now_ms();
    return NULL;
}

static void *prompts_thread(void *arg) {
    worker *w = (worker *)arg;
    long i;
    for (i = 0;; i++) {
        char *out = NULL, *err = NULL;
        const char *msg = (i % 2) ? "say hello" : "needs host tool";
        omprpc_status st = omprpc_client_prompt_and_wait(w->c, msg, NULL, WAIT_MS, &out, &err);
        if (st == OMPRPC_STATUS_OK) {
            jval *turn = json_parse(out);
            const char *want = (i % 2) ? "pong" : NULL;
            /* the host-tool turn ends with the tool result, the other with the text "pong" */
            if (want && (!jpath_str(turn, "assistantText") || strcmp(jpath_str(turn, "assistantText"), want)))
                note_bad(w, "prompt_and_wait (wrong turn)", st, out);
            json_free(turn);
            h_strfree(&out);
            w->ok++;
            continue;
        }
        if (!closed_type(st)) note_bad(w, msg, st, err);
        end_with(w, st, &err);
        break;
    }
    w->ended_at = h_now_ms();
    return NULL;
}

/* Polls without a deadline: only close can end it. Answers every host tool call it sees. */
static void *events_thread(void *arg) {
    worker *w = (worker *)arg;
    for (;;) {
        char *ev = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_event(w->c, OMPRPC_TIMEOUT_INFINITE, &ev, &err);
        if (st != OMPRPC_STATUS_OK) {
            if (st != OMPRPC_STATUS_CLOSED) note_bad(w, "next_event", st, err);
            end_with(w, st, &err);
            break;
        }
        w->ok++;
        if (strstr(ev, "\"host_tool_call\"")) {
            jval *v = json_parse(ev);
            const char *id = jpath_str(v, "id");
            if (id) {
                omprpc_status r = omprpc_client_host_tool_update(w->c, id, "\"working\"", &err);
                h_strfree(&err);
                if (r == OMPRPC_STATUS_OK) r = omprpc_client_host_tool_result(w->c, id, "\"host:hello\"", false, &err);
                /* NOT_FOUND / CANCELLED: the call ended meanwhile; CLOSED-type: we are closing */
                if (r == OMPRPC_STATUS_OK) w->answered++;
                else if (!closed_type(r) && r != OMPRPC_STATUS_NOT_FOUND && r != OMPRPC_STATUS_CANCELLED)
                    note_bad(w, "host_tool_result", r, err);
                h_strfree(&err);
            }
            json_free(v);
        }
        h_strfree(&ev);
    }
    w->ended_at = h_now_ms();
    return NULL;
}

static void *ui_thread(void *arg) {
    worker *w = (worker *)arg;
    for (;;) {
        char *req = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_ui_request(w->c, OMPRPC_TIMEOUT_INFINITE, &req, &err);
        h_strfree(&req);
        if (st == OMPRPC_STATUS_OK) {
            w->ok++;
            continue;
        }
        if (!closed_type(st)) note_bad(w, "next_ui_request", st, err);
        end_with(w, st, &err);
        break;
    }
    w->ended_at = h_now_ms();
    return NULL;
}

static void *closer_thread(void *arg) {
    omprpc_client *c = (omprpc_client *)arg;
    char *err = NULL;
    g_close_started = h_now_ms();
    CHECK_OK(omprpc_client_close(c, &err), err);
    return NULL;
}

#define N_WORKERS 8

static void test_many_threads_one_client_closed_mid_flight(void) {
    long rounds = env_long("OMPRPC_LOAD_ROUNDS", under_valgrind() ? 2 : 4), r;
    long total_ok = 0, total_answered = 0, worst_wake = 0, busy_ms = 0;
    for (r = 0; r < rounds; r++) {
        /* close at different points: early (start of the first calls) to well into the run */
        long close_after = 20 + r * 150 * (under_valgrind() ? 4 : 1);
        omprpc_client *c = START(NULL, "\"host_tools\":[" ECHO_TOOL "],\"stop_grace_ms\":500,\"kill_grace_ms\":500");
        worker w[N_WORKERS];
        pthread_t th[N_WORKERS], closer;
        long pid;
        int i;
        char desc[256];
        int64_t t_run;
        if (!c) return;
        pid = proc_client_pid(c);
        memset(w, 0, sizeof w);
        t_run = h_now_ms();
        for (i = 0; i < N_WORKERS; i++) {
            void *(*fn)(void *);
            w[i].c = c;
            w[i].index = i;
            /* 4 request threads, 1 prompt loop, 2 event pollers answering host calls, 1 UI poller */
            w[i].role = i < 4 ? ROLE_REQUESTS : i == 4 ? ROLE_PROMPTS : i < 7 ? ROLE_EVENTS : ROLE_UI;
            fn = w[i].role == ROLE_REQUESTS ? requests_thread
                 : w[i].role == ROLE_PROMPTS ? prompts_thread
                 : w[i].role == ROLE_EVENTS  ? events_thread
                                             : ui_thread;
            pthread_create(&th[i], NULL, fn, &w[i]);
        }
        h_sleep_ms(close_after);
        pthread_create(&closer, NULL, closer_thread, c);
        for (i = 0; i < N_WORKERS; i++) pthread_join(th[i], NULL);
        pthread_join(closer, NULL);
        busy_ms += (long)(g_close_started - t_run);
        for (i = 0; i < N_WORKERS; i++) {
            long wake = (long)(w[i].ended_at - g_close_started);
            CHECKF(!w[i].bad[0], "round %ld, worker %d: %s", r, i, w[i].bad);
            CHECKF(closed_type(w[i].last), "round %ld, worker %d ended with %s: %s", r, i, h_name(w[i].last),
                   w[i].last_err);
            CHECKF(wake < close_guard_ms(), "round %ld, worker %d returned %ld ms after close began", r, i, wake);
            if (wake > worst_wake) worst_wake = wake;
            total_ok += w[i].ok;
            total_answered += w[i].answered;
        }
        omprpc_client_free(c);
        CHECKF(proc_group_left(pid, desc, sizeof desc) == 0, "round %ld: processes of agent %ld left: %s", r, pid,
               desc);
    }
    CHECKF(total_ok > 0, "no call succeeded before close in %ld rounds", rounds);
    printf("LOAD one-client: %d threads x %ld rounds (%ld ms before close), %ld calls OK (%.0f/s), %ld host calls "
           "answered, slowest return after close %ld ms\n",
           N_WORKERS, rounds, busy_ms, total_ok, busy_ms ? total_ok * 1000.0 / (double)busy_ms : 0.0, total_answered,
           worst_wake);
}

/* ---- free right after close while other threads are inside a poll ------------------- */

typedef struct {
    omprpc_client *c;
    int kind;
    int entering; /* atomic: set by the poller just before its call */
    omprpc_status st;
} poller;

static void *blocked_poll(void *arg) {
    poller *p = (poller *)arg;
    char *out = NULL, *err = NULL;
    __atomic_store_n(&p->entering, 1, __ATOMIC_SEQ_CST);
    switch (p->kind) {
    case 0: p->st = omprpc_client_next_event(p->c, OMPRPC_TIMEOUT_INFINITE, &out, &err); break;
    case 1: p->st = omprpc_client_next_ui_request(p->c, OMPRPC_TIMEOUT_INFINITE, &out, &err); break;
    case 2: p->st = omprpc_client_next_events(p->c, 16, OMPRPC_TIMEOUT_INFINITE, &out, &err); break;
    case 3: p->st = omprpc_client_collect_events(p->c, OMPRPC_TIMEOUT_INFINITE, &out, &err); break;
    default: p->st = omprpc_client_request(p->c, "get_state", NULL, OMPRPC_TIMEOUT_INFINITE, &out, &err); break;
    }
    h_strfree(&out);
    h_strfree(&err);
    return NULL;
}

/* Many pollers: woken together by close, some are still on their way out of the library when
 * free runs (two cores), which is the window free must wait out. */
#define N_POLLERS 24

static void test_free_right_after_close_while_polling(void) {
    int round;
    for (round = 0; round < 4; round++) {
        /* the hanging scenario never answers get_state: that request blocks like a poll */
        omprpc_client *c = START(round >= 2 ? "\"--scenario\",\"hanging\"" : NULL, "\"stop_grace_ms\":200");
        poller p[N_POLLERS];
        pthread_t th[N_POLLERS];
        int i, n = under_valgrind() ? 8 : N_POLLERS;
        char *err = NULL;
        long pid;
        if (!c) return;
        pid = proc_client_pid(c);
        /* drain the ready event, so the pollers really block */
        while (1) {
            char *ev = NULL;
            if (omprpc_client_next_event(c, 0, &ev, &err) != OMPRPC_STATUS_OK) break;
            h_strfree(&ev);
        }
        h_strfree(&err);
        for (i = 0; i < n; i++) {
            p[i].c = c;
            /* one collect_events (a single collector is allowed), the rest polls and requests */
            p[i].kind = i == 3 ? 3 : round >= 2 && i % 4 == 3 ? 4 : i % 3;
            p[i].entering = 0;
            p[i].st = OMPRPC_STATUS_OK;
            pthread_create(&th[i], NULL, blocked_poll, &p[i]);
        }
        for (i = 0; i < n; i++)
            while (!__atomic_load_n(&p[i].entering, __ATOMIC_SEQ_CST)) h_sleep_ms(1);
        h_sleep_ms(under_valgrind() ? 600 : 150); /* inside the library and blocked by now */
        if (round % 2 == 0) {
            /* the contract's own order: close, then free while the woken calls are still leaving */
            CHECK_OK(omprpc_client_close(c, &err), err);
        }
        /* rounds 1 and 3: free alone (it closes first) */
        omprpc_client_free(c);
        for (i = 0; i < n; i++) {
            pthread_join(th[i], NULL);
            CHECKF(closed_type(p[i].st), "round %d, poll %d ended with %s", round, i, h_name(p[i].st));
        }
        CHECKF(proc_group_left(pid, NULL, 0) == 0, "round %d: agent %ld left behind", round, pid);
    }
}

/* ---- many clients at once ---------------------------------------------------------- */

typedef struct {
    int stop; /* atomic */
    long peak_threads, peak_fds, peak_rss_kb;
} sampler;

static void *no_op_thread(void *arg) { return arg; }

static void *sampler_thread(void *arg) {
    sampler *s = (sampler *)arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
        long t = proc_self_threads(), f = proc_self_fds(), r = proc_self_kb("VmRSS:");
        if (t > s->peak_threads) s->peak_threads = t;
        if (f > s->peak_fds) s->peak_fds = f;
        if (r > s->peak_rss_kb) s->peak_rss_kb = r;
        h_sleep_ms(20);
    }
    return NULL;
}

typedef struct {
    int index, nthreads;
    long nclients, turns;
    omprpc_client **clients;
    long *pids;
    pthread_barrier_t *started, *ran;
    long turns_ok, events;
    char bad[512];
} load_worker;

static void *load_thread(void *arg) {
    load_worker *w = (load_worker *)arg;
    long i, t;
    for (i = w->index; i < w->nclients; i += w->nthreads) {
        omprpc_client *c = NULL;
        char *err = NULL, *opts = h_opts(NULL, "\"stop_grace_ms\":2000");
        omprpc_status st = omprpc_client_start(opts, &c, &err);
        free(opts);
        if (st != OMPRPC_STATUS_OK) {
            if (!w->bad[0]) snprintf(w->bad, sizeof w->bad, "start %ld: %s %s", i, h_name(st), err ? err : "");
            h_strfree(&err);
            continue;
        }
        w->clients[i] = c;
        w->pids[i] = proc_client_pid(c);
    }
    pthread_barrier_wait(w->started);
    for (t = 0; t < w->turns; t++) {
        for (i = w->index; i < w->nclients; i += w->nthreads) {
            omprpc_client *c = w->clients[i];
            char *out = NULL, *err = NULL;
            /* a normal turn and a 40-update burst, alternately */
            const char *msg = (t % 2) ? "burst 40" : "say hello";
            omprpc_status st;
            if (!c) continue;
            st = omprpc_client_prompt_and_wait(c, msg, NULL, WAIT_MS, &out, &err);
            if (st == OMPRPC_STATUS_OK && strstr(out, "\"assistantText\":\"pong\"")) {
                w->turns_ok++;
            } else if (!w->bad[0]) {
                snprintf(w->bad, sizeof w->bad, "client %ld turn %ld: %s %.300s", i, t, h_name(st),
                         err ? err : (out ? out : ""));
            }
            h_strfree(&out);
            h_strfree(&err);
            /* the same events reach the queue: drain it, counting them (events/s) */
            for (;;) {
                char *lines = NULL;
                const char *p;
                if (omprpc_client_next_events_lines(c, 4096, 0, &lines, &err) != OMPRPC_STATUS_OK) break;
                for (p = lines; (p = strchr(p, '\n')) != NULL; p++) w->events++;
                h_strfree(&lines);
            }
            h_strfree(&err);
        }
    }
    pthread_barrier_wait(w->ran);
    for (i = w->index; i < w->nclients; i += w->nthreads) {
        omprpc_client_free(w->clients[i]);
        w->clients[i] = NULL;
    }
    return NULL;
}

static void test_many_clients_at_once(void) {
    long nclients = env_long("OMPRPC_LOAD_CLIENTS", under_valgrind() ? 8 : LOAD_SLOW ? 24 : 100);
    long turns = env_long("OMPRPC_LOAD_TURNS", under_valgrind() ? 2 : LOAD_SLOW ? 4 : 6);
    int nthreads = (int)env_long("OMPRPC_LOAD_THREADS", 4), i;
    omprpc_client **clients = (omprpc_client **)calloc((size_t)nclients, sizeof *clients);
    long *pids = (long *)calloc((size_t)nclients, sizeof *pids);
    load_worker *w = (load_worker *)calloc((size_t)nthreads, sizeof *w);
    pthread_t *th = (pthread_t *)calloc((size_t)nthreads, sizeof *th);
    pthread_t sth;
    pthread_barrier_t started, ran;
    sampler s;
    long base_threads, base_fds, turns_ok = 0, events = 0, left = 0, end_threads, end_fds, hwm_kb;
    int64_t t_start, t_ran, t_ran_end, t_freed;
    double secs;
    const char *report;

    /* every client holds a few pipes and an eventfd: make room for 100 of them */
    plat_raise_fd_limit();
    /* the thread library's one-time handles belong in the baseline (winpthreads keeps 3 from
     * the first thread on), when this test runs first */
    pthread_create(&sth, NULL, no_op_thread, NULL);
    pthread_join(sth, NULL);
    base_threads = proc_self_threads();
    base_fds = proc_self_fds();
    memset(&s, 0, sizeof s);
    pthread_create(&sth, NULL, sampler_thread, &s);
    pthread_barrier_init(&started, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&ran, NULL, (unsigned)nthreads + 1);
    t_start = h_now_ms();
    for (i = 0; i < nthreads; i++) {
        w[i].index = i;
        w[i].nthreads = nthreads;
        w[i].nclients = nclients;
        w[i].turns = turns;
        w[i].clients = clients;
        w[i].pids = pids;
        w[i].started = &started;
        w[i].ran = &ran;
        pthread_create(&th[i], NULL, load_thread, &w[i]);
    }
    pthread_barrier_wait(&started);
    t_ran = h_now_ms();
    pthread_barrier_wait(&ran);
    t_ran_end = h_now_ms();
    for (i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    t_freed = h_now_ms();
    __atomic_store_n(&s.stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(sth, NULL);
    pthread_barrier_destroy(&started);
    pthread_barrier_destroy(&ran);
    hwm_kb = proc_self_kb("VmHWM:");

    for (i = 0; i < nthreads; i++) {
        CHECKF(!w[i].bad[0], "load thread %d: %s", i, w[i].bad);
        turns_ok += w[i].turns_ok;
        events += w[i].events;
    }
    CHECKF(turns_ok == nclients * turns, "%ld of %ld turns completed", turns_ok, nclients * turns);
    for (i = 0; i < nclients; i++) {
        char desc[256];
        int n = proc_group_left(pids[i], desc, sizeof desc);
        CHECKF(pids[i] > 0, "client %d had no pid", i);
        CHECKF(n == 0, "agent %ld: processes left after free: %s", pids[i], desc);
        left += n;
    }
    CHECKF(left == 0, "%ld processes of the agents were left after free", left);
    end_threads = proc_self_threads();
    end_fds = proc_self_fds();
    /* two library threads per client (reader, writer), the workers, the sampler, slack */
    CHECKF(s.peak_threads <= base_threads + nthreads + 1 + 2 * nclients + 4,
           "peak threads %ld for %ld clients (baseline %ld)", s.peak_threads, nclients, base_threads);
    CHECKF(s.peak_fds <= base_fds + PLAT_FDS_PER_CLIENT * nclients + 16, "peak fds %ld for %ld clients (baseline %ld)", s.peak_fds,
           nclients, base_fds);
    CHECKF(end_threads == base_threads, "threads after free: %ld, baseline %ld", end_threads, base_threads);
    CHECKF(end_fds == base_fds, "descriptors after free: %ld, baseline %ld (a leak)", end_fds, base_fds);
#if defined(__SANITIZE_ADDRESS__)
    CHECKF(hwm_kb < 4L * 1024 * 1024, "peak RSS %ld KiB under ASan", hwm_kb);
#else
    /* generous: the real figure is printed; this only catches unbounded growth */
    CHECKF(hwm_kb < 1024L * 1024, "peak RSS %ld KiB for %ld clients", hwm_kb, nclients);
#endif
    secs = (double)(t_ran_end - t_ran) / 1000.0;
    if (secs <= 0) secs = 0.001;
    printf("LOAD many-clients: %ld clients, %d caller threads, %ld turns (%ld events) in %.2f s: %.0f turns/s, "
           "%.0f events/s; start of all clients %lld ms, free of all %lld ms; peak threads %ld (baseline %ld), "
           "peak fds %ld (baseline %ld), peak RSS %ld KiB (VmHWM %ld KiB); after free: %ld threads, %ld fds, "
           "%ld agent processes\n",
           nclients, nthreads, turns_ok, events, secs, (double)turns_ok / secs, (double)events / secs,
           (long long)(t_ran - t_start), (long long)(t_freed - t_ran_end), s.peak_threads, base_threads,
           s.peak_fds, base_fds, s.peak_rss_kb, hwm_kb, end_threads, end_fds, left);
    report = getenv("OMPRPC_LOAD_REPORT");
    if (report && *report) {
        FILE *f = fopen(report, "a");
        if (f) {
            fprintf(f,
                    "| %ld | %d | %ld | %ld | %.2f | %.0f | %.0f | %lld | %lld | %ld (base %ld) | %ld (base %ld) | %ld | %ld/%ld/%ld |\n",
                    nclients, nthreads, turns_ok, events, secs, (double)turns_ok / secs, (double)events / secs,
                    (long long)(t_ran - t_start), (long long)(t_freed - t_ran_end), s.peak_threads, base_threads,
                    s.peak_fds, base_fds, hwm_kb, end_threads, end_fds, left);
            fclose(f);
        }
    }
    free(clients);
    free(pids);
    free(w);
    free(th);
}

int main(void) {
    h_init();
    RUN(test_many_threads_one_client_closed_mid_flight);
    RUN(test_free_right_after_close_while_polling);
    RUN(test_many_clients_at_once);
    return h_summary();
}

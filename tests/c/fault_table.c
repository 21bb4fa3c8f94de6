/*
 * The fault table (issue 7, part 3): every fault the fake agent can inject, through the C
 * API. For each: the status it ends in (checked), the message (checked for the detail that
 * matters), the time from the call that meets the fault to its error, and the process table
 * afterwards (no agent, grandchild or zombie left: the agent's process group is scanned in
 * /proc, and so are this program's children). Prints the table; with OMPRPC_FAULT_TABLE=path
 * also writes it there as markdown (make fault-table: target/fault-table.md).
 *
 * "Time to error" runs from the call that meets the fault to its return; for faults no call
 * meets ("no call"), from start's return until the event queue reports CLOSED.
 * Times are measured, not asserted, except as generous hang guards (HANG_GUARD_MS): machines
 * are noisy. Built by `make fault-table` (not a test_*.c: valgrind would only add minutes).
 */
#include "harness.h"
#include "proc.h"

#include <sys/stat.h>

#define HANG_GUARD_MS 10000

typedef struct {
    char fault[80], expected[48], status[48], message[200], left[96];
    long ms;
    int pass;
} row;

static row rows[32];
static int nrows;

/* One scenario's outcome, filled in by the scenario and completed by finish(). */
typedef struct {
    const char *fault, *expected;
    omprpc_status st;
    char err[4096];
    char reason[32]; /* after CLOSED: the code of info's closeReason */
    long ms;
    long pid, grandchild;
    int checks_failed;
} outcome;

static void begin(outcome *o, const char *fault, const char *expected) {
    memset(o, 0, sizeof *o);
    o->fault = fault;
    o->expected = expected;
    o->st = OMPRPC_STATUS_OK;
    h_current_failed = 0;
}

/* Records a call's status and error message, and how long it took. */
static void took(outcome *o, omprpc_status st, char **err, int64_t t0) {
    o->st = st;
    o->ms = (long)(h_now_ms() - t0);
    o->err[0] = '\0';
    if (*err) h_err_field(*err, "message", o->err, sizeof o->err);
    h_strfree(err);
}

/* Appends to the outcome's message. */
static void note(outcome *o, const char *fmt, ...) {
    size_t k = strlen(o->err);
    va_list ap;
    va_start(ap, fmt);
    if (k + 1 < sizeof o->err) vsnprintf(o->err + k, sizeof o->err - k, fmt, ap);
    va_end(ap);
}

static void excerpt(char *dst, size_t cap, const char *src) {
    size_t i, j = 0;
    for (i = 0; src[i] && j + 4 < cap; i++) {
        char ch = src[i];
        if (ch == '\n' || ch == '\r') ch = ' ';
        if (ch == '|') dst[j++] = '\\';
        dst[j++] = ch;
    }
    if (src[i]) {
        dst[j++] = '.';
        dst[j++] = '.';
    }
    dst[j] = '\0';
}

/* After the client is freed: its group and this process's children must be gone. */
static void finish(outcome *o, int status_ok) {
    row *r = &rows[nrows++];
    char groups[128] = "", kids[128] = "";
    int g = o->pid > 0 ? proc_wait_gone(o->pid, 3000) : 0, k;
    int64_t t0 = h_now_ms();
    if (g) proc_group_left(o->pid, groups, sizeof groups);
    /* a child being reaped right now may show for a moment: give it the same grace */
    while ((k = proc_children_left(kids, sizeof kids)) > 0 && h_now_ms() - t0 < 3000) h_sleep_ms(10);
    if (o->grandchild > 0 && proc_pid_left(o->grandchild)) {
        CHECKF(0, "%s: grandchild %ld still exists", o->fault, o->grandchild);
        kill((pid_t)o->grandchild, SIGKILL);
    }
    CHECKF(status_ok, "%s: ended with %s, expected %s; message: %s", o->fault, h_name(o->st), o->expected, o->err);
    CHECKF(g == 0, "%s: processes of the agent's group left: %s", o->fault, groups);
    CHECKF(k == 0, "%s: children of the test left: %s", o->fault, kids);
    CHECKF(o->ms < HANG_GUARD_MS, "%s: %ld ms to the error", o->fault, o->ms);
    snprintf(r->fault, sizeof r->fault, "%s", o->fault);
    snprintf(r->expected, sizeof r->expected, "%s", o->expected);
    if (o->reason[0])
        snprintf(r->status, sizeof r->status, "%s (%s)", h_name(o->st), o->reason);
    else
        snprintf(r->status, sizeof r->status, "%s", h_name(o->st));
    excerpt(r->message, sizeof r->message, o->err[0] ? o->err : "-");
    if (g || k)
        snprintf(r->left, sizeof r->left, "%d in group, %d children", g, k);
    else
        snprintf(r->left, sizeof r->left, "0");
    r->ms = o->ms;
    r->pass = !h_current_failed;
}

static int is(omprpc_status st, omprpc_status a) { return st == a; }

/* A fault no call met: the queue said CLOSED, and info's closeReason has this code. */
static int closed_by(const outcome *o, const char *code) {
    return o->st == OMPRPC_STATUS_CLOSED && !strcmp(o->reason, code);
}

/* For a fault the agent commits on its own (no call meets it): drains the event queue until
 * it says CLOSED, which it does once the reader met the fault; the time runs from `t0` (start
 * returned) and the message is that CLOSED error's, which names the original status. */
static void wait_closed(omprpc_client *c, outcome *o, int64_t t0) {
    for (;;) {
        char *ev = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_event(c, WAIT_MS, &ev, &err);
        h_strfree(&ev);
        if (st == OMPRPC_STATUS_OK) {
            h_strfree(&err);
            continue;
        }
        took(o, st, &err, t0);
        break;
    }
    {
        char *info = NULL, *err = NULL;
        if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
            jval *v = PARSE(info);
            const char *code = jpath_str(v, "closeReason.code");
            snprintf(o->reason, sizeof o->reason, "%s", code ? code : "?");
            json_free(v);
            h_strfree(&info);
        }
    }
}

/* ---- the scenarios ------------------------------------------------------------------ */

static void crash_mid_turn(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "crash mid-turn (exit 3)", "PROCESS_EXITED");
    if (!(c = START(NULL, NULL))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "crash", NULL, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    CHECKF(strstr(o.err, "fatal: crashed") && strstr(o.err, "3"), "no stderr tail / exit code: %s", o.err);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROCESS_EXITED));
}

static void hang_turn_deadline(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "hang, no output (turn deadline 500 ms)", "TIMEOUT");
    if (!(c = START(NULL, NULL))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "hang", NULL, 500, &out, &err), &err, t0);
    /* the client survives a timeout */
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_TIMEOUT));
}

static void hang_idle_timeout(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "hang, no output (turn_idle_timeout_ms 300)", "TIMEOUT");
    if (!(c = START(NULL, "\"turn_idle_timeout_ms\":300"))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "hang", NULL, OMPRPC_TIMEOUT_INFINITE, &out, &err), &err, t0);
    h_strfree(&out);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_TIMEOUT));
}

static void silent_at_start(void) {
    outcome o;
    omprpc_client *c = NULL;
    char *err = NULL, *opts = h_opts("\"--scenario\",\"silent\"", "\"startup_timeout_ms\":300");
    int64_t t0;
    begin(&o, "silent agent at start (startup_timeout_ms 300)", "TIMEOUT");
    t0 = h_now_ms();
    took(&o, omprpc_client_start(opts, &c, &err), &err, t0);
    free(opts);
    CHECK(c == NULL);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_TIMEOUT));
}

static void garbage_line(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "garbage line mid-turn", "PROTOCOL");
    if (!(c = START(NULL, NULL))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "garbage", NULL, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    CHECKF(strstr(o.err, "this is not json") != NULL, "the frame is not quoted: %s", o.err);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROTOCOL));
}

static void garbage_line_skipped(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "garbage line, invalid_frames skip", "OK + protocol_error event");
    if (!(c = START(NULL, "\"invalid_frames\":\"skip\""))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    CHECK_OK(omprpc_client_prompt_and_wait(c, "garbage", NULL, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    {
        /* not lost: reported as an event and kept in protocol_errors */
        jval *ev = h_wait_event(c, "protocol_error", WAIT_MS);
        o.ms = (long)(h_now_ms() - t0);
        CHECK(ev != NULL);
        json_free(ev);
    }
    if (CHECK_OK(omprpc_client_protocol_errors(c, &out, &err), err)) {
        excerpt(o.err, sizeof o.err, out);
        CHECKF(strstr(out, "this is not json") != NULL, "protocol_errors: %s", out);
        h_strfree(&out);
    }
    omprpc_client_free(c);
    finish(&o, 1);
}

static void half_line_eof(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "half a line, then EOF (no call)", "CLOSED (PROCESS_EXITED)");
    if (!(c = START("\"--scenario\",\"half-line\"", NULL))) return;
    t0 = h_now_ms();
    o.pid = proc_client_pid(c);
    wait_closed(c, &o, t0);
    (void)out;
    (void)err;
    omprpc_client_free(c);
    CHECKF(strstr(o.err, "inside a frame") != NULL, "the cut frame is not mentioned: %s", o.err);
    finish(&o, closed_by(&o, "PROCESS_EXITED") || closed_by(&o, "PROTOCOL"));
}

static void stdout_closed(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "stdout closed, process alive", "PROCESS_EXITED");
    if (!(c = START("\"--scenario\",\"stdout-close\"", "\"stop_grace_ms\":300"))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_get_state(c, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROCESS_EXITED));
}

static void stderr_flood(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "stderr flood (50 MB) during a turn", "OK, ring bounded");
    if (!(c = START("\"--scenario\",\"stderr-flood\"", "\"max_stderr_lines\":10"))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    if (CHECK_OK(omprpc_client_stderr(c, &out, &err), err)) {
        CHECKF(strlen(out) <= 10 * 1001 + 16, "stderr ring holds %u bytes", (unsigned)strlen(out));
        snprintf(o.err, sizeof o.err, "stderr ring: %u bytes kept", (unsigned)strlen(out));
        h_strfree(&out);
    }
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_OK));
}

static void invalid_utf8(int skip) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, skip ? "invalid UTF-8 line, invalid_frames skip" : "invalid UTF-8 line (no call)",
          skip ? "OK + protocol error" : "CLOSED (PROTOCOL)");
    if (!(c = START("\"--scenario\",\"invalid-utf8\"", skip ? "\"invalid_frames\":\"skip\"" : NULL))) return;
    t0 = h_now_ms();
    o.pid = proc_client_pid(c);
    if (skip) {
        took(&o, omprpc_client_get_state(c, WAIT_MS, &out, &err), &err, t0);
        h_strfree(&out);
    } else {
        wait_closed(c, &o, t0);
    }
    if (skip && CHECK_OK(omprpc_client_protocol_errors(c, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECKF(jlen(v) == 1, "expected one protocol error: %s", out);
        excerpt(o.err, sizeof o.err, out);
        json_free(v);
        h_strfree(&out);
    }
    CHECKF(skip || strstr(o.err, "UTF-8") || strstr(o.err, "utf-8") || strstr(o.err, "UTF8"),
           "the message does not say what was wrong: %s", o.err);
    omprpc_client_free(c);
    finish(&o, skip ? is(o.st, OMPRPC_STATUS_OK) : closed_by(&o, "PROTOCOL"));
}

static void frame_over_max(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, "frame over max_frame_bytes (200 kB > 64 KiB)", "PROTOCOL");
    if (!(c = START(NULL, "\"max_frame_bytes\":65536"))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_prompt_and_wait(c, "big 200000", NULL, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    CHECKF(strstr(o.err, "max_frame_bytes") != NULL, "the limit is not named: %s", o.err);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROTOCOL));
}

static void outbound_over_max(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL, *big;
    int64_t t0;
    begin(&o, "request over max_outbound_frame_bytes (8 KiB)", "INVALID_ARGUMENT, usable");
    if (!(c = START(NULL, "\"max_outbound_frame_bytes\":8192"))) return;
    o.pid = proc_client_pid(c);
    big = (char *)malloc(20000);
    memset(big, 'x', 19999);
    big[19999] = '\0';
    t0 = h_now_ms();
    took(&o, omprpc_client_bash(c, big, WAIT_MS, &out, &err), &err, t0);
    h_strfree(&out);
    free(big);
    CHECKF(strstr(o.err, "max_outbound_frame_bytes") != NULL, "the limit is not named: %s", o.err);
    /* refused before it was written: the session goes on */
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_INVALID_ARGUMENT));
}

static void consumer_never_polls(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL, *lines = NULL;
    long dropped = 0, kept = 0, overflow_events = 0;
    int64_t t0;
    const char *p;
    begin(&o, "consumer never polls (queue 64, 507 events)", "OK + event_overflow");
    if (!(c = START(NULL, "\"event_queue_capacity\":64"))) return;
    o.pid = proc_client_pid(c);
    CHECK_OK(omprpc_client_prompt_and_wait(c, "burst 500", NULL, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    t0 = h_now_ms();
    /* the first poll tells how many were dropped; dropped + kept accounts for every event */
    while (omprpc_client_next_events_lines(c, 1000, 0, &lines, &err) == OMPRPC_STATUS_OK) {
        for (p = lines; *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            char *one = (char *)malloc(len + 1);
            memcpy(one, p, len);
            one[len] = '\0';
            if (strstr(one, "\"event_overflow\"")) {
                jval *v = json_parse(one);
                int ok = 0;
                dropped += (long)jnum(jget(v, "dropped"), &ok);
                overflow_events++;
                if (overflow_events == 1) o.ms = (long)(h_now_ms() - t0);
                json_free(v);
            } else {
                kept++;
            }
            free(one);
            p += len + (nl ? 1 : 0);
        }
        h_strfree(&lines);
    }
    h_strfree(&err);
    /* ready + agent_start, turn_start, message_start, 500 updates, message_end, turn_end, agent_end */
    CHECKF(overflow_events >= 1 && dropped > 0, "no event_overflow (dropped %ld)", dropped);
    CHECKF(dropped + kept == 507, "dropped %ld + kept %ld != 507 events: some were lost silently", dropped, kept);
    snprintf(o.err, sizeof o.err, "event_overflow: dropped %ld, kept %ld (sum 507)", dropped, kept);
    o.st = OMPRPC_STATUS_OK;
    omprpc_client_free(c);
    finish(&o, overflow_events >= 1);
}

static void sigstopped_agent(void) {
    outcome o;
    omprpc_client *c;
    char *out = NULL, *err = NULL;
    int64_t t0;
    long close_ms;
    begin(&o, "SIGSTOPped agent (request 500 ms, then close)", "TIMEOUT; close kills");
    if (!(c = START(NULL, "\"stop_grace_ms\":300,\"kill_grace_ms\":300"))) return;
    o.pid = proc_client_pid(c);
    CHECK(o.pid > 0 && kill((pid_t)o.pid, SIGSTOP) == 0);
    t0 = h_now_ms();
    took(&o, omprpc_client_get_state(c, 500, &out, &err), &err, t0);
    h_strfree(&out);
    t0 = h_now_ms();
    CHECK_OK(omprpc_client_close(c, &err), err);
    close_ms = (long)(h_now_ms() - t0);
    note(&o, "; close of the stopped agent: %ld ms", close_ms);
    CHECKF(close_ms < HANG_GUARD_MS, "close of a stopped agent took %ld ms", close_ms);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_TIMEOUT));
}

static void ignores_sigterm(void) {
    outcome o;
    omprpc_client *c;
    char *err = NULL;
    int64_t t0;
    begin(&o, "agent ignores SIGTERM (grace 200 + 200 ms)", "close OK via SIGKILL");
    if (!(c = START("\"--scenario\",\"ignore-term\"", "\"stop_grace_ms\":200,\"kill_grace_ms\":200"))) return;
    o.pid = proc_client_pid(c);
    t0 = h_now_ms();
    took(&o, omprpc_client_close(c, &err), &err, t0);
    snprintf(o.err, sizeof o.err, "time = close (stdin EOF, grace, SIGTERM, grace, SIGKILL)");
    CHECKF(o.ms >= 350, "close returned after %ld ms: it did not wait the two graces", o.ms);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_OK));
}

static long read_pid_file(const char *path) {
    char buf[32];
    FILE *f;
    int64_t deadline = h_now_ms() + WAIT_MS;
    for (;;) {
        size_t n;
        f = fopen(path, "r");
        if (f) {
            n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            if (n) return atol(buf);
        }
        if (h_now_ms() > deadline) return 0;
        h_sleep_ms(10);
    }
}

static void grandchild_outlives_parent(int crash) {
    outcome o;
    omprpc_client *c;
    char dir[] = "/tmp/omprpc-ft-XXXXXX", base[64], pidf[80], beatf[80], msg[128], *out = NULL, *err = NULL;
    int64_t t0;
    begin(&o, crash ? "grandchild outlives its crashed parent" : "grandchild alive at close",
          crash ? "PROCESS_EXITED; group killed" : "close OK; group killed");
    if (!mkdtemp(dir)) return;
    snprintf(base, sizeof base, "%s/gc", dir);
    snprintf(pidf, sizeof pidf, "%s.pid", base);
    snprintf(beatf, sizeof beatf, "%s.beat", base);
    if ((c = START(NULL, "\"stop_grace_ms\":200"))) {
        o.pid = proc_client_pid(c);
        snprintf(msg, sizeof msg, "grandchild %s", base);
        CHECK_OK(omprpc_client_prompt_and_wait(c, msg, NULL, WAIT_MS, &out, &err), err);
        h_strfree(&out);
        o.grandchild = read_pid_file(pidf);
        CHECKF(o.grandchild > 0 && proc_pid_left(o.grandchild), "the grandchild never started");
        if (crash) {
            t0 = h_now_ms();
            took(&o, omprpc_client_prompt_and_wait(c, "crash", NULL, WAIT_MS, &out, &err), &err, t0);
            h_strfree(&out);
            /* the parent is gone; the grandchild still runs in the group until close */
            CHECKF(proc_pid_left(o.grandchild), "the grandchild died with its parent (the test proves nothing)");
            t0 = h_now_ms();
            CHECK_OK(omprpc_client_close(c, &err), err);
            note(&o, "; close: %ld ms", (long)(h_now_ms() - t0));
        } else {
            t0 = h_now_ms();
            took(&o, omprpc_client_close(c, &err), &err, t0);
            snprintf(o.err, sizeof o.err, "time = close");
        }
        omprpc_client_free(c);
    }
    finish(&o, crash ? is(o.st, OMPRPC_STATUS_PROCESS_EXITED) : is(o.st, OMPRPC_STATUS_OK));
    remove(pidf);
    remove(beatf);
    rmdir(dir);
}

static void exit_before_ready(void) {
    outcome o;
    omprpc_client *c = NULL;
    char *err = NULL, *opts = h_opts("\"--scenario\",\"exit-early\"", NULL);
    int64_t t0;
    begin(&o, "exit before ready (exit 1)", "PROCESS_EXITED");
    t0 = h_now_ms();
    took(&o, omprpc_client_start(opts, &c, &err), &err, t0);
    free(opts);
    CHECKF(strstr(o.err, "boom: no model configured") != NULL, "stderr missing: %s", o.err);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROCESS_EXITED));
}

static void chunk_violation(void) {
    outcome o;
    omprpc_client *c = NULL;
    char *out = NULL, *err = NULL, *opts = h_opts("\"--scenario\",\"chunk-violation\"", NULL);
    int64_t t0;
    begin(&o, "v2 chunk sequence violation", "PROTOCOL");
    t0 = h_now_ms();
    took(&o, omprpc_client_start(opts, &c, &err), &err, t0);
    free(opts);
    if (o.st == OMPRPC_STATUS_OK) {
        /* the bad chunk follows the negotiation: start may see it, or the next call */
        o.pid = proc_client_pid(c);
        took(&o, omprpc_client_get_state(c, WAIT_MS, &out, &err), &err, t0);
        h_strfree(&out);
    }
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROTOCOL) || (o.st == OMPRPC_STATUS_CLOSED && strstr(o.err, "(PROTOCOL)")));
}

static void stdin_closed(void) {
    outcome o;
    omprpc_client *c;
    char *err = NULL;
    omprpc_status st;
    int64_t t0;
    begin(&o, "agent closes stdin (writes meet EPIPE)", "PROCESS_EXITED");
    if (!(c = START("\"--scenario\",\"stdin-close\"", "\"stop_grace_ms\":100,\"kill_grace_ms\":100"))) return;
    o.pid = proc_client_pid(c);
    h_sleep_ms(200);
    t0 = h_now_ms();
    st = omprpc_client_send_frame(c, "{\"type\":\"widget_layout\",\"widgetKey\":\"k\"}", &err);
    if (st == OMPRPC_STATUS_OK) { /* the pipe buffer may take one frame; the next write fails */
        h_strfree(&err);
        st = omprpc_client_send_frame(c, "{\"type\":\"widget_layout\",\"widgetKey\":\"k\"}", &err);
    }
    took(&o, st, &err, t0);
    omprpc_client_free(c);
    finish(&o, is(o.st, OMPRPC_STATUS_PROCESS_EXITED));
}

static void print_table(FILE *f) {
    int i;
    fprintf(f, "| # | fault | expected | status | time to error | message (excerpt) | processes left | check |\n");
    fprintf(f, "|---|---|---|---|---:|---|---|---|\n");
    for (i = 0; i < nrows; i++)
        fprintf(f, "| %d | %s | %s | %s | %ld ms | %s | %s | %s |\n", i + 1, rows[i].fault, rows[i].expected,
                rows[i].status, rows[i].ms, rows[i].message, rows[i].left, rows[i].pass ? "ok" : "FAIL");
}

static void test_fault_table(void) {
    crash_mid_turn();
    hang_turn_deadline();
    hang_idle_timeout();
    silent_at_start();
    garbage_line();
    garbage_line_skipped();
    half_line_eof();
    stdout_closed();
    stderr_flood();
    invalid_utf8(0);
    invalid_utf8(1);
    frame_over_max();
    outbound_over_max();
    consumer_never_polls();
    sigstopped_agent();
    ignores_sigterm();
    grandchild_outlives_parent(0);
    grandchild_outlives_parent(1);
    exit_before_ready();
    chunk_violation();
    stdin_closed();
}

int main(void) {
    const char *path;
    int i, failed_rows = 0;
    h_init();
    RUN(test_fault_table);
    for (i = 0; i < nrows; i++) failed_rows += !rows[i].pass;
    if (nrows < 21) failed_rows++; /* a scenario that could not even start */
    printf("\n");
    print_table(stdout);
    path = getenv("OMPRPC_FAULT_TABLE");
    if (path && *path) {
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        fprintf(f, "# Fault table\n\nGenerated by `make fault-table` (tests/c/fault_table.c): each fault injected "
                   "through the fake agent, the status it ends in, the time from the call that meets it to the "
                   "error (\"no call\": from start's return until the event queue says CLOSED; the close reason's "
                   "code in parentheses), and the processes left afterwards (the agent's process group and this program's "
                   "children, scanned in /proc).\n\n");
        print_table(f);
        fclose(f);
    }
    return h_summary() || failed_rows ? 1 : 0;
}

/*
 * A tiny test harness for the omprpc C test programs (C99 + pthread; what differs between
 * POSIX and Windows is in platform.h).
 *
 *   static void test_something(void) { CHECK(1 + 1 == 2); }
 *   int main(void) { h_init(); RUN(test_something); return h_summary(); }
 *
 * - CHECK(cond), CHECKF(cond, fmt, ...) print `file:line: [test] message` on failure.
 * - CHECK_OK(call, err) / CHECK_STATUS(call, expected, err) run an omprpc call whose
 *   out_error parameter is `&err`, compare the status, print the error JSON on a mismatch,
 *   and verify the error contract on every call (out_error written only on failure, as
 *   `{"code":<status name>,"status":<number>,"message":"…"}`). CHECK_OK frees `err`;
 *   CHECK_STATUS leaves it for the test to inspect and free (h_strfree(&err)).
 * - SKIP_IF(cond, reason) ends a test that cannot run here (a POSIX-only subject on Windows,
 *   say) as skipped, printing the reason; a skipped test never counts as passed.
 * - The last line printed is exactly `N passed, N failed, N skipped` (tests, not checks); the
 *   exit status is non-zero when anything failed.
 * - OMPRPC_TEST_FILTER=substring runs only the matching tests.
 * - A watchdog (SIGALRM, or a thread on Windows) aborts a test that runs longer than
 *   H_TEST_DEADLINE_S with a message naming it, so a hang inside the library never hangs CI
 *   silently.
 * - Every blocking call in the tests uses at most WAIT_MS (10 s).
 */
#ifndef OMPRPC_TEST_HARNESS_H
#define OMPRPC_TEST_HARNESS_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h"
#include "platform.h"

/* The longest any single wait in a test may take. */
/* OMPRPC_TEST_WAIT_MS raises it for slow runs (valgrind). */
static long h_wait_ms_value = 10000;
#define WAIT_MS ((int64_t)h_wait_ms_value)
/* The host tool the fake agent's "needs host tool" prompt calls (start option host_tools). */
#define ECHO_TOOL                                                                            \
    "{\"name\":\"echo_host\",\"description\":\"Echo from the C host\",\"parameters\":"       \
    "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},"              \
    "\"required\":[\"message\"],\"additionalProperties\":false}}"
/* START(SLOW_TO_STOP_ARGS, SLOW_TO_STOP_OPTS): a fake agent that outlives its stdin's end and
 * SIGTERM, so stopping it takes stop_grace_ms (3 s): a waiter woken well before that was woken
 * by close itself, not by the agent's end. */
#define SLOW_TO_STOP_ARGS "\"--scenario\",\"ignore-term\""
#define SLOW_TO_STOP_OPTS "\"stop_grace_ms\":3000,\"kill_grace_ms\":100"
/* Watchdog per test; generous so that slow sanitizer builds still pass. */
#define H_TEST_DEADLINE_S 120

static int h_passed, h_failed, h_skipped, h_current_failed, h_current_skipped;
static const char *h_current = "(none)";
static pthread_mutex_t h_lock = PTHREAD_MUTEX_INITIALIZER;
static char h_alarm_msg[256];

static inline int64_t h_now_ms(void) { return plat_now_ms(); }

static inline void h_sleep_ms(long ms) { plat_sleep_ms(ms); }

static inline void h_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&h_lock);
    h_current_failed = 1;
    fprintf(stderr, "%s:%d: [%s] ", file, line, h_current);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&h_lock);
}

/* Marks the running test skipped, with the reason printed (the caller then returns). */
static char h_skip_reason[256];
static inline void h_skip(const char *reason) {
    pthread_mutex_lock(&h_lock);
    h_current_skipped = 1;
    snprintf(h_skip_reason, sizeof h_skip_reason, "%s", reason);
    pthread_mutex_unlock(&h_lock);
}

#define SKIP_IF(cond, reason) \
    do {                      \
        if (cond) {           \
            h_skip(reason);   \
            return;           \
        }                     \
    } while (0)

#define CHECK(cond) ((cond) ? (void)0 : h_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond))
#define CHECKF(cond, ...) ((cond) ? (void)0 : h_fail(__FILE__, __LINE__, __VA_ARGS__))
/* String equality that prints both sides; NULL-safe. */
#define CHECK_STR(got, want) h_check_str(__FILE__, __LINE__, #got, (got), (want))

static inline int h_check_str(const char *file, int line, const char *expr, const char *got,
                              const char *want) {
    if (got && want && !strcmp(got, want)) return 1;
    if (!got && !want) return 1;
    h_fail(file, line, "%s is %s%s%s, expected \"%s\"", expr, got ? "\"" : "", got ? got : "NULL",
           got ? "\"" : "", want ? want : "NULL");
    return 0;
}

static inline void h_strfree(char **s) {
    if (*s) omprpc_string_free(*s);
    *s = NULL;
}

static inline const char *h_name(omprpc_status s) { return omprpc_status_name(s); }

/* Checks the status of a call, and the out_error contract (see the file comment). */
static inline int h_check_status(const char *file, int line, const char *expr, omprpc_status got,
                          omprpc_status want, char **err, int free_err) {
    int ok = 1;
    if (got != want) {
        h_fail(file, line, "%s returned %s (%d), expected %s; error: %s", expr, h_name(got), (int)got,
               h_name(want), *err ? *err : "(none)");
        ok = 0;
    }
    if (got == OMPRPC_STATUS_OK && *err) {
        h_fail(file, line, "%s succeeded but wrote out_error: %s", expr, *err);
        ok = 0;
    } else if (got != OMPRPC_STATUS_OK && !*err) {
        h_fail(file, line, "%s failed with %s but wrote no out_error", expr, h_name(got));
        ok = 0;
    } else if (got != OMPRPC_STATUS_OK) {
        jval *e = json_parse(*err);
        int is_num = 0;
        double status = jnum(jget(e, "status"), &is_num);
        if (!jis(e, J_OBJ)) {
            h_fail(file, line, "%s: out_error is not a JSON object: %s", expr, *err);
            ok = 0;
        } else if (!jstr(jget(e, "code")) || strcmp(jstr(jget(e, "code")), h_name(got)) != 0 ||
                   !is_num || (int)status != (int)got || !jstr(jget(e, "message"))) {
            h_fail(file, line, "%s: out_error does not match {\"code\":\"%s\",\"status\":%d,\"message\":…}: %s",
                   expr, h_name(got), (int)got, *err);
            ok = 0;
        }
        json_free(e);
    }
    if (free_err) h_strfree(err);
    return ok;
}

#define CHECK_OK(call, err) \
    h_check_status(__FILE__, __LINE__, #call, (call), OMPRPC_STATUS_OK, &(err), 1)
#define CHECK_STATUS(call, want, err) \
    h_check_status(__FILE__, __LINE__, #call, (call), (want), &(err), 0)

/* Copies the error JSON's string field (e.g. "message", "command") into `buf`; returns
 * `buf`, or NULL when the field is absent or not a string. */
static inline const char *h_err_field(const char *err, const char *field, char *buf, size_t cap) {
    jval *e = json_parse(err);
    const char *s = jstr(jget(e, field));
    if (!s) {
        json_free(e);
        return NULL;
    }
    strncpy(buf, s, cap - 1);
    buf[cap - 1] = '\0';
    json_free(e);
    return buf;
}

/* Parses JSON returned by the library, failing the test when it does not parse. */
#define PARSE(text) h_parse(__FILE__, __LINE__, #text, (text))
static inline jval *h_parse(const char *file, int line, const char *expr, const char *text) {
    jval *v = json_parse(text);
    if (!v) h_fail(file, line, "%s is not valid JSON: %.300s", expr, text ? text : "NULL");
    return v;
}

/* A NUL-terminated copy of a borrowed slice (NULL for an absent one). Free with free(). */
static inline char *h_dup_str(omprpc_str s) {
    char *out;
    if (!s.data) return NULL;
    out = (char *)malloc(s.len + 1);
    if (!out) return NULL;
    memcpy(out, s.data, s.len);
    out[s.len] = '\0';
    return out;
}

/* Parses a borrowed JSON slice; NULL (and a failed check) when it is absent or not JSON. */
#define PARSE_STR(s) h_parse_str(__FILE__, __LINE__, #s, (s))
static inline jval *h_parse_str(const char *file, int line, const char *expr, omprpc_str s) {
    char *text = h_dup_str(s);
    jval *v;
    if (!text) {
        h_fail(file, line, "%s is absent", expr);
        return NULL;
    }
    v = h_parse(file, line, expr, text);
    free(text);
    return v;
}

/* A borrowed slice is `text` (NULL: the slice is absent). */
static inline int h_str_is(omprpc_str s, const char *text) {
    if (!text || !s.data) return !text && !s.data;
    return s.len == strlen(text) && !memcmp(s.data, text, s.len);
}

#define CHECK_OSTR(s, want)                                                                             \
    CHECKF(h_str_is((s), (want)), "%s is \"%.*s\", expected \"%s\"", #s, (s).data ? (int)(s).len : 6,     \
           (s).data ? (s).data : "(none)", (want) ? (want) : "(none)")

/* The turn JSON's name of an outcome. */
static inline const char *h_outcome_name(omprpc_turn_outcome o) {
    switch (o) {
    case OMPRPC_TURN_OUTCOME_AGENT_END: return "agent_end";
    case OMPRPC_TURN_OUTCOME_PROMPT_RESULT: return "prompt_result";
    case OMPRPC_TURN_OUTCOME_NOT_INVOKED: return "not_invoked";
    case OMPRPC_TURN_OUTCOME_AGENT_SETTLED: return "agent_settled";
    case OMPRPC_TURN_OUTCOME_ABORTED: return "aborted";
    }
    return "?";
}

/* How many of a structured turn's events have `type`, and the type of its last one (into
 * `last`, which may be NULL); -1 when the events cannot be had. */
#define TURN_COUNT_TYPE(t, type, last, cap) h_turn_count_type(__FILE__, __LINE__, (t), (type), (last), (cap))
static inline int h_turn_count_type(const char *file, int line, const omprpc_turn *t, const char *type, char *last, size_t cap) {
    const omprpc_event_view *evs = NULL;
    size_t n = 0, i;
    int count = 0;
    char *err = NULL;
    if (last) last[0] = '\0';
    if (omprpc_turn_events(t, &evs, &n, &err) != OMPRPC_STATUS_OK) {
        h_fail(file, line, "omprpc_turn_events: %s", err ? err : "(no error)");
        omprpc_string_free(err);
        return -1;
    }
    for (i = 0; i < n; i++) count += h_str_is(evs[i].event_type, type);
    if (last && n && evs[n - 1].event_type.data)
        snprintf(last, cap, "%.*s", (int)evs[n - 1].event_type.len, evs[n - 1].event_type.data);
    return count;
}

/* --- the fake agent and client helpers ----------------------------------------------- */

static const char *h_fake_agent_path;

static inline const char *h_fake(void) { return h_fake_agent_path; }

/* Options JSON `{"command":[FAKE <, args>] <, extra>}`; `args` is a comma-separated list of
 * JSON strings (or NULL), `extra` more members of the object (or NULL). Free with free(). */
static inline char *h_opts(const char *args, const char *extra) {
    char *fake = json_quote(h_fake());
    size_t n = strlen(fake) + (args ? strlen(args) : 0) + (extra ? strlen(extra) : 0) + 64;
    char *out = (char *)malloc(n);
    snprintf(out, n, "{\"command\":[%s%s%s]%s%s}", fake, args ? "," : "", args ? args : "",
             extra ? "," : "", extra ? extra : "");
    free(fake);
    return out;
}

/* Starts a client on the fake agent; NULL (and a failed check) if that fails. */
#define START(args, extra) h_start(__FILE__, __LINE__, (args), (extra))
static inline omprpc_client *h_start(const char *file, int line, const char *args, const char *extra) {
    omprpc_client *c = NULL;
    char *err = NULL;
    char *opts = h_opts(args, extra);
    omprpc_status st = omprpc_client_start(opts, &c, &err);
    if (st != OMPRPC_STATUS_OK || !c) {
        h_fail(file, line, "omprpc_client_start(%s) returned %s; error: %s", opts, h_name(st),
               err ? err : "(none)");
        c = NULL;
    }
    h_strfree(&err);
    free(opts);
    return c;
}

/* Polls the event queue until an event of `type` arrives (others are discarded); returns it
 * parsed, or NULL after timeout_ms. */
static inline jval *h_wait_event(omprpc_client *c, const char *type, int64_t timeout_ms) {
    int64_t deadline = h_now_ms() + timeout_ms;
    for (;;) {
        char *ev = NULL, *err = NULL;
        int64_t left = deadline - h_now_ms();
        omprpc_status st;
        if (left < 0) left = 0;
        st = omprpc_client_next_event(c, left, &ev, &err);
        h_strfree(&err);
        if (st != OMPRPC_STATUS_OK) return NULL;
        {
            jval *v = json_parse(ev);
            h_strfree(&ev);
            if (v && jstr(jget(v, "type")) && !strcmp(jstr(jget(v, "type")), type)) return v;
            json_free(v);
        }
        if (h_now_ms() >= deadline) return NULL;
    }
}

/* Number of items of the JSON array `arr` whose "type" is `type`. */
static inline int h_count_type(const jval *arr, const char *type) {
    size_t i;
    int n = 0;
    for (i = 0; i < jlen(arr); i++) {
        const char *t = jstr(jget(jat(arr, i), "type"));
        if (t && !strcmp(t, type)) n++;
    }
    return n;
}

/* The `nth` (0-based) item of `arr` with "type" == `type`, or NULL. */
static inline jval *h_find_type(const jval *arr, const char *type, int nth) {
    size_t i;
    for (i = 0; i < jlen(arr); i++) {
        const char *t = jstr(jget(jat(arr, i), "type"));
        if (t && !strcmp(t, type) && nth-- == 0) return jat(arr, i);
    }
    return NULL;
}

/* --- running tests ------------------------------------------------------------------- */

static char h_fake_agent_buf[4096];

static inline void h_init(void) {
    const char *fake = getenv("OMPRPC_FAKE_AGENT");
    if (getenv("OMPRPC_TEST_WAIT_MS")) h_wait_ms_value = atol(getenv("OMPRPC_TEST_WAIT_MS"));
    if (!fake || !*fake || strlen(fake) >= sizeof h_fake_agent_buf) {
        fprintf(stderr, "OMPRPC_FAKE_AGENT must name the omprpc-fake-agent binary (make c-tests sets it)\n");
        exit(2);
    }
    /* A copy: a test that changes the environment may move getenv's strings (Windows' CRT does). */
    strcpy(h_fake_agent_buf, fake);
    h_fake_agent_path = h_fake_agent_buf;
    plat_watchdog_start();
    plat_sigpipe_ignore();
    plat_stdout_by_line();
}

typedef void (*h_test_fn)(void);

#define RUN(fn) h_run(#fn, fn)
static inline void h_run(const char *name, h_test_fn fn) {
    const char *filter = getenv("OMPRPC_TEST_FILTER");
    int64_t t0;
    if (filter && *filter && !strstr(name, filter)) return;
    h_current = name;
    h_current_failed = 0;
    h_current_skipped = 0;
    snprintf(h_alarm_msg, sizeof h_alarm_msg,
             "\nWATCHDOG: test %s ran longer than %d s (a call that should have returned is stuck)\n",
             name, H_TEST_DEADLINE_S);
    plat_watchdog_arm(H_TEST_DEADLINE_S, h_alarm_msg);
    t0 = h_now_ms();
    fn();
    plat_watchdog_disarm();
    if (h_current_failed) {
        h_failed++;
        printf("FAIL %s (%lld ms)\n", name, (long long)(h_now_ms() - t0));
    } else if (h_current_skipped) {
        h_skipped++;
        printf("SKIP %s: %s\n", name, h_skip_reason);
    } else {
        h_passed++;
        printf("ok   %s (%lld ms)\n", name, (long long)(h_now_ms() - t0));
    }
    fflush(stdout);
    h_current = "(none)";
}

static inline int h_summary(void) {
    printf("%d passed, %d failed, %d skipped\n", h_passed, h_failed, h_skipped);
    fflush(stdout);
    return h_failed ? 1 : 0;
}

#endif /* OMPRPC_TEST_HARNESS_H */

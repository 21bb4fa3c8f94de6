/*
 * Observability through the C API: omprpc_client_counters and the log channel
 * (omprpc_client_next_logs): off by default, levels, redaction of secrets, TIMEOUT, CLOSED
 * after teardown, a poll blocked on another thread woken by close.
 */
#include "harness.h"

#define SECRET_PROMPT "c-test secret system prompt 4242"
#define API_KEY "sk-c-test-api-key-0123456789"

static double num(const jval *o, const char *key) {
    int ok = 0;
    double d = jnum(jget(o, key), &ok);
    CHECKF(ok, "counter %s is not a number", key);
    return d;
}

static void test_counters(void) {
    char *out = NULL, *err = NULL;
    omprpc_client *c = START(NULL, NULL);
    jval *k;
    if (!c) return;
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    while (omprpc_client_next_events(c, 1000, 0, &out, &err) == OMPRPC_STATUS_OK) h_strfree(&out);
    h_strfree(&err);
    CHECK_OK(omprpc_client_counters(c, &out, &err), err);
    k = PARSE(out);
    CHECK(num(k, "requests_sent") == 2);
    CHECK(num(k, "frames_out") == 2);
    CHECK(num(k, "responses") == 2);
    CHECK(num(k, "requests_pending") == 0);
    CHECK(num(k, "frames_in") > 5);
    CHECK(num(k, "bytes_in") > num(k, "frames_in"));
    CHECK(num(k, "events_queued") == num(k, "events_delivered"));
    CHECK(num(k, "events_dropped") == 0);
    CHECK(num(k, "time_to_first_event_ms") >= 0);
    CHECK(num(k, "last_prompt_first_event_ms") >= 0);
    CHECK(num(k, "uptime_ms") >= num(k, "time_to_first_event_ms"));
    CHECK(jbool(jget(k, "closed")) == 0);
    json_free(k);
    h_strfree(&out);
    CHECK_STATUS(omprpc_client_counters(c, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_counters(NULL, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_OK(omprpc_client_close(c, &err), err);
    /* Still readable after close. */
    CHECK_OK(omprpc_client_counters(c, &out, &err), err);
    k = PARSE(out);
    CHECK(jbool(jget(k, "closed")) == 1);
    json_free(k);
    h_strfree(&out);
    omprpc_client_free(c);
}

static void test_logs_are_off_by_default(void) {
    char *out = NULL, *err = NULL;
    char msg[256];
    omprpc_client *c = START(NULL, NULL);
    if (!c) return;
    CHECK_STATUS(omprpc_client_next_logs(c, 10, 0, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    CHECK(out == NULL);
    CHECK(err && h_err_field(err, "message", msg, sizeof msg) && strstr(msg, "log_level"));
    h_strfree(&err);
    omprpc_client_free(c);
    /* An unknown level is refused at start, naming the option. */
    {
        char *opts = h_opts(NULL, "\"log_level\":\"chatty\"");
        CHECK_STATUS(omprpc_client_start(opts, &c, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        CHECK(err && strstr(err, "log_level"));
        h_strfree(&err);
        free(opts);
    }
}

/* Takes every record until CLOSED; returns them concatenated (JSON arrays back to back). */
static char *drain_logs(omprpc_client *c) {
    size_t len = 0, cap = 1;
    char *all = (char *)calloc(1, 1);
    for (;;) {
        char *out = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_logs(c, 16, WAIT_MS, &out, &err);
        if (st != OMPRPC_STATUS_OK) {
            CHECKF(st == OMPRPC_STATUS_CLOSED, "next_logs ended with %s: %s", h_name(st), err ? err : "");
            h_strfree(&err);
            return all;
        }
        {
            jval *arr = PARSE(out);
            size_t n = strlen(out);
            CHECK(jis(arr, J_ARR) && jlen(arr) >= 1 && jlen(arr) <= 16);
            json_free(arr);
            if (len + n + 1 > cap) {
                cap = (len + n + 1) * 2;
                all = (char *)realloc(all, cap);
            }
            memcpy(all + len, out, n + 1);
            len += n;
        }
        h_strfree(&out);
    }
}

static void test_debug_logs_without_secrets(void) {
    char *out = NULL, *err = NULL, *all;
    omprpc_client *c = NULL;
    char *fake = json_quote(h_fake());
    char opts[1024];
    snprintf(opts, sizeof opts,
             "{\"executable\":%s,\"system_prompt\":\"" SECRET_PROMPT "\",\"env\":{\"OPENAI_API_KEY\":\"" API_KEY
             "\"},\"log_level\":\"debug\",\"stop_grace_ms\":500}",
             fake);
    free(fake);
    CHECK_OK(omprpc_client_start(opts, &c, &err), err);
    if (!c) return;
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    CHECK_OK(omprpc_client_bash(c, "echo c-private-words", WAIT_MS, &out, &err), err);
    h_strfree(&out);
    /* One record at a time works, and an empty queue times out. */
    CHECK_OK(omprpc_client_next_logs(c, 1, WAIT_MS, &out, &err), err);
    {
        jval *arr = PARSE(out);
        CHECK(jlen(arr) == 1);
        CHECK_STR(jstr(jget(jat(arr, 0), "message")), "agent spawned");
        CHECK_STR(jstr(jget(jat(arr, 0), "level")), "info");
        json_free(arr);
    }
    h_strfree(&out);
    CHECK_STATUS(omprpc_client_next_logs(c, 1, -7, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_next_logs(c, 1, 0, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_OK(omprpc_client_close(c, &err), err);
    all = drain_logs(c);
    CHECKF(strstr(all, "\"handshake done\"") != NULL, "no handshake record: %.2000s", all);
    CHECKF(strstr(all, "\"request sent\"") && strstr(all, "\"latency_ms\""), "no request records: %.2000s", all);
    CHECKF(strstr(all, "\"teardown complete\"") != NULL, "no teardown record: %.2000s", all);
    CHECKF(!strstr(all, "secret system prompt") && !strstr(all, API_KEY) && !strstr(all, "c-private-words"),
           "a secret leaked: %.4000s", all);
    CHECKF(!strstr(all, "\"trace\""), "debug collects no trace records");
    free(all);
    /* Drained and closed: CLOSED at once. */
    CHECK_STATUS(omprpc_client_next_logs(c, 1, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

struct poller {
    omprpc_client *c;
    omprpc_status last;
    int records;
};

static void *poll_logs(void *arg) {
    struct poller *p = (struct poller *)arg;
    for (;;) {
        char *out = NULL, *err = NULL;
        p->last = omprpc_client_next_logs(p->c, 100, OMPRPC_TIMEOUT_INFINITE, &out, &err);
        if (p->last != OMPRPC_STATUS_OK) {
            h_strfree(&err);
            return NULL;
        }
        p->records++;
        h_strfree(&out);
    }
}

static void test_close_wakes_a_blocked_log_poll(void) {
    char *err = NULL;
    pthread_t t;
    struct poller p;
    int64_t t0;
    p.c = START(NULL, "\"log_level\":\"info\",\"stop_grace_ms\":500");
    p.last = OMPRPC_STATUS_OK;
    p.records = 0;
    if (!p.c) return;
    pthread_create(&t, NULL, poll_logs, &p);
    h_sleep_ms(100);
    t0 = h_now_ms();
    CHECK_OK(omprpc_client_close(p.c, &err), err);
    pthread_join(t, NULL);
    CHECK(p.last == OMPRPC_STATUS_CLOSED);
    CHECK(p.records >= 1);
    CHECK(h_now_ms() - t0 < WAIT_MS);
    omprpc_client_free(p.c);
}

int main(void) {
    h_init();
    RUN(test_counters);
    RUN(test_logs_are_off_by_default);
    RUN(test_debug_logs_without_secrets);
    RUN(test_close_wakes_a_blocked_log_poll);
    return h_summary();
}

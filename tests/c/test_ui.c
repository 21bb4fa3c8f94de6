/*
 * Extension UI requests through the C API: next_ui_request + the three answers, the
 * headless policy, passive / unknown / dismissed requests, and the pi flavour (UI request
 * before the prompt's response, no ready frame).
 */
#include "harness.h"

/* next_ui_request, parsed; NULL (and a failed check) unless OK. */
static jval *next_ui(omprpc_client *c) {
    char *out = NULL, *err = NULL;
    jval *v = NULL;
    if (CHECK_OK(omprpc_client_next_ui_request(c, WAIT_MS, &out, &err), err)) v = PARSE(out);
    h_strfree(&out);
    return v;
}

static void prompt_only(omprpc_client *c, const char *message) {
    char *id = NULL, *err = NULL;
    if (CHECK_OK(omprpc_client_prompt(c, message, NULL, WAIT_MS, &id, &err), err)) {
        CHECKF(id && *id, "prompt(\"%s\") returned no request id", message);
        h_strfree(&id);
    }
}

/* The agent's echo of the answer it received (`ui_response_seen.frame`), from the queue. */
static jval *seen_answer(omprpc_client *c, const char *id) {
    int64_t deadline = h_now_ms() + WAIT_MS;
    while (h_now_ms() < deadline) {
        jval *ev = h_wait_event(c, "ui_response_seen", deadline - h_now_ms());
        if (!ev) break;
        if (jpath_str(ev, "frame.id") && !strcmp(jpath_str(ev, "frame.id"), id)) return ev;
        json_free(ev);
    }
    h_fail(__FILE__, __LINE__, "the agent never saw an answer to %s", id);
    return NULL;
}

static void test_ui_round_trips(void) {
    omprpc_client *c = START(NULL, NULL);
    char *err = NULL;
    jval *req, *seen;
    if (!c) return;

    prompt_only(c, "needs ui");
    req = next_ui(c);
    CHECK_STR(jpath_str(req, "method"), "input");
    CHECK_STR(jpath_str(req, "id"), "ui-1");
    CHECK_STR(jpath_str(req, "type"), "extension_ui_request");
    CHECK_OK(omprpc_client_ui_send_value(c, "ui-1", "approved", &err), err);
    json_free(req);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    seen = seen_answer(c, "ui-1");
    CHECK_STR(jpath_str(seen, "frame.value"), "approved");
    json_free(seen);
    /* answered: no longer open */
    CHECK_STATUS(omprpc_client_ui_send_value(c, "ui-1", "again", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);

    prompt_only(c, "needs confirm");
    req = next_ui(c);
    CHECK_STR(jpath_str(req, "method"), "confirm");
    CHECK_STR(jpath_str(req, "id"), "ui-2");
    json_free(req);
    CHECK_OK(omprpc_client_ui_send_confirmation(c, "ui-2", true, &err), err);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    seen = seen_answer(c, "ui-2");
    CHECK(jbool(jpath(seen, "frame.confirmed")) == 1);
    json_free(seen);

    prompt_only(c, "needs cancel");
    req = next_ui(c);
    CHECK_STR(jpath_str(req, "method"), "editor");
    CHECK_STR(jpath_str(req, "id"), "ui-3");
    json_free(req);
    CHECK_OK(omprpc_client_ui_cancel(c, "ui-3", true, &err), err);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    seen = seen_answer(c, "ui-3");
    CHECK(jbool(jpath(seen, "frame.cancelled")) == 1);
    CHECK(jbool(jpath(seen, "frame.timedOut")) == 1);
    json_free(seen);

    CHECK_STATUS(omprpc_client_ui_send_value(c, "no-such-request", "x", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_ui_send_confirmation(c, "no-such-request", false, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_ui_cancel(c, "no-such-request", false, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    /* nothing pending: a zero timeout polls */
    {
        char *out = NULL;
        CHECK_STATUS(omprpc_client_next_ui_request(c, 0, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
        h_strfree(&err);
        CHECK(out == NULL);
    }
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    omprpc_status st;
    int64_t returned_at;
} ui_wait_job;

static void *ui_waiter(void *arg) {
    ui_wait_job *j = (ui_wait_job *)arg;
    char *out = NULL, *err = NULL;
    j->st = omprpc_client_next_ui_request(j->c, 30000, &out, &err);
    j->returned_at = h_now_ms();
    h_strfree(&out);
    h_strfree(&err);
    return NULL;
}

/* spec/PROTOCOL.md §6.5: a thread waiting for a UI request is woken by close. */
static void test_close_wakes_next_ui_request(void) {
    omprpc_client *c = START(SLOW_TO_STOP_ARGS, SLOW_TO_STOP_OPTS);
    char *err = NULL;
    ui_wait_job j;
    pthread_t th;
    int64_t t0;
    if (!c) return;
    memset(&j, 0, sizeof j);
    j.c = c;
    pthread_create(&th, NULL, ui_waiter, &j);
    h_sleep_ms(200); /* nothing observable to poll for: let the waiter block */
    t0 = h_now_ms();
    CHECK_OK(omprpc_client_close(c, &err), err);
    pthread_join(th, NULL);
    CHECKF(j.st == OMPRPC_STATUS_CLOSED, "next_ui_request after close: %s", h_name(j.st));
    CHECKF(j.returned_at - t0 < 1500, "next_ui_request woke %lld ms after close began",
           (long long)(j.returned_at - t0));
    omprpc_client_free(c);
}

static void test_headless_policy(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    jval *turn, *seen;
    if (!c) return;
    CHECK_OK(omprpc_client_set_ui_policy(c, "{\"confirm\":false,\"select\":null,\"input\":null,\"editor\":null}", &err), err);
    /* the input request is cancelled inside the library; the agent's follow-up turn ends the wait */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs ui", NULL, WAIT_MS, &out, &err), err)) {
        turn = PARSE(out);
        CHECK_STR(jpath_str(turn, "assistantText"), "ui acknowledged");
        json_free(turn);
        h_strfree(&out);
    }
    seen = seen_answer(c, "ui-1");
    CHECK(jbool(jpath(seen, "frame.cancelled")) == 1);
    json_free(seen);
    /* an unknown, non-passive method is cancelled too (spec/PROTOCOL.md §6.11) */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "unknown ui", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = seen_answer(c, "ui-ask");
    CHECK(jbool(jpath(seen, "frame.cancelled")) == 1);
    json_free(seen);
    /* confirm answered with the policy's value */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs confirm", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = seen_answer(c, "ui-2");
    CHECK(jbool(jpath(seen, "frame.confirmed")) == 0);
    json_free(seen);
    /* values */
    CHECK_OK(omprpc_client_set_ui_policy(c, "{\"confirm\":true,\"input\":\"typed\",\"editor\":\"edited\",\"select\":\"b\"}", &err), err);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs ui", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = seen_answer(c, "ui-1");
    CHECK_STR(jpath_str(seen, "frame.value"), "typed");
    json_free(seen);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs cancel", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = seen_answer(c, "ui-3");
    CHECK_STR(jpath_str(seen, "frame.value"), "edited");
    json_free(seen);
    /* the policy answered everything: nothing for next_ui_request */
    CHECK_STATUS(omprpc_client_next_ui_request(c, 0, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    /* removing the policy (NULL and "null") brings the requests back to the host */
    CHECK_OK(omprpc_client_set_ui_policy(c, "null", &err), err);
    CHECK_OK(omprpc_client_set_ui_policy(c, NULL, &err), err);
    prompt_only(c, "needs ui");
    {
        jval *req = next_ui(c);
        CHECK_STR(jpath_str(req, "id"), "ui-1");
        json_free(req);
    }
    CHECK_OK(omprpc_client_ui_send_value(c, "ui-1", "manual", &err), err);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    omprpc_client_free(c);
}

static void test_passive_and_dismissed_requests(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    jval *turn;
    if (!c) return;
    /* passive requests need no answer and never reach next_ui_request */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "passive ui", NULL, WAIT_MS, &out, &err), err)) {
        turn = PARSE(out);
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
        json_free(turn);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_client_next_ui_request(c, 0, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    /* ...but they are events like any other frame */
    {
        int n = 0;
        jval *ev;
        while ((ev = h_wait_event(c, "extension_ui_request", 500)) != NULL) {
            n++;
            json_free(ev);
        }
        CHECKF(n == 4, "%d passive extension_ui_request events, expected 4", n);
    }
    /* a request the agent dismisses (method cancel, targetId) is no longer open */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "ui dismiss", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    CHECK_STATUS(omprpc_client_ui_send_value(c, "ui-5", "a", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    /* a request followed by the turn: the turn ends without an answer, the request stays open */
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "ui then tool", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    {
        jval *req = NULL;
        /* ui-5 may still be queued if dismissal does not dequeue it; skip past it */
        do {
            json_free(req);
            req = next_ui(c);
        } while (req && jpath_str(req, "id") && strcmp(jpath_str(req, "id"), "ui-9") != 0);
        CHECK_STR(jpath_str(req, "id"), "ui-9");
        json_free(req);
    }
    CHECK_OK(omprpc_client_ui_send_value(c, "ui-9", "late", &err), err);
    {
        jval *seen = seen_answer(c, "ui-9");
        CHECK_STR(jpath_str(seen, "frame.value"), "late");
        json_free(seen);
    }
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    const char *message;
    omprpc_status st;
} pi_prompt_job;

static void *pi_prompter(void *arg) {
    pi_prompt_job *j = (pi_prompt_job *)arg;
    char *id = NULL, *err = NULL;
    j->st = omprpc_client_prompt(j->c, j->message, NULL, WAIT_MS, &id, &err);
    h_strfree(&id);
    h_strfree(&err);
    return NULL;
}

static void test_pi_flavour(void) {
    omprpc_client *c = START("\"--flavor\",\"pi\"", "\"flavor\":\"pi\"");
    char *out = NULL, *err = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECK_STR(jpath_str(v, "flavor"), "pi");
        json_free(v);
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECK_STR(jpath_str(v, "sessionId"), "fake-session");
        json_free(v);
        h_strfree(&out);
    }
    {
        jval *turn = NULL;
        if (CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), err)) {
            turn = PARSE(out);
            h_strfree(&out);
        }
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
        json_free(turn);
    }
    /* pi sends the UI request before it acknowledges the prompt: answer it while the
     * prompt call is still waiting in another thread */
    {
        const char *messages[] = {"needs ui", "needs confirm", "needs cancel"};
        int i;
        for (i = 0; i < 3; i++) {
            pi_prompt_job j;
            pthread_t th;
            jval *req;
            j.c = c;
            j.message = messages[i];
            j.st = OMPRPC_STATUS_PANIC;
            pthread_create(&th, NULL, pi_prompter, &j);
            req = next_ui(c);
            if (req && jpath_str(req, "id")) {
                const char *id = jpath_str(req, "id");
                if (i == 0) CHECK_OK(omprpc_client_ui_send_value(c, id, "approved", &err), err);
                if (i == 1) CHECK_OK(omprpc_client_ui_send_confirmation(c, id, true, &err), err);
                if (i == 2) CHECK_OK(omprpc_client_ui_cancel(c, id, false, &err), err);
            }
            json_free(req);
            pthread_join(th, NULL);
            CHECKF(j.st == OMPRPC_STATUS_OK, "pi prompt(\"%s\") returned %s", messages[i], h_name(j.st));
            CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
        }
    }
    /* pi answers unknown commands id-less: still correlated to the caller */
    if (CHECK_STATUS(omprpc_client_request(c, "set_host_tools", "{\"tools\":[]}", WAIT_MS, &out, &err),
                     OMPRPC_STATUS_COMMAND_FAILED, err)) {
        char buf[128];
        CHECK_STR(h_err_field(err, "command", buf, sizeof buf), "set_host_tools");
    }
    h_strfree(&err);
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_ui_round_trips);
    RUN(test_close_wakes_next_ui_request);
    RUN(test_headless_policy);
    RUN(test_passive_and_dismissed_requests);
    RUN(test_pi_flavour);
    return h_summary();
}

/*
 * The prompt lifecycle through the C API: prompt_and_wait and its turn JSON, late and
 * id-less failures, collect_events, wait_for_idle, the single-flight rule, stop during a
 * wait, the event queue (next_event / next_events, waited on with the event fd + poll(2) or, on
 * Windows, the event handle + WaitForSingleObject; overflow), history limits, protocol v2.
 */
#include "harness.h"

/* prompt_and_wait(message) on `c`; the parsed turn, or NULL (and a failed check). */
#define TURN(c, message) h_turn(__FILE__, __LINE__, (c), (message))
static jval *h_turn(const char *file, int line, omprpc_client *c, const char *message) {
    char *out = NULL, *err = NULL;
    jval *turn;
    omprpc_status st = omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &out, &err);
    if (st != OMPRPC_STATUS_OK) {
        h_fail(file, line, "prompt_and_wait(\"%s\") returned %s; error: %s", message, h_name(st),
               err ? err : "(none)");
        h_strfree(&err);
        return NULL;
    }
    turn = h_parse(file, line, "turn", out);
    h_strfree(&out);
    return turn;
}

static void test_prompt_and_wait_returns_assistant_text(void) {
    omprpc_client *c = START(NULL, NULL);
    jval *turn;
    if (!c) return;
    turn = TURN(c, "say hello");
    if (turn) {
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
        CHECKF(jlen(jget(turn, "events")) >= 3, "only %u events", (unsigned)jlen(jget(turn, "events")));
        CHECK(jstr(jget(turn, "requestId")) && *jstr(jget(turn, "requestId")));
        CHECK(jbool(jget(turn, "agentInvoked")) == 1);
        CHECK_STR(jpath_str(turn, "assistantMessage.role"), "assistant");
        CHECK(jlen(jget(turn, "messages")) == 1);
        CHECK_STR(jpath_str(turn, "messages.0.content.0.text"), "pong");
        CHECK(h_count_type(jget(turn, "events"), "agent_end") == 1);
        CHECK(h_count_type(jget(turn, "events"), "message_update") == 1);
        /* the turn is this prompt's only: `ready` came before it */
        CHECK(h_count_type(jget(turn, "events"), "ready") == 0);
    }
    json_free(turn);
    /* and the agent saw it */
    {
        char *out = NULL, *err = NULL;
        if (CHECK_OK(omprpc_client_request(c, "get_last_assistant_text", NULL, WAIT_MS, &out, &err), err)) {
            jval *v = PARSE(out);
            CHECK_STR(jpath_str(v, "text"), "pong");
            json_free(v);
        }
        h_strfree(&out);
    }
    omprpc_client_free(c);
}

static void test_turn_shapes(void) {
    omprpc_client *c = START(NULL, NULL);
    jval *turn;
    if (!c) return;
    /* thinking is not visible text */
    turn = TURN(c, "thinking");
    CHECK_STR(jpath_str(turn, "assistantText"), "visible");
    json_free(turn);
    /* a compacted agent_end is rebuilt from the streamed message_end messages */
    turn = TURN(c, "compacted");
    if (turn) {
        CHECKF(jlen(jget(turn, "messages")) == 2, "compacted: %u messages", (unsigned)jlen(jget(turn, "messages")));
        CHECK_STR(jpath_str(turn, "messages.0.role"), "assistant");
        CHECK_STR(jpath_str(turn, "messages.0.content.0.text"), "pong");
        CHECK_STR(jpath_str(turn, "messages.1.customType"), "terminal");
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    }
    json_free(turn);
    /* isTerminal:false does not end the wait; both ends are in the events */
    turn = TURN(c, "non-terminal");
    if (turn) {
        CHECK(h_count_type(jget(turn, "events"), "agent_end") == 2);
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    }
    json_free(turn);
    /* every agent event type arrives */
    turn = TURN(c, "all events");
    if (turn) {
        static const char *const types[] = {
            "agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end",
            "tool_execution_start", "tool_execution_update", "tool_execution_end", "auto_compaction_start",
            "auto_compaction_end", "auto_retry_start", "auto_retry_end", "retry_fallback_applied",
            "retry_fallback_succeeded", "ttsr_triggered", "todo_reminder", "todo_auto_clear", "agent_end"};
        size_t i;
        for (i = 0; i < sizeof types / sizeof types[0]; i++)
            CHECKF(h_count_type(jget(turn, "events"), types[i]) == 1, "all events: %s missing", types[i]);
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    }
    json_free(turn);
    omprpc_client_free(c);
}

/* Prompts that never start an agent run complete at once, and leave the client idle. */
static void test_local_prompts_complete(void) {
    omprpc_client *c = START(NULL, NULL);
    char *err = NULL;
    jval *turn;
    if (!c) return;
    turn = TURN(c, "local");
    if (turn) {
        CHECK(jbool(jget(turn, "agentInvoked")) == 0);
        CHECK(jis(jget(turn, "assistantText"), J_NULL));
    }
    json_free(turn);
    turn = TURN(c, "prompt result");
    if (turn) CHECK(jbool(jget(turn, "agentInvoked")) == 0);
    json_free(turn);
    CHECK_OK(omprpc_client_wait_for_idle(c, 2000, &err), err);
    turn = TURN(c, "say hello");
    CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    json_free(turn);
    omprpc_client_free(c);
}

static void check_late_failure(omprpc_client *c, const char *message) {
    char *out = NULL, *err = NULL;
    char buf[256];
    if (CHECK_STATUS(omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &out, &err),
                     OMPRPC_STATUS_COMMAND_FAILED, err)) {
        CHECK_STR(h_err_field(err, "command", buf, sizeof buf), "prompt");
        CHECK_STR(h_err_field(err, "error", buf, sizeof buf), "late failure");
    }
    h_strfree(&err);
    CHECK(out == NULL);
    if (CHECK_OK(omprpc_client_protocol_errors(c, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECKF(jis(v, J_ARR) && jlen(v) == 1, "expected exactly one protocol error, got %s", out);
        CHECKF(strstr(out, "late failure") != NULL, "the protocol error does not mention the failure: %s", out);
        json_free(v);
    }
    h_strfree(&out);
    /* sticky for wait_for_idle until the next prompt */
    CHECK_STATUS(omprpc_client_wait_for_idle(c, 2000, &err), OMPRPC_STATUS_COMMAND_FAILED, err);
    h_strfree(&err);
}

static void test_late_prompt_failure(void) {
    omprpc_client *c = START("\"--scenario\",\"late-failure\"", NULL);
    if (c) check_late_failure(c, "say hello");
    omprpc_client_free(c);
    /* the same through the default agent's "late failure" prompt; the client stays usable */
    c = START(NULL, NULL);
    if (c) {
        jval *turn;
        check_late_failure(c, "late failure");
        turn = TURN(c, "say hello");
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
        json_free(turn);
    }
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    const char *type;
    omprpc_status st;
    char command[64];
} idless_job;

static void *idless_worker(void *arg) {
    idless_job *j = (idless_job *)arg;
    char *out = NULL, *err = NULL;
    j->st = omprpc_client_request(j->c, j->type, NULL, WAIT_MS, &out, &err);
    j->command[0] = '\0';
    if (err) h_err_field(err, "command", j->command, sizeof j->command);
    h_strfree(&err);
    h_strfree(&out);
    return NULL;
}

static void test_idless_error_correlation(void) {
    omprpc_client *c = START("\"--scenario\",\"idless-error\"", NULL);
    char *out = NULL, *err = NULL;
    char buf[256];
    if (!c) return;
    if (CHECK_STATUS(omprpc_client_request(c, "unknown", NULL, WAIT_MS, &out, &err),
                     OMPRPC_STATUS_COMMAND_FAILED, err)) {
        CHECK_STR(h_err_field(err, "command", buf, sizeof buf), "unknown");
        CHECK_STR(h_err_field(err, "error", buf, sizeof buf), "unsupported: unknown");
    }
    h_strfree(&err);
    /* two different commands in flight: each failure goes to its own caller */
    {
        idless_job a, b;
        pthread_t ta, tb;
        a.c = b.c = c;
        a.type = "alpha";
        b.type = "beta";
        pthread_create(&ta, NULL, idless_worker, &a);
        pthread_create(&tb, NULL, idless_worker, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK(a.st == OMPRPC_STATUS_COMMAND_FAILED && !strcmp(a.command, "alpha"));
        CHECK(b.st == OMPRPC_STATUS_COMMAND_FAILED && !strcmp(b.command, "beta"));
    }
    omprpc_client_free(c);
}

static void test_collect_events_and_wait_for_idle(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt(c, "slow", NULL, WAIT_MS, &out, &err), err)) {
        CHECKF(out && *out, "prompt returned no request id");
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_client_collect_events(c, WAIT_MS, &out, &err), err)) {
        jval *v = PARSE(out);
        size_t n = jlen(v);
        CHECK(n >= 1);
        CHECK_STR(jstr(jget(jat(v, n ? n - 1 : 0), "type")), "agent_end");
        json_free(v);
        h_strfree(&out);
    }
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    /* abort_and_prompt is scheduled and awaited like prompt */
    if (CHECK_OK(omprpc_client_abort_and_prompt(c, "say hello", NULL, WAIT_MS, &out, &err), err))
        h_strfree(&out);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    if (CHECK_OK(omprpc_client_request(c, "get_last_assistant_text", NULL, WAIT_MS, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECK_STR(jpath_str(v, "text"), "pong");
        json_free(v);
        h_strfree(&out);
    }
    /* a prompt that never finishes: wait_for_idle times out, the client stays usable */
    if (CHECK_OK(omprpc_client_prompt(c, "hang", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    CHECK_STATUS(omprpc_client_wait_for_idle(c, 200, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    const char *message;
    int64_t timeout;
    omprpc_status st;
    char text[64];
    int64_t returned_at;
} prompt_job;

static void *prompt_worker(void *arg) {
    prompt_job *j = (prompt_job *)arg;
    char *out = NULL, *err = NULL;
    j->st = omprpc_client_prompt_and_wait(j->c, j->message, NULL, j->timeout, &out, &err);
    j->returned_at = h_now_ms();
    j->text[0] = '\0';
    if (out) {
        jval *v = json_parse(out);
        if (jpath_str(v, "assistantText")) strncpy(j->text, jpath_str(v, "assistantText"), sizeof j->text - 1);
        json_free(v);
    }
    h_strfree(&out);
    h_strfree(&err);
    return NULL;
}

static void test_single_flight_collectors(void) {
    omprpc_client *c = START(NULL, "\"host_tools\":[" ECHO_TOOL "]");
    char *out = NULL, *err = NULL;
    prompt_job job;
    pthread_t th;
    jval *call;
    if (!c) return;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.message = "needs host tool";
    job.timeout = WAIT_MS;
    pthread_create(&th, NULL, prompt_worker, &job);
    /* The worker is inside prompt_and_wait, whose turn cannot end before the host answers. */
    call = h_wait_event(c, "host_tool_call", WAIT_MS);
    CHECK(call != NULL);
    CHECK_STATUS(omprpc_client_collect_events(c, 1000, &out, &err), OMPRPC_STATUS_CONCURRENCY, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt_and_wait(c, "say hello", NULL, 1000, &out, &err),
                 OMPRPC_STATUS_CONCURRENCY, err);
    h_strfree(&err);
    CHECK(out == NULL);
    if (call) CHECK_OK(omprpc_client_host_tool_result(c, jpath_str(call, "id"), "\"done\"", false, &err), err);
    json_free(call);
    pthread_join(th, NULL);
    CHECKF(job.st == OMPRPC_STATUS_OK, "the first collector returned %s", h_name(job.st));
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    omprpc_status st;
} close_job;

static void *close_worker(void *arg) {
    close_job *j = (close_job *)arg;
    char *err = NULL;
    j->st = omprpc_client_close(j->c, &err);
    h_strfree(&err);
    return NULL;
}

static void test_close_wakes_prompt_and_wait(void) {
    omprpc_client *c = START(SLOW_TO_STOP_ARGS, SLOW_TO_STOP_OPTS);
    char *err = NULL;
    prompt_job job;
    close_job cj;
    pthread_t th, tc;
    int64_t t0;
    if (!c) return;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.message = "hang";
    job.timeout = 30000;
    pthread_create(&th, NULL, prompt_worker, &job);
    /* The agent acknowledges "hang" and then emits nothing, so there is no event to wait
     * for: give the worker time to block inside the wait (if it has not, it still gets
     * CLOSED at once, which this test accepts too). */
    h_sleep_ms(300);
    CHECKF(job.returned_at == 0, "prompt_and_wait returned before close: %s", h_name(job.st));
    cj.c = c;
    t0 = h_now_ms();
    pthread_create(&tc, NULL, close_worker, &cj); /* two closes racing */
    CHECK_OK(omprpc_client_close(c, &err), err);
    pthread_join(tc, NULL);
    pthread_join(th, NULL);
    CHECK(cj.st == OMPRPC_STATUS_OK);
    CHECKF(job.st == OMPRPC_STATUS_CLOSED || job.st == OMPRPC_STATUS_PROCESS_EXITED,
           "prompt_and_wait after close returned %s", h_name(job.st));
    CHECKF(job.returned_at - t0 < 1500, "prompt_and_wait woke %lld ms after close began",
           (long long)(job.returned_at - t0));
    CHECK_OK(omprpc_client_close(c, &err), err);
    omprpc_client_free(c);
}

/* Drains the queue without blocking (until TIMEOUT, or CLOSED after close); returns the
 * number of events and adds the agent_end count to *agent_end_seen. */
static int drain(omprpc_client *c, int *agent_end_seen) {
    int n = 0;
    for (;;) {
        char *out = NULL, *err = NULL;
        omprpc_status st = omprpc_client_next_events(c, 1000, 0, &out, &err);
        if (st == OMPRPC_STATUS_TIMEOUT || st == OMPRPC_STATUS_CLOSED) {
            h_strfree(&err);
            return n;
        }
        if (!CHECK_OK(st, err)) return n;
        {
            jval *v = PARSE(out);
            CHECKF(jis(v, J_ARR) && jlen(v) >= 1, "next_events returned %s", out);
            n += (int)jlen(v);
            if (agent_end_seen) *agent_end_seen += h_count_type(v, "agent_end");
            json_free(v);
        }
        h_strfree(&out);
    }
}

/* Counts events until (and including) the next agent_end, blocking up to WAIT_MS per batch:
 * the queue may receive a turn's last events just after prompt_and_wait has returned. */
static int count_through_agent_end(omprpc_client *c) {
    int n = 0, ends = 0;
    while (!ends) {
        char *out = NULL, *err = NULL;
        jval *v;
        if (!CHECK_OK(omprpc_client_next_events(c, 1000, WAIT_MS, &out, &err), err)) return n;
        v = PARSE(out);
        n += (int)jlen(v);
        ends = h_count_type(v, "agent_end");
        json_free(v);
        h_strfree(&out);
    }
    return n;
}

/* The event queue as a host's wait loop sees it: the client's event source (the descriptor, or
 * Windows' event handle) is ready exactly while events are queued, and once the client closed. */
static void test_event_queue_and_its_wait_source(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    int ends = 0, i;
    plat_events ev, ev2;
    int64_t t0;
    if (!c) return;
    if (!CHECK_OK(plat_event_source(c, &ev, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK(plat_event_source_valid(&ev));
    CHECK_OK(plat_event_source(c, &ev2, &err), err);
    CHECK(plat_events_same(&ev, &ev2));
    /* `ready` is queued: ready */
    CHECK(plat_event_wait(&ev, WAIT_MS) == 1);
    CHECK(drain(c, NULL) >= 1);
    /* drained: not ready, next_event times out (and honours its timeout) */
    CHECKF(plat_event_wait(&ev, 0) == 0, "%s ready with an empty queue", PLAT_EVENT_SOURCE_NAME);
    CHECK_STATUS(omprpc_client_next_event(c, 0, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    t0 = h_now_ms();
    CHECK_STATUS(omprpc_client_next_event(c, 200, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    CHECKF(h_now_ms() - t0 >= 150 && h_now_ms() - t0 < 2000, "next_event(200 ms) took %lld ms",
           (long long)(h_now_ms() - t0));
    CHECK_STATUS(omprpc_client_next_events(c, 8, 0, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    CHECK(out == NULL);
    /* a turn, consumed with waits on the source + batches */
    if (CHECK_OK(omprpc_client_prompt(c, "say hello", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    for (i = 0; i < 100 && !ends; i++) {
        if (plat_event_wait(&ev, WAIT_MS) != 1) break;
        drain(c, &ends);
    }
    CHECK(ends == 1);
    /* next_events caps the batch */
    {
        jval *turn = NULL;
        if (CHECK_OK(omprpc_client_prompt_and_wait(c, "burst 50", NULL, WAIT_MS, &out, &err), err)) {
            turn = PARSE(out);
            h_strfree(&out);
        }
        json_free(turn);
        if (CHECK_OK(omprpc_client_next_events(c, 10, WAIT_MS, &out, &err), err)) {
            jval *v = PARSE(out);
            CHECKF(jlen(v) == 10, "next_events(10) returned %u events", (unsigned)jlen(v));
            CHECK_STR(jpath_str(v, "0.type"), "agent_start");
            json_free(v);
            h_strfree(&out);
        }
        /* agent_start turn_start message_start, 50 updates, message_end turn_end agent_end */
        CHECK(count_through_agent_end(c) == 56 - 10);
        CHECK(drain(c, NULL) == 0);
    }
    /* after close: ready, and CLOSED once drained */
    CHECK_OK(omprpc_client_close(c, &err), err);
    CHECK(plat_event_wait(&ev, WAIT_MS) == 1);
    drain(c, NULL);
    CHECK_STATUS(omprpc_client_next_event(c, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_next_events(c, 5, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

/* A full queue drops the oldest events and says so: received + dropped == emitted. */
static void test_event_queue_overflow_is_reported(void) {
    omprpc_client *c = START(NULL, "\"event_queue_capacity\":16");
    char *out = NULL, *err = NULL;
    int received = 0, dropped = 0, overflow_events = 0, seen_end = 0;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "burst 200", NULL, WAIT_MS, &out, &err), err))
        h_strfree(&out);
    /* until agent_end (the last event emitted), then make sure nothing follows */
    for (;;) {
        int last;
        omprpc_status st = omprpc_client_next_event(c, seen_end ? 0 : WAIT_MS, &out, &err);
        jval *v;
        if (st != OMPRPC_STATUS_OK) {
            CHECKF(st == OMPRPC_STATUS_TIMEOUT && seen_end, "next_event: %s before agent_end", h_name(st));
            h_strfree(&err);
            break;
        }
        v = PARSE(out);
        last = jpath_str(v, "type") && !strcmp(jpath_str(v, "type"), "agent_end");
        if (jpath_str(v, "type") && !strcmp(jpath_str(v, "type"), "event_overflow")) {
            int ok;
            overflow_events++;
            CHECK(jbool(jget(v, "omprpc")) == 1);
            dropped += (int)jnum(jget(v, "dropped"), &ok);
            CHECK(ok);
        } else {
            received++;
        }
        if (last) seen_end = 1;
        json_free(v);
        h_strfree(&out);
    }
    CHECK(overflow_events >= 1);
    CHECK(dropped > 0);
    /* ready + agent_start turn_start message_start + 200 updates + message_end turn_end agent_end */
    CHECKF(received + dropped == 1 + 206, "received %d + dropped %d != 207 emitted", received, dropped);
    omprpc_client_free(c);
}

static void test_event_history_limit(void) {
    omprpc_client *c = START(NULL, "\"max_event_history\":2");
    char *out = NULL, *err = NULL;
    char buf[512];
    if (!c) return;
    if (CHECK_STATUS(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err),
                     OMPRPC_STATUS_LIMIT_EXCEEDED, err)) {
        const char *msg = h_err_field(err, "message", buf, sizeof buf);
        CHECKF(msg && strstr(msg, "max_event_history"), "message does not name max_event_history: %s", err);
    }
    h_strfree(&err);
    omprpc_client_free(c);
    /* null = unbounded */
    c = START(NULL, "\"max_event_history\":null");
    if (c) {
        jval *turn = TURN(c, "burst 100");
        CHECK(jlen(jget(turn, "events")) == 106);
        json_free(turn);
    }
    omprpc_client_free(c);
}

/* The client's info says protocol v2 was negotiated (the agent started with --v2). */
static void check_v2_negotiated(omprpc_client *c) {
    char *out = NULL, *err = NULL;
    int ok;
    if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECKF(jnum(jget(v, "protocolVersion"), &ok) == 2 && ok, "info after --v2: %s", out);
        json_free(v);
        h_strfree(&out);
    }
}

static void test_protocol_v2(void) {
    omprpc_client *c = START("\"--v2\"", NULL);
    char *out = NULL, *err = NULL;
    jval *turn;
    int ok;
    if (!c) return;
    check_v2_negotiated(c);
    /* 2,000,000 bytes of text: chunked message_end, compacted agent_end, rebuilt turn */
    turn = TURN(c, "big 2000000");
    if (turn) {
        const jval *text = jget(turn, "assistantText");
        CHECKF(jis(text, J_STR) && text->str_len == 2000000, "big: text of %u bytes",
               jis(text, J_STR) ? (unsigned)text->str_len : 0u);
        if (jis(text, J_STR) && text->str_len == 2000000)
            CHECK(text->str[0] == 'a' && text->str[25] == 'z' && text->str[1999999] == (char)('a' + 1999999 % 26));
        CHECK(jlen(jget(turn, "messages")) == 1);
    }
    json_free(turn);
    /* a frame of exactly 1 MiB is chunked too */
    turn = TURN(c, "exact MiB");
    if (turn) CHECK(jis(jget(turn, "assistantText"), J_STR) && jget(turn, "assistantText")->str[0] == 'a');
    json_free(turn);
    turn = TURN(c, "say hello");
    CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    json_free(turn);
    omprpc_client_free(c);

    /* negotiation refused: fall back to v1 and carry on */
    c = START("\"--v2\"", "\"env\":{\"OMPRPC_FAKE_V2_FAIL\":\"1\"}");
    if (c) {
        if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
            jval *v = PARSE(out);
            CHECKF(jnum(jget(v, "protocolVersion"), &ok) == 1 && ok, "info after a refused v2: %s", out);
            json_free(v);
            h_strfree(&out);
        }
        turn = TURN(c, "say hello");
        CHECK_STR(jpath_str(turn, "assistantText"), "pong");
        json_free(turn);
    }
    omprpc_client_free(c);

    /* negotiate_v2:false keeps v1 */
    c = START("\"--v2\"", "\"negotiate_v2\":false");
    if (c) {
        if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
            jval *v = PARSE(out);
            CHECKF(jnum(jget(v, "protocolVersion"), &ok) == 1 && ok, "info with negotiate_v2:false: %s", out);
            json_free(v);
            h_strfree(&out);
        }
    }
    omprpc_client_free(c);
}

/* The client's counter `name` (omprpc_client_counters); -1 when it cannot be read. */
static double counter(omprpc_client *c, const char *name) {
    char *out = NULL, *err = NULL;
    double n = -1;
    if (CHECK_OK(omprpc_client_counters(c, &out, &err), err)) {
        jval *v = PARSE(out);
        int ok = 0;
        n = jnum(jget(v, name), &ok);
        CHECKF(ok, "counters without %s: %s", name, out);
        json_free(v);
    }
    h_strfree(&out);
    return n;
}

/* Whether `text` is a string of exactly `n` bytes of the fake agent's pattern (byte i is
 * 'a' + i % 26), so that a chunk lost, doubled or out of order shows. */
static int is_pattern(const jval *text, size_t n) {
    size_t i;
    if (!jis(text, J_STR) || text->str_len != n) return 0;
    for (i = 0; i < n; i++)
        if (text->str[i] != (char)('a' + i % 26)) return 0;
    return 1;
}

/* A 3 MB payload under protocol v2: the agent splits each frame over 1 MiB into rpc_chunk
 * frames of 256 KiB (base64), the client puts it back together. The message arrives whole and
 * in order, in the turn and in the event queue, and so does a 3 MB tool result. */
static void test_a_3_mb_v2_payload_arrives_whole(void) {
    enum { N = 3000000, CHUNK = 262144 };
    omprpc_client *c = START("\"--v2\"", NULL);
    double frames, bytes;
    jval *turn, *ev;
    if (!c) return;
    check_v2_negotiated(c);
    drain(c, NULL);
    frames = counter(c, "frames_in");
    bytes = counter(c, "bytes_in");
    turn = TURN(c, "big 3000000");
    if (turn) {
        const jval *text = jget(turn, "assistantText");
        CHECKF(is_pattern(text, N), "assistantText: %u bytes, not the 3,000,000 of the pattern",
               jis(text, J_STR) ? (unsigned)text->str_len : 0u);
        CHECKF(is_pattern(jpath(turn, "messages.0.content.0.text"), N), "the turn's message is not the 3 MB text");
    }
    json_free(turn);
    /* on the wire: at least ceil(3 MB / 256 KiB) chunk lines, base64 (4 bytes per 3) */
    frames = counter(c, "frames_in") - frames;
    bytes = counter(c, "bytes_in") - bytes;
    CHECKF(frames >= (N + CHUNK - 1) / CHUNK, "%.0f frames in for a 3 MB message: not chunked", frames);
    CHECKF(bytes >= (double)N / 3 * 4, "%.0f bytes in for a 3 MB message: not base64 chunks", bytes);
    /* the queue holds the same reassembled event */
    ev = h_wait_event(c, "message_end", WAIT_MS);
    CHECKF(ev && is_pattern(jpath(ev, "message.content.0.text"), N), "the queued message_end is not the 3 MB text");
    json_free(ev);
    drain(c, NULL);
    /* a tool's 3 MB result */
    turn = TURN(c, "huge 3000000");
    if (turn) {
        const jval *end = h_find_type(jget(turn, "events"), "tool_execution_end", 0);
        CHECKF(is_pattern(jpath(end, "result.content.0.text"), N), "the 3 MB tool result did not arrive whole");
    }
    json_free(turn);
    /* and the client carries on */
    turn = TURN(c, "say hello");
    CHECK_STR(jpath_str(turn, "assistantText"), "pong");
    json_free(turn);
    omprpc_client_free(c);
}

/* Frames bigger than max_frame_bytes under v1. */
static void test_max_frame_bytes(void) {
    omprpc_client *c = START(NULL, "\"max_frame_bytes\":8388608");
    char *out = NULL, *err = NULL;
    if (c) {
        jval *turn = TURN(c, "huge 5000000");
        if (turn) {
            const jval *end = h_find_type(jget(turn, "events"), "tool_execution_end", 0);
            const jval *text = jpath(end, "result.content.0.text");
            CHECK(jis(text, J_STR) && text->str_len == 5000000);
        }
        json_free(turn);
    }
    omprpc_client_free(c);
    c = START(NULL, "\"max_frame_bytes\":1048576");
    if (c) {
        omprpc_status st = omprpc_client_prompt_and_wait(c, "huge 2000000", NULL, WAIT_MS, &out, &err);
        CHECKF(st == OMPRPC_STATUS_PROTOCOL || st == OMPRPC_STATUS_LIMIT_EXCEEDED,
               "a 2 MB frame over max_frame_bytes=1 MiB: %s; error: %s", h_name(st), err ? err : "(none)");
        h_strfree(&out);
        h_strfree(&err);
    }
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_prompt_and_wait_returns_assistant_text);
    RUN(test_turn_shapes);
    RUN(test_local_prompts_complete);
    RUN(test_late_prompt_failure);
    RUN(test_idless_error_correlation);
    RUN(test_collect_events_and_wait_for_idle);
    RUN(test_single_flight_collectors);
    RUN(test_close_wakes_prompt_and_wait);
    RUN(test_event_queue_and_its_wait_source);
    RUN(test_event_queue_overflow_is_reported);
    RUN(test_event_history_limit);
    RUN(test_protocol_v2);
    RUN(test_a_3_mb_v2_payload_arrives_whole);
    RUN(test_max_frame_bytes);
    return h_summary();
}

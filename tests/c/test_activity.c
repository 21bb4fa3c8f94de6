/*
 * The activity model through the C API, against the fake agent's reproductions of what real
 * agents send: a steer that outlives an abort (omp runs it as a run nobody prompted, pi parks
 * it), omp's compaction handoff (a run ending with a non-terminal agent_end and nothing after
 * it), an extension /command that starts no run, turn_idle_timeout_ms standing still
 * while a host tool call is open, and a queued follow_up that runs before the agent is idle.
 */
#include "harness.h"

#define PI_ARGS "\"--flavor\",\"pi\""
#define PI_OPTS "\"flavor\":\"pi\""

/* Whether `message` (an agent message object) has a text content item equal to `text`. */
static int message_has_text(const jval *message, const char *text) {
    const jval *content = jget(message, "content");
    size_t i;
    if (jstr(content)) return !strcmp(jstr(content), text);
    for (i = 0; i < jlen(content); i++) {
        const char *t = jstr(jget(jat(content, i), "text"));
        if (t && !strcmp(t, text)) return 1;
    }
    return 0;
}

/* Whether any item of `messages` has a text content item equal to `text`. */
static int messages_have_text(const jval *messages, const char *text) {
    size_t i;
    for (i = 0; i < jlen(messages); i++)
        if (message_has_text(jat(messages, i), text)) return 1;
    return 0;
}

/* What the events already queued say (taken without waiting). */
typedef struct {
    int events, agent_ends, steered_end, steering_user;
} drained;

static drained drain(omprpc_client *c) {
    drained d;
    memset(&d, 0, sizeof d);
    for (;;) {
        char *ev = NULL, *err = NULL;
        jval *v;
        const char *type;
        omprpc_status st = omprpc_client_next_event(c, 0, &ev, &err);
        h_strfree(&err);
        if (st != OMPRPC_STATUS_OK) break;
        v = PARSE(ev);
        h_strfree(&ev);
        d.events++;
        type = jstr(jget(v, "type"));
        if (type && !strcmp(type, "agent_end")) {
            d.agent_ends++;
            if (messages_have_text(jget(v, "messages"), "steered ok")) d.steered_end = 1;
        }
        if (type && !strcmp(type, "message_end") && jbool(jpath(v, "message.steering")) == 1 &&
            message_has_text(jget(v, "message"), "steer me now"))
            d.steering_user = 1;
        json_free(v);
    }
    return d;
}

/* prompt "stream until abort", steer during the live run, abort it. */
static int steer_then_abort(omprpc_client *c) {
    char *id = NULL, *err = NULL;
    int ok = CHECK_OK(omprpc_client_prompt(c, "stream until abort", NULL, WAIT_MS, &id, &err), err);
    h_strfree(&id);
    if (!ok) return 0;
    if (!CHECK_OK(omprpc_client_steer(c, "steer me now", NULL, WAIT_MS, &err), err)) return 0;
    return CHECK_OK(omprpc_client_abort(c, WAIT_MS, &err), err);
}

/* omp: the steer outlives the abort and runs by itself; wait_for_idle waits for that run. */
static void test_omp_steer_after_abort_runs_before_idle(void) {
    omprpc_client *c = START(NULL, NULL);
    char *err = NULL;
    drained d;
    if (!c) return;
    if (steer_then_abort(c)) {
        int64_t t0 = h_now_ms();
        CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
        CHECKF(h_now_ms() - t0 < WAIT_MS, "wait_for_idle took %lld ms", (long long)(h_now_ms() - t0));
        d = drain(c);
        CHECKF(d.steered_end, "no agent_end with \"steered ok\" queued when wait_for_idle returned (%d events, %d agent_end)",
               d.events, d.agent_ends);
        CHECKF(d.steering_user, "no user message_end with steering:true");
        CHECKF(d.agent_ends == 2, "%d agent_end events, expected the abort's and the steer's", d.agent_ends);
        /* idle for good: a second wait returns at once, and a prompt runs normally */
        CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
        {
            char *out = NULL;
            if (CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), err)) {
                jval *turn = PARSE(out);
                CHECK_STR(jstr(jget(turn, "assistantText")), "pong");
                json_free(turn);
            }
            h_strfree(&out);
        }
    }
    omprpc_client_free(c);
}

/* pi: the steer stays parked (pendingMessageCount 1), no run follows, the agent is idle. */
static void test_pi_parked_steer_is_idle(void) {
    omprpc_client *c = START(PI_ARGS, PI_OPTS);
    char *err = NULL, *out = NULL;
    drained d;
    if (!c) return;
    if (steer_then_abort(c)) {
        int64_t t0 = h_now_ms();
        CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
        CHECKF(h_now_ms() - t0 < WAIT_MS, "wait_for_idle took %lld ms", (long long)(h_now_ms() - t0));
        if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err)) {
            jval *s = PARSE(out);
            CHECKF(jnum(jget(s, "pendingMessageCount"), NULL) == 1, "state: %s", out);
            CHECK(jbool(jget(s, "isStreaming")) == 0);
            json_free(s);
        }
        h_strfree(&out);
        d = drain(c);
        CHECKF(!d.steered_end, "pi ran the parked steer");
        CHECKF(d.agent_ends == 1, "%d agent_end events, expected the abort's only", d.agent_ends);
    }
    omprpc_client_free(c);
}

/* omp's compaction handoff: the non-terminal agent_end followed by silence ends the turn. */
static void test_omp_handoff_completes(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "handoff", NULL, WAIT_MS, &out, &err), err)) {
        jval *turn = PARSE(out);
        jval *events = jget(turn, "events");
        jval *end = h_find_type(events, "agent_end", 0);
        CHECKF(h_count_type(events, "auto_compaction_start") >= 1, "no auto_compaction_start in the turn");
        CHECKF(end != NULL, "no agent_end in the turn");
        CHECKF(jbool(jget(end, "isTerminal")) == 0, "the turn's agent_end is not the non-terminal one");
        CHECK(h_count_type(events, "agent_end") == 1);
        CHECK_STR(jstr(jget(turn, "assistantText")), "got it");
        json_free(turn);
    }
    h_strfree(&out);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    omprpc_client_free(c);
}

/* An extension command: no run on either flavor; the prompt completes, the agent is idle. */
static void noop_command(const char *args, const char *extra) {
    omprpc_client *c = START(args, extra);
    char *out = NULL, *err = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "/noop", NULL, WAIT_MS, &out, &err), err)) {
        jval *turn = PARSE(out);
        CHECKF(jbool(jget(turn, "agentInvoked")) == 0, "turn: %s", out);
        CHECK(h_count_type(jget(turn, "events"), "agent_start") == 0);
        json_free(turn);
    }
    h_strfree(&out);
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    omprpc_client_free(c);
}

static void test_omp_noop_command(void) { noop_command(NULL, NULL); }
static void test_pi_noop_command(void) { noop_command(PI_ARGS, PI_OPTS); }

/* The host answers its tool call after 1500 ms, longer than turn_idle_timeout_ms (1000). */
typedef struct {
    omprpc_client *c;
    int got_call;
    omprpc_status result_st;
} late_host;

static void *late_host_thread(void *arg) {
    late_host *j = (late_host *)arg;
    char *err = NULL;
    jval *call = h_wait_event(j->c, "host_tool_call", WAIT_MS);
    if (!call) return NULL;
    j->got_call = 1;
    h_sleep_ms(1500); /* the scenario: a host slower than the idle timeout */
    j->result_st = omprpc_client_host_tool_result(j->c, jpath_str(call, "id"), "\"late answer\"", false, &err);
    h_strfree(&err);
    json_free(call);
    return NULL;
}

static void test_idle_timeout_stands_still_for_host_call(void) {
    omprpc_client *c = START(NULL, "\"turn_idle_timeout_ms\":1000,\"host_tools\":[" ECHO_TOOL "]");
    char *out = NULL, *err = NULL;
    late_host j;
    pthread_t th;
    if (!c) return;
    memset(&j, 0, sizeof j);
    j.c = c;
    j.result_st = OMPRPC_STATUS_PANIC;
    pthread_create(&th, NULL, late_host_thread, &j);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs host tool", NULL, WAIT_MS, &out, &err), err)) {
        jval *turn = PARSE(out);
        jval *end = h_find_type(jget(turn, "events"), "tool_execution_end", 0);
        CHECKF(end != NULL, "no tool_execution_end in the turn");
        CHECK_STR(jpath_str(end, "result.content.0.text"), "late answer");
        json_free(turn);
    }
    h_strfree(&out);
    pthread_join(th, NULL);
    CHECK(j.got_call);
    CHECKF(j.result_st == OMPRPC_STATUS_OK, "host_tool_result: %s", h_name(j.result_st));
    omprpc_client_free(c);
}

/* ... while a silent agent still fails the turn with TIMEOUT. */
static void test_idle_timeout_still_fails_a_hang(void) {
    omprpc_client *c = START(NULL, "\"turn_idle_timeout_ms\":300");
    char *out = NULL, *err = NULL;
    int64_t t0;
    if (!c) return;
    t0 = h_now_ms();
    CHECK_STATUS(omprpc_client_prompt_and_wait(c, "hang", NULL, WAIT_MS, &out, &err), OMPRPC_STATUS_TIMEOUT, err);
    CHECKF(h_now_ms() - t0 < WAIT_MS, "the idle timeout did not fire (%lld ms)", (long long)(h_now_ms() - t0));
    h_strfree(&err);
    h_strfree(&out);
    omprpc_client_free(c);
}

/* A follow_up queued while the model streams runs in the same run, after the answer: the
 * agent is busy until that run's terminal agent_end, and wait_for_idle waits for it. */
static void queued_follow_up(const char *args, const char *extra) {
    omprpc_client *c = START(args, extra);
    char *id = NULL, *err = NULL;
    int delta = 0, ends = 0, followed = 0;
    int64_t deadline;
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt(c, "stream until abort", NULL, WAIT_MS, &id, &err), err)) goto out;
    deadline = h_now_ms() + WAIT_MS;
    while (!delta && h_now_ms() < deadline) {
        jval *v = h_wait_event(c, "message_update", deadline - h_now_ms());
        if (!v) break;
        delta = jpath_str(v, "assistantMessageEvent.type") && !strcmp(jpath_str(v, "assistantMessageEvent.type"), "text_delta");
        json_free(v);
    }
    if (!delta) {
        h_fail(__FILE__, __LINE__, "no text_delta from the streaming run");
        goto out;
    }
    if (!CHECK_OK(omprpc_client_follow_up(c, "follow me", NULL, WAIT_MS, &err), err)) goto out;
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    /* every event queued before wait_for_idle returned: the last agent_end is the run's */
    for (;;) {
        char *ev = NULL;
        jval *v;
        const char *type;
        omprpc_status st = omprpc_client_next_event(c, 0, &ev, &err);
        h_strfree(&err);
        if (st != OMPRPC_STATUS_OK) break;
        v = PARSE(ev);
        h_strfree(&ev);
        type = jstr(jget(v, "type"));
        if (type && !strcmp(type, "agent_end")) {
            ends++;
            followed = message_has_text(jat(jget(v, "messages"), 1), "followed ok");
        }
        json_free(v);
    }
    CHECKF(ends == 1, "%d agent_end events queued when wait_for_idle returned, expected 1", ends);
    CHECKF(followed, "the agent_end before idle does not have \"followed ok\" as its second message");
out:
    h_strfree(&id);
    omprpc_client_free(c);
}

static void test_omp_queued_follow_up_runs_before_idle(void) { queued_follow_up(NULL, NULL); }
static void test_pi_queued_follow_up_runs_before_idle(void) { queued_follow_up(PI_ARGS, PI_OPTS); }

int main(void) {
    h_init();
    RUN(test_omp_steer_after_abort_runs_before_idle);
    RUN(test_pi_parked_steer_is_idle);
    RUN(test_omp_handoff_completes);
    RUN(test_omp_noop_command);
    RUN(test_pi_noop_command);
    RUN(test_idle_timeout_stands_still_for_host_call);
    RUN(test_idle_timeout_still_fails_a_hang);
    RUN(test_omp_queued_follow_up_runs_before_idle);
    RUN(test_pi_queued_follow_up_runs_before_idle);
    return h_summary();
}

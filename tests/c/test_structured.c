/*
 * Events and turns as structure: omprpc_client_prompt_and_wait_turn (omprpc_turn_get_info,
 * omprpc_turn_events), omprpc_client_next_event_batch and omprpc_client_collect_event_batch
 * (omprpc_event_batch_events) hand out
 * the same events and metadata as the JSON forms, as borrowed views — checked against the
 * turn JSON the same turn carries; the local outcomes; bad arguments; close. A turn split for
 * an event loop: omprpc_client_prompt_begin, a wait on the event fd (poll(2); Windows: the event
 * handle, WaitForSingleObject) until the turn's prompt_complete, omprpc_client_take_turn.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* pi refuses a prompt while it works (omp acknowledges it first) */
#define PI_ARGS "\"--flavor\",\"pi\""
#define PI_OPTS "\"flavor\":\"pi\""

/* Each view: its json is one event whose "type" is the view's type, and equals `expected[i]`
 * of the turn JSON's events when given. */
static void check_views(const omprpc_event_view *views, size_t n, const jval *expected) {
    size_t i;
    for (i = 0; i < n; i++) {
        jval *ev = PARSE_STR(views[i].json);
        const char *type = jpath_str(ev, "type");
        CHECKF(type && h_str_is(views[i].event_type, type), "event %u: view type vs its JSON's \"%s\"",
               (unsigned)i, type ? type : "(none)");
        if (expected) {
            const char *want = jpath_str(jat(expected, i), "type");
            CHECKF(type && want && strcmp(type, want) == 0 && jlen(ev) == jlen(jat(expected, i)),
                   "event %u differs from the turn JSON's", (unsigned)i);
        }
        json_free(ev);
    }
}

static void test_a_turn_is_its_json_located(void) {
    omprpc_client *c = START(NULL, "\"turn_summary\":true");
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    const omprpc_event_view *views = NULL;
    size_t n = 0;
    char *err = NULL;
    jval *whole, *v;
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
    whole = PARSE_STR(info.turn_json);
    CHECK(info.outcome == OMPRPC_TURN_OUTCOME_AGENT_END);
    CHECK(info.agent_invoked);
    CHECK(h_str_is(info.assistant_text, "pong"));
    CHECK(jpath_str(whole, "requestId") && h_str_is(info.request_id, jpath_str(whole, "requestId")));
    CHECK(jpath_str(whole, "assistantMessage.stopReason") ? h_str_is(info.stop_reason, jpath_str(whole, "assistantMessage.stopReason"))
                                                          : info.stop_reason.data == NULL);
    CHECK(info.error_message.data == NULL);
    CHECK(info.prompt_result_json.data == NULL);
    v = PARSE_STR(info.messages_json);
    CHECK(jlen(v) == 1 && jlen(v) == jlen(jget(whole, "messages")));
    CHECK_STR(jpath_str(v, "0.content.0.text"), "pong");
    json_free(v);
    {
        const omprpc_str *messages = NULL;
        size_t count = 0;
        if (CHECK_OK(omprpc_turn_messages(turn, &messages, &count, &err), err) && count == 1) {
            v = PARSE_STR(messages[0]);
            CHECK_STR(jpath_str(v, "content.0.text"), "pong");
            json_free(v);
        } else {
            CHECKF(0, "%u messages", (unsigned)count);
        }
    }
    v = PARSE_STR(info.assistant_message_json);
    CHECK_STR(jpath_str(v, "role"), "assistant");
    json_free(v);
    if (jpath(whole, "assistantMessage.usage")) {
        v = PARSE_STR(info.usage_json);
        CHECK(jlen(v) == jlen(jpath(whole, "assistantMessage.usage")));
        json_free(v);
    } else {
        CHECK(info.usage_json.data == NULL);
    }
    v = PARSE_STR(info.summary_json);
    CHECK_STR(jpath_str(v, "finalText"), "pong");
    json_free(v);
    /* the record of attempts: one, nothing failed, nothing compacted, no settling (omp) — the
     * same as the turn JSON's members */
    CHECK_STR(jpath_str(whole, "outcome"), "agent_end");
    CHECK(info.attempts == 1 && jnum(jget(whole, "attempts"), NULL) == 1);
    CHECK(!info.settled && jbool(jget(whole, "settled")) == 0);
    CHECK(h_str_is(info.failed_attempts_json, "[]") && jis(jget(whole, "failedAttempts"), J_ARR) &&
          jlen(jget(whole, "failedAttempts")) == 0);
    CHECK(h_str_is(info.compactions_json, "[]") && jis(jget(whole, "compactions"), J_ARR) &&
          jlen(jget(whole, "compactions")) == 0);
    CHECK_OK(omprpc_turn_events(turn, &views, &n, &err), err);
    CHECKF(n == info.event_count && n == jlen(jget(whole, "events")) && n >= 3, "%u views, %u in info, %u in the JSON",
           (unsigned)n, (unsigned)info.event_count, (unsigned)jlen(jget(whole, "events")));
    check_views(views, n, jget(whole, "events"));
    /* the views borrow from the turn's own bytes: no copies */
    for (size_t i = 0; i < n; i++) {
        CHECKF(views[i].json.data > info.turn_json.data && views[i].json.data + views[i].json.len < info.turn_json.data + info.turn_json.len,
               "event %u is not inside the turn JSON", (unsigned)i);
    }
    CHECK(n > 0 && h_str_is(views[n - 1].event_type, "agent_end"));
    {
        /* built once, on first use: asking again lends the same array */
        const omprpc_event_view *again = NULL;
        size_t m = 0;
        CHECK_OK(omprpc_turn_events(turn, &again, &m, &err), err);
        CHECK(again == views && m == n);
    }
    json_free(whole);
    omprpc_turn_free(turn);
    omprpc_client_free(c);
}

static void test_local_outcomes(void) {
    omprpc_client *c = START(NULL, NULL);
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    char *err = NULL;
    jval *v;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "local", NULL, WAIT_MS, &turn, &err), err)
        && CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err)) {
        CHECK(info.outcome == OMPRPC_TURN_OUTCOME_NOT_INVOKED && !info.agent_invoked);
        CHECK(info.assistant_text.data == NULL && info.assistant_message_json.data == NULL);
        CHECK(h_str_is(info.messages_json, "[]"));
        /* nothing ran: no attempt */
        CHECK(info.attempts == 0 && !info.settled);
        CHECK(h_str_is(info.failed_attempts_json, "[]") && h_str_is(info.compactions_json, "[]"));
    }
    omprpc_turn_free(turn);
    turn = NULL;
    if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "prompt result", NULL, WAIT_MS, &turn, &err), err)
        && CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err)) {
        CHECK(info.outcome == OMPRPC_TURN_OUTCOME_PROMPT_RESULT && !info.agent_invoked);
        CHECK(info.attempts == 0 && !info.settled);
        v = PARSE_STR(info.prompt_result_json);
        CHECK_STR(jpath_str(v, "type"), "prompt_result");
        json_free(v);
    }
    omprpc_turn_free(turn);
    omprpc_client_free(c);
}

static void test_event_batches(void) {
    omprpc_client *c = START(NULL, NULL);
    omprpc_event_batch *batch = NULL;
    const omprpc_event_view *views = NULL;
    size_t n = 0, i;
    char *err = NULL, *id = NULL;
    int ends = 0, starts = 0, ready = 0, rounds;
    if (!c) return;
    CHECK_OK(omprpc_client_prompt(c, "say hello", NULL, WAIT_MS, &id, &err), err);
    h_strfree(&id);
    for (rounds = 0; ends == 0 && rounds < 100; rounds++) {
        if (!CHECK_OK(omprpc_client_next_event_batch(c, 2, WAIT_MS, &batch, &err), err)) break;
        CHECK_OK(omprpc_event_batch_events(batch, &views, &n, &err), err);
        CHECKF(n >= 1 && n <= 2, "a batch of %u with max_events 2", (unsigned)n);
        check_views(views, n, NULL);
        for (i = 0; i < n; i++) {
            ready += h_str_is(views[i].event_type, "ready");
            starts += h_str_is(views[i].event_type, "agent_start");
            ends += h_str_is(views[i].event_type, "agent_end");
        }
        omprpc_event_batch_free(batch);
        batch = NULL;
    }
    CHECK(ready == 1 && starts == 1 && ends == 1);
    /* drained: a zero timeout polls, TIMEOUT, and the out-parameter stays untouched */
    CHECK_STATUS(omprpc_client_next_event_batch(c, 8, 0, &batch, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&err);
    CHECK(batch == NULL);
    /* after close the queue drains, then CLOSED */
    CHECK_OK(omprpc_client_close(c, &err), err);
    for (rounds = 0; rounds < 100; rounds++) {
        omprpc_status st = omprpc_client_next_event_batch(c, 64, WAIT_MS, &batch, &err);
        omprpc_event_batch_free(batch);
        batch = NULL;
        if (st != OMPRPC_STATUS_OK) {
            CHECKF(st == OMPRPC_STATUS_CLOSED, "after close: %s", h_name(st));
            break;
        }
    }
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &(omprpc_turn *){NULL}, &err),
                 OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

/* collect_event_batch: the session's events through the next terminal agent_end, as views. */
static void test_collected_batch(void) {
    omprpc_client *c = START(NULL, NULL);
    omprpc_event_batch *batch = NULL;
    const omprpc_event_view *views = NULL;
    size_t n = 0;
    char *err = NULL, *id = NULL;
    if (!c) return;
    /* "slow" streams for a while: the collection starts before its agent_end */
    CHECK_OK(omprpc_client_prompt(c, "slow", NULL, WAIT_MS, &id, &err), err);
    h_strfree(&id);
    if (CHECK_OK(omprpc_client_collect_event_batch(c, WAIT_MS, &batch, &err), err)
        && CHECK_OK(omprpc_event_batch_events(batch, &views, &n, &err), err)) {
        CHECKF(n >= 1, "%u collected events", (unsigned)n);
        check_views(views, n, NULL);
        CHECK(n > 0 && h_str_is(views[n - 1].event_type, "agent_end"));
    }
    omprpc_event_batch_free(batch);
    omprpc_client_free(c);
}

/* Reads events, waiting on the event source (the fd, or Windows' event handle) rather than in
 * the library, until the prompt_complete of `request_id`; 1 when it came. */
static int await_completion_on_event_source(omprpc_client *c, const char *request_id) {
    char *ev = NULL, *err = NULL;
    plat_events source;
    int rounds;
    if (!CHECK_OK(plat_event_source(c, &source, &err), err)) return 0;
    for (rounds = 0; rounds < 10000; rounds++) {
        omprpc_status st;
        jval *v;
        int done;
        if (plat_event_wait(&source, WAIT_MS) != 1) {
            CHECKF(0, "no prompt_complete for %s on %s", request_id, PLAT_EVENT_SOURCE_NAME);
            return 0;
        }
        st = omprpc_client_next_event(c, 0, &ev, &err);
        if (st == OMPRPC_STATUS_TIMEOUT) { /* taken between the wait and the read: wait again */
            h_strfree(&err);
            continue;
        }
        if (!CHECK_OK(st, err)) return 0;
        v = PARSE(ev);
        done = jpath_str(v, "type") && strcmp(jpath_str(v, "type"), "prompt_complete") == 0
               && jpath_str(v, "requestId") && strcmp(jpath_str(v, "requestId"), request_id) == 0;
        json_free(v);
        h_strfree(&ev);
        if (done) return 1;
    }
    return 0;
}

/* begin → wait on the event source for prompt_complete → take: the same turn prompt_and_wait_turn
 * returns, with nothing blocked in the library while the agent works. */
static void test_begun_turn_taken_after_its_completion(void) {
    omprpc_client *c = START(NULL, "\"prompt_complete_events\":true");
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    char *id = NULL, *other = NULL, *err = NULL;
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt_begin(c, "say hello", NULL, WAIT_MS, &id, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK(id != NULL);
    if (await_completion_on_event_source(c, id) && CHECK_OK(omprpc_client_take_turn(c, id, &turn, &err), err)) {
        CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
        CHECK(info.outcome == OMPRPC_TURN_OUTCOME_AGENT_END);
        CHECK(h_str_is(info.assistant_text, "pong"));
        CHECK(h_str_is(info.request_id, id));
        CHECK(info.event_count > 0);
    }
    omprpc_turn_free(turn);
    turn = NULL;
    /* taken: the id names no begun turn any more, and the slot is free for the next turn */
    CHECK_STATUS(omprpc_client_take_turn(c, id, &turn, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK(turn == NULL);
    if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), err)) {
        CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
        CHECK(h_str_is(info.assistant_text, "pong"));
    }
    omprpc_turn_free(turn);
    /* a failed prompt: begin fails with its status and holds nothing */
    CHECK_STATUS(omprpc_client_prompt_begin(c, "", "{\"images\":7}", WAIT_MS, &other, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK(other == NULL);
    h_strfree(&id);
    omprpc_client_free(c);
}

/* While a begun turn runs: take is OK with no turn (and changes nothing), another id NOT_FOUND, a second
 * begin or collector CONCURRENCY; abandoned by `abort`, it is still taken after its
 * prompt_complete, as ABORTED. */
static void test_begun_turn_holds_the_slot_until_taken(void) {
    omprpc_client *c = START(NULL, "\"prompt_complete_events\":true");
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    char *id = NULL, *second = NULL, *err = NULL;
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt_begin(c, "stream until abort", NULL, WAIT_MS, &id, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK_OK(omprpc_client_take_turn(c, id, &turn, &err), err);
    CHECK(turn == NULL);
    CHECK_STATUS(omprpc_client_take_turn(c, "no-such-request", &turn, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt_begin(c, "say hello", NULL, WAIT_MS, &second, &err), OMPRPC_STATUS_CONCURRENCY, err);
    h_strfree(&err);
    CHECK(second == NULL);
    CHECK_STATUS(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), OMPRPC_STATUS_CONCURRENCY, err);
    h_strfree(&err);
    CHECK_OK(omprpc_client_abort(c, WAIT_MS, &err), err);
    if (await_completion_on_event_source(c, id) && CHECK_OK(omprpc_client_take_turn(c, id, &turn, &err), err)) {
        CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
        CHECKF(info.outcome == OMPRPC_TURN_OUTCOME_ABORTED || info.outcome == OMPRPC_TURN_OUTCOME_AGENT_END,
               "outcome %d", (int)info.outcome);
    }
    omprpc_turn_free(turn);
    turn = NULL;
    /* released: the next turn runs */
    if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), err)) {
        CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
        CHECK(h_str_is(info.assistant_text, "pong"));
    }
    omprpc_turn_free(turn);
    turn = NULL;
    /* close releases a begun turn: its take fails CLOSED */
    h_strfree(&id);
    if (CHECK_OK(omprpc_client_prompt_begin(c, "stream until abort", NULL, WAIT_MS, &id, &err), err)) {
        CHECK_OK(omprpc_client_close(c, &err), err);
        CHECK_STATUS(omprpc_client_take_turn(c, id, &turn, &err), OMPRPC_STATUS_CLOSED, err);
        h_strfree(&err);
        CHECK(turn == NULL);
    }
    h_strfree(&id);
    omprpc_client_free(c);
}

/* A begun turn given up (the host's own turn timeout): release frees the slot and leaves the
 * turn running — the agent refuses the next prompt while it runs and accepts it once it ended. */
static void test_released_turn_keeps_running(void) {
    omprpc_client *c = START(PI_ARGS, PI_OPTS ",\"prompt_complete_events\":true");
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    char *id = NULL, *next = NULL, *err = NULL;
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt_begin(c, "stream until abort", NULL, WAIT_MS, &id, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK_STATUS(omprpc_client_release_turn(c, "no-such-request", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_OK(omprpc_client_release_turn(c, id, &err), err);
    /* released: neither taken nor released again */
    CHECK_STATUS(omprpc_client_take_turn(c, id, &turn, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK(turn == NULL);
    CHECK_STATUS(omprpc_client_release_turn(c, id, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    /* the slot is free, the run is not: the agent itself refuses a prompt while it streams */
    CHECK_STATUS(omprpc_client_prompt(c, "say hello", NULL, WAIT_MS, &next, &err), OMPRPC_STATUS_COMMAND_FAILED, err);
    h_strfree(&err);
    CHECK(next == NULL);
    CHECK_OK(omprpc_client_abort(c, WAIT_MS, &err), err);
    CHECK(await_completion_on_event_source(c, id));
    if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), err)) {
        CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
        CHECK(h_str_is(info.assistant_text, "pong"));
    }
    omprpc_turn_free(turn);
    h_strfree(&id);
    omprpc_client_free(c);
}

/* turn_idle_timeout_ms applies to a begun turn through its take (nobody waits in the library):
 * a silent agent's turn is OK-not-yet until the idle time passed, then TIMEOUT with the slot
 * released and the turn left running. */
static void test_begun_turn_idle_timeout_through_take(void) {
    omprpc_client *c = START(PI_ARGS, PI_OPTS ",\"prompt_complete_events\":true,\"turn_idle_timeout_ms\":300");
    omprpc_turn *turn = NULL;
    char *id = NULL, *next = NULL, *state = NULL, *err = NULL;
    plat_events source;
    omprpc_status st = OMPRPC_STATUS_OK;
    int64_t t0;
    if (!c) return;
    /* before the prompt: its idle clock starts no earlier than this */
    t0 = h_now_ms();
    if (!CHECK_OK(plat_event_source(c, &source, &err), err)
        || !CHECK_OK(omprpc_client_prompt_begin(c, "hang", NULL, WAIT_MS, &id, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    /* a host's idle timer: take again whenever the event source or a short wait says so */
    while (h_now_ms() - t0 < WAIT_MS) {
        st = omprpc_client_take_turn(c, id, &turn, &err);
        if (st != OMPRPC_STATUS_OK || turn != NULL) break;
        (void)plat_event_wait(&source, 50);
    }
    CHECK_STATUS(st, OMPRPC_STATUS_TIMEOUT, err);
    CHECKF(err && strstr(err, "turn_idle_timeout_ms"), "error: %s", err ? err : "(none)");
    h_strfree(&err);
    CHECK(turn == NULL);
    CHECKF(h_now_ms() - t0 >= 300, "timed out after %d ms", (int)(h_now_ms() - t0));
    /* failed: the slot is released (the id is gone) and the agent still runs the turn */
    CHECK_STATUS(omprpc_client_take_turn(c, id, &turn, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &state, &err), err)) {
        jval *v = PARSE(state);
        CHECKF(jbool(jget(v, "isStreaming")) == 1, "get_state: %s", state);
        json_free(v);
    }
    h_strfree(&state);
    /* the slot is free for the next begun turn */
    CHECK_OK(omprpc_client_prompt_begin(c, "hang", NULL, WAIT_MS, &next, &err), err);
    if (next) CHECK_OK(omprpc_client_release_turn(c, next, &err), err);
    h_strfree(&next);
    h_strfree(&id);
    omprpc_client_free(c);
}

static void test_bad_arguments(void) {
    omprpc_client *c = START(NULL, NULL);
    omprpc_turn *turn = NULL;
    omprpc_event_batch *batch = NULL;
    omprpc_turn_info info;
    const omprpc_event_view *views = NULL;
    size_t n = 0;
    char *err = NULL, *id = NULL;
    CHECK_STATUS(omprpc_client_prompt_and_wait_turn(NULL, "x", NULL, 0, &turn, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_next_event_batch(NULL, 1, 0, &batch, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt_begin(NULL, "x", NULL, 0, &id, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_take_turn(NULL, "x", &turn, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_release_turn(NULL, "x", &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_turn_get_info(NULL, &info, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_turn_events(NULL, &views, &n, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_event_batch_events(NULL, &views, &n, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    if (c) {
        CHECK_STATUS(omprpc_client_prompt_and_wait_turn(c, "x", NULL, 0, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        CHECK_STATUS(omprpc_client_next_event_batch(c, 1, WAIT_MS, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        CHECK_STATUS(omprpc_client_prompt_begin(c, "x", NULL, 0, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        CHECK_STATUS(omprpc_client_take_turn(c, NULL, &turn, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        CHECK_STATUS(omprpc_client_take_turn(c, "x", NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        CHECK_STATUS(omprpc_client_release_turn(c, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        if (CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, WAIT_MS, &turn, &err), err)) {
            CHECK_STATUS(omprpc_turn_get_info(turn, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
            h_strfree(&err);
            CHECK_STATUS(omprpc_turn_events(turn, NULL, &n, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
            h_strfree(&err);
        }
        omprpc_turn_free(turn);
    }
    /* NULL frees are no-ops */
    omprpc_turn_free(NULL);
    omprpc_event_batch_free(NULL);
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_a_turn_is_its_json_located);
    RUN(test_local_outcomes);
    RUN(test_event_batches);
    RUN(test_collected_batch);
    RUN(test_begun_turn_taken_after_its_completion);
    RUN(test_begun_turn_holds_the_slot_until_taken);
    RUN(test_released_turn_keeps_running);
    RUN(test_begun_turn_idle_timeout_through_take);
    RUN(test_bad_arguments);
    return h_summary();
}

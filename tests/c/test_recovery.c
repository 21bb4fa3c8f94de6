/*
 * A prompt ends where the agent says it will not go on (issue 21; src/client/lifecycle.rs),
 * through the C API only, on the fake agent's recovery scenarios — which reproduce the frames
 * real pi 0.73.1, pi 1.6.0 and omp 18.2.3 send (src/bin/omprpc-fake-agent/agent/recovery.rs):
 * "retry once" / "rate limited" (a 500 / 429, a retry 100 ms later answers "recovered"),
 * "overflow" (pi 0.73.1 and omp compact and retry, pi 1.6.0 gives up and settles), "failed
 * call" (a 400 nothing follows), "retries exhausted", "retry until abort" (a 60 s delay).
 * Every test runs on the three fakes: pi 0.73.1 (no agent_settled), pi 1.6.0 (announces
 * settling), omp (holds the failed run's agent_end back).
 *
 * Checked: the structured turn (omprpc_turn_info's outcome, attempts, settled,
 * failed_attempts_json, compactions_json, assistant_text, stop_reason) against the turn JSON's
 * members; the outcome values OMPRPC_TURN_OUTCOME_AGENT_SETTLED / ABORTED; abort (and
 * abort_retry) from a second thread while the first waits in prompt_and_wait_turn, during the
 * retry's delay; wait_for_idle, collect_events and the prompt_complete event end where the
 * turn does; the summary (turn_summary) and the streaming summarizer's retry items.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* The retry's delay in "retry until abort": a turn that waited for it took this long. */
#define LONG_DELAY_MS 60000

typedef struct {
    const char *name;
    const char *args;  /* the fake's arguments (JSON strings), or NULL */
    const char *extra; /* more start options */
    int settles;       /* announces settling: agent_settled ends a prompt */
    int omp;
} fake;

#define PI_ARGS "\"--flavor\",\"pi\""
static const fake FAKES[] = {
    {"pi 0.73.1", PI_ARGS, "\"flavor\":\"pi\",\"env\":{\"OMPRPC_FAKE_VERSION\":\"0.73.1\"}", 0, 0},
    {"pi 1.6.0", PI_ARGS, "\"flavor\":\"pi\",\"env\":{\"OMPRPC_FAKE_VERSION\":\"1.6.0\"}", 1, 0},
    {"omp", NULL, "\"flavor\":\"omp\"", 0, 1},
};

/* The fake's client; `more` adds start options (or NULL). */
static omprpc_client *start_fake(const fake *f, const char *more) {
    char extra[512];
    snprintf(extra, sizeof extra, "%s%s%s", f->extra, more ? "," : "", more ? more : "");
    return START(f->args, extra);
}

static const char *end_of(const fake *f) { return f->settles ? "agent_settled" : "agent_end"; }

static omprpc_turn_outcome end_outcome(const fake *f) {
    return f->settles ? OMPRPC_TURN_OUTCOME_AGENT_SETTLED : OMPRPC_TURN_OUTCOME_AGENT_END;
}

/* --- borrowed slices ------------------------------------------------------------------- */

static int str_has(omprpc_str s, const char *part) {
    char *text = h_dup_str(s);
    int has = text && strstr(text, part) != NULL;
    free(text);
    return has;
}

/* --- a turn ---------------------------------------------------------------------------- */

/* A finished structured turn, its info, and its JSON parsed. */
typedef struct {
    omprpc_turn *turn;
    omprpc_turn_info info;
    jval *json;
} turn_t;

static void turn_done(turn_t *t) {
    omprpc_turn_free(t->turn);
    json_free(t->json);
    memset(t, 0, sizeof *t);
}

/* Fills `t` from a finished turn: 1 on success. */
static int turn_take(turn_t *t, omprpc_turn *turn) {
    char *err = NULL;
    memset(t, 0, sizeof *t);
    t->turn = turn;
    if (!CHECK_OK(omprpc_turn_get_info(turn, &t->info, &err), err)) return 0;
    t->json = PARSE_STR(t->info.turn_json);
    return t->json != NULL;
}

/* prompt_and_wait_turn(message); 1 with `t` filled. */
static int prompt_turn(omprpc_client *c, const char *message, turn_t *t) {
    omprpc_turn *turn = NULL;
    char *err = NULL;
    memset(t, 0, sizeof *t);
    if (!CHECK_OK(omprpc_client_prompt_and_wait_turn(c, message, NULL, WAIT_MS, &turn, &err), err)) return 0;
    return turn_take(t, turn);
}

/* The stopReason of each assistant message of the turn's messages, joined ("error,stop"). */
static const char *assistant_stops(const turn_t *t, char *buf, size_t cap) {
    const omprpc_str *msgs = NULL;
    size_t n = 0, i;
    char *err = NULL;
    buf[0] = '\0';
    if (!CHECK_OK(omprpc_turn_messages(t->turn, &msgs, &n, &err), err)) return buf;
    for (i = 0; i < n; i++) {
        jval *m = PARSE_STR(msgs[i]);
        const char *role = jpath_str(m, "role"), *stop = jpath_str(m, "stopReason");
        if (role && !strcmp(role, "assistant") && strlen(buf) + 16 < cap) {
            if (buf[0]) strcat(buf, ",");
            strcat(buf, stop ? stop : "?");
        }
        json_free(m);
    }
    return buf;
}

/* The failed attempts as "attempt:then[:delayMs]" joined by spaces, e.g. "1:retry:100 2:gave_up";
 * each error must contain `error_part` (NULL: not checked). */
static const char *failed_list(const turn_t *t, const char *error_part, char *buf, size_t cap) {
    jval *failed = PARSE_STR(t->info.failed_attempts_json);
    size_t i;
    buf[0] = '\0';
    for (i = 0; i < jlen(failed); i++) {
        const jval *f = jat(failed, i);
        const char *then = jpath_str(f, "then"), *error = jpath_str(f, "error");
        char item[64];
        int has_delay = 0;
        double delay = jnum(jget(f, "delayMs"), &has_delay);
        if (has_delay)
            snprintf(item, sizeof item, "%s%.0f:%s:%.0f", i ? " " : "", jnum(jget(f, "attempt"), NULL), then ? then : "?", delay);
        else
            snprintf(item, sizeof item, "%s%.0f:%s", i ? " " : "", jnum(jget(f, "attempt"), NULL), then ? then : "?");
        if (strlen(buf) + strlen(item) < cap) strcat(buf, item);
        if (error_part) CHECKF(error && strstr(error, error_part), "failed attempt %zu's error: %s", i + 1, error ? error : "(none)");
    }
    json_free(failed);
    return buf;
}

/* The turn JSON's record members say what omprpc_turn_info says. */
static void check_json_agrees(const turn_t *t) {
    int is_num = 0;
    double attempts = jnum(jget(t->json, "attempts"), &is_num);
    CHECK_STR(jpath_str(t->json, "outcome"), h_outcome_name(t->info.outcome));
    CHECKF(is_num && attempts == t->info.attempts, "attempts: %.0f in the JSON, %u in the info", attempts,
           (unsigned)t->info.attempts);
    CHECK(jbool(jget(t->json, "settled")) == (t->info.settled ? 1 : 0));
    {
        jval *failed = PARSE_STR(t->info.failed_attempts_json), *compactions = PARSE_STR(t->info.compactions_json);
        CHECK(jis(jget(t->json, "failedAttempts"), J_ARR) && jlen(failed) == jlen(jget(t->json, "failedAttempts")));
        CHECK(jis(jget(t->json, "compactions"), J_ARR) && jlen(compactions) == jlen(jget(t->json, "compactions")));
        /* the info's slices are the JSON's own members (one buffer) */
        CHECK(t->info.failed_attempts_json.data > t->info.turn_json.data &&
              t->info.failed_attempts_json.data < t->info.turn_json.data + t->info.turn_json.len);
        CHECK(t->info.compactions_json.data > t->info.turn_json.data &&
              t->info.compactions_json.data < t->info.turn_json.data + t->info.turn_json.len);
        json_free(failed);
        json_free(compactions);
    }
}

/* get_state: nothing streams (the agent took its own last step). */
static void check_not_streaming(omprpc_client *c) {
    char *state = NULL, *err = NULL;
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &state, &err), err)) {
        jval *s = PARSE(state);
        CHECKF(jbool(jget(s, "isStreaming")) == 0, "state: %s", state);
        json_free(s);
        h_strfree(&state);
    }
}

/* The next prompt is accepted and answered, in one attempt. */
static void check_next_prompt(omprpc_client *c, const fake *f) {
    turn_t t;
    if (!prompt_turn(c, "hello", &t)) return;
    CHECK_OSTR(t.info.assistant_text, "pong");
    CHECKF(t.info.outcome == end_outcome(f) && t.info.attempts == 1, "the next prompt: %s, %u attempts",
           h_outcome_name(t.info.outcome), (unsigned)t.info.attempts);
    CHECK_OSTR(t.info.failed_attempts_json, "[]");
    turn_done(&t);
}

/* --- the tests, each on every fake -------------------------------------------------------- */

/* "retry once" / "rate limited": the failed run and the retry's run are one turn, ended by the
 * retry's run (pi 1.6.0: by agent_settled after it); two attempts, the first failed with the
 * error and retried after its delay; the answer is the turn's. */
static void retry_is_one_turn(const fake *f, const char *message, const char *code) {
    omprpc_client *c = start_fake(f, NULL);
    turn_t t;
    char last[64], buf[256];
    int starts;
    if (!c) return;
    if (prompt_turn(c, message, &t)) {
        CHECKF(t.info.outcome == end_outcome(f), "%s: outcome %s", f->name, h_outcome_name(t.info.outcome));
        CHECKF(t.info.attempts == 2, "%s: %u attempts", f->name, (unsigned)t.info.attempts);
        CHECK(t.info.settled == (f->settles != 0));
        CHECK(t.info.agent_invoked);
        CHECK_OSTR(t.info.assistant_text, "recovered");
        CHECK_OSTR(t.info.stop_reason, "stop");
        CHECK(t.info.error_message.data == NULL);
        CHECK_OSTR(t.info.compactions_json, "[]");
        CHECK_STR(failed_list(&t, code, buf, sizeof buf), "1:retry:100");
        starts = TURN_COUNT_TYPE(t.turn, "agent_start", last, sizeof last);
        CHECKF(starts == 2, "%s: %d agent_start", f->name, starts);
        CHECK_STR(last, end_of(f));
        CHECK(TURN_COUNT_TYPE(t.turn, "auto_retry_start", NULL, 0) == 1 && TURN_COUNT_TYPE(t.turn, "auto_retry_end", NULL, 0) == 1);
        /* every run's messages: the failed attempt's, then the answer (omp holds the failed run's
         * agent_end back: its messages are the ones it streamed) */
        CHECK_STR(assistant_stops(&t, buf, sizeof buf), "error,stop");
        check_json_agrees(&t);
        turn_done(&t);
    }
    check_not_streaming(c);
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

static void retry_after_500(const fake *f) { retry_is_one_turn(f, "retry once", "500"); }
static void retry_after_429(const fake *f) { retry_is_one_turn(f, "rate limited", "429"); }

/* "overflow": pi 0.73.1 and omp compact and retry (omp first tries a shake that is skipped);
 * pi 1.6.0 gives up and settles on the failed run. */
static void overflow(const fake *f) {
    omprpc_client *c = start_fake(f, NULL);
    turn_t t;
    char buf[256];
    if (!c) return;
    if (prompt_turn(c, "overflow", &t)) {
        jval *compactions = PARSE_STR(t.info.compactions_json);
        const jval *lastc = jat(compactions, jlen(compactions) ? jlen(compactions) - 1 : 0);
        CHECKF(t.info.outcome == end_outcome(f), "%s: outcome %s", f->name, h_outcome_name(t.info.outcome));
        if (f->settles) {
            CHECK(t.info.attempts == 1 && t.info.settled);
            CHECK_STR(failed_list(&t, "maximum context length", buf, sizeof buf), "1:none");
            CHECK_OSTR(t.info.stop_reason, "error");
            CHECK(t.info.assistant_text.data == NULL);
            CHECK(jlen(compactions) == 0);
        } else {
            CHECKF(t.info.attempts == 2 && !t.info.settled, "%s: %u attempts", f->name, (unsigned)t.info.attempts);
            CHECK_STR(failed_list(&t, "maximum context length", buf, sizeof buf), "1:compaction");
            CHECK_OSTR(t.info.assistant_text, "recovered");
            CHECKF(jlen(compactions) == (f->omp ? 2u : 1u), "%s: compactions %.*s", f->name,
                   (int)t.info.compactions_json.len, t.info.compactions_json.data);
            CHECK_STR(jpath_str(lastc, "reason"), "overflow");
            CHECK(jbool(jget(lastc, "willRetry")) == 1 && jbool(jget(lastc, "aborted")) == 0);
            CHECK(jis(jget(lastc, "errorMessage"), J_NULL));
            if (f->omp) {
                /* the shake: nothing to drop, no retry, with its reason */
                const jval *shake = jat(compactions, 0);
                CHECK_STR(jpath_str(shake, "reason"), "overflow");
                CHECK(jbool(jget(shake, "willRetry")) == 0 && jpath_str(shake, "errorMessage") != NULL);
            }
        }
        check_json_agrees(&t);
        json_free(compactions);
        turn_done(&t);
    }
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

/* "failed call": a 400 nothing follows. pi 1.6.0 settles; pi 0.73.1 and omp say nothing more,
 * and a get_state probe settles it (~activity_probe_ms later). */
static void failed_call(const fake *f) {
    omprpc_client *c = start_fake(f, NULL);
    turn_t t;
    char buf[256];
    if (!c) return;
    if (prompt_turn(c, "failed call", &t)) {
        CHECKF(t.info.outcome == end_outcome(f), "%s: outcome %s", f->name, h_outcome_name(t.info.outcome));
        CHECK(t.info.attempts == 1 && t.info.settled == (f->settles != 0));
        CHECK_OSTR(t.info.stop_reason, "error");
        CHECKF(str_has(t.info.error_message, "400"), "error_message %.*s", (int)t.info.error_message.len,
               t.info.error_message.data ? t.info.error_message.data : "");
        CHECK_STR(failed_list(&t, "400", buf, sizeof buf), "1:none");
        check_json_agrees(&t);
        turn_done(&t);
    }
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

/* "retries exhausted": three attempts, two retried (after 100 and 200 ms), the last given up. */
static void retries_exhausted(const fake *f) {
    omprpc_client *c = start_fake(f, NULL);
    turn_t t;
    char buf[256];
    if (!c) return;
    if (prompt_turn(c, "retries exhausted", &t)) {
        CHECKF(t.info.outcome == end_outcome(f), "%s: outcome %s", f->name, h_outcome_name(t.info.outcome));
        CHECKF(t.info.attempts == 3, "%s: %u attempts", f->name, (unsigned)t.info.attempts);
        CHECK_OSTR(t.info.stop_reason, "error");
        CHECK_STR(failed_list(&t, "500", buf, sizeof buf), "1:retry:100 2:retry:200 3:gave_up");
        check_json_agrees(&t);
        turn_done(&t);
    }
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

/* prompt_and_wait_turn on a thread of its own. */
typedef struct {
    omprpc_client *c;
    const char *message;
    omprpc_status st;
    omprpc_turn *turn;
    char *err;
    pthread_t th;
} waiter;

static void *waiter_thread(void *arg) {
    waiter *w = (waiter *)arg;
    w->st = omprpc_client_prompt_and_wait_turn(w->c, w->message, NULL, WAIT_MS, &w->turn, &w->err);
    return NULL;
}

/* The prompt_complete event of `request_id`: events are taken until it comes (WAIT_MS at most),
 * then every one queued; its outcome into buf ("" when none came, "many" when more than one).
 * It may be queued a moment after the waiting call returned. */
static const char *prompt_complete_outcome(omprpc_client *c, const char *request_id, char *buf, size_t cap) {
    char *ev = NULL, *err = NULL;
    int seen = 0;
    int64_t deadline = h_now_ms() + WAIT_MS;
    buf[0] = '\0';
    while (omprpc_client_next_event(c, seen ? 0 : (deadline > h_now_ms() ? deadline - h_now_ms() : 0), &ev, &err) ==
           OMPRPC_STATUS_OK) {
        jval *v = PARSE(ev);
        const char *type = jpath_str(v, "type"), *id = jpath_str(v, "requestId");
        if (type && !strcmp(type, "prompt_complete") && id && request_id && !strcmp(id, request_id)) {
            snprintf(buf, cap, "%s", seen++ ? "many" : (jpath_str(v, "outcome") ? jpath_str(v, "outcome") : "?"));
        }
        json_free(v);
        h_strfree(&ev);
    }
    h_strfree(&err);
    return buf;
}

/* "retry until abort" (the retry's delay is 60 s): `command` ("abort" or "abort_retry") from
 * this thread while another waits in prompt_and_wait_turn: the turn ends at once, the retry
 * cancelled, and the agent takes the next prompt. */
static void cancel_retry(const fake *f, const char *command) {
    omprpc_client *c = start_fake(f, "\"prompt_complete_events\":true");
    waiter w;
    turn_t t;
    jval *retry;
    char *err = NULL, *data = NULL, buf[256];
    int64_t t0;
    if (!c) return;
    memset(&w, 0, sizeof w);
    w.c = c;
    w.message = "retry until abort";
    w.st = OMPRPC_STATUS_PANIC;
    pthread_create(&w.th, NULL, waiter_thread, &w);
    retry = h_wait_event(c, "auto_retry_start", WAIT_MS);
    CHECKF(retry != NULL, "%s: no auto_retry_start", f->name);
    CHECK(jnum(jget(retry, "delayMs"), NULL) >= LONG_DELAY_MS - 1);
    json_free(retry);
    t0 = h_now_ms();
    if (!strcmp(command, "abort"))
        CHECK_OK(omprpc_client_abort(c, WAIT_MS, &err), err);
    else if (CHECK_OK(omprpc_client_request(c, command, NULL, WAIT_MS, &data, &err), err))
        h_strfree(&data);
    pthread_join(w.th, NULL);
    CHECKF(h_now_ms() - t0 < LONG_DELAY_MS / 6, "%s: the turn returned %lld ms after %s", f->name,
           (long long)(h_now_ms() - t0), command);
    if (CHECK_OK(w.st, w.err) && turn_take(&t, w.turn)) {
        const char *request_id = jpath_str(t.json, "requestId");
        jval *end;
        /* aborted, whichever the command: pi 1.6.0 settles with aborted:false after an
         * abort_retry (it cancelled only the retry), but the host's cancel ended the work */
        omprpc_turn_outcome want = OMPRPC_TURN_OUTCOME_ABORTED;
        CHECKF(t.info.outcome == want, "%s, %s: outcome %s, expected %s", f->name, command, h_outcome_name(t.info.outcome),
               h_outcome_name(want));
        CHECK(t.info.attempts == 1);
        CHECK_STR(failed_list(&t, NULL, buf, sizeof buf), "1:cancelled:60000");
        CHECK_OSTR(t.info.stop_reason, "error");
        CHECK(t.info.settled == (f->settles != 0));
        end = NULL;
        {
            const omprpc_event_view *views = NULL;
            size_t n = 0, i;
            if (CHECK_OK(omprpc_turn_events(t.turn, &views, &n, &err), err))
                for (i = 0; i < n && !end; i++)
                    if (h_str_is(views[i].event_type, "auto_retry_end")) end = PARSE_STR(views[i].json);
        }
        CHECKF(jbool(jget(end, "success")) == 0 && jpath_str(end, "finalError") &&
                   !strcmp(jpath_str(end, "finalError"), "Retry cancelled"),
               "%s: auto_retry_end {success:false, finalError:\"Retry cancelled\"} in the turn", f->name);
        json_free(end);
        check_json_agrees(&t);
        /* the prompt_complete event says the same, once */
        CHECK_STR(prompt_complete_outcome(c, request_id, buf, sizeof buf), h_outcome_name(want));
        turn_done(&t);
    } else {
        omprpc_turn_free(w.turn);
    }
    check_not_streaming(c);
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

static void abort_in_retry_delay(const fake *f) { cancel_retry(f, "abort"); }
static void abort_retry_in_retry_delay(const fake *f) { cancel_retry(f, "abort_retry"); }

/* After prompt (no waiting call), wait_for_idle returns only once the retry's run ended, and
 * prompt_complete comes once, after the last run's end (after agent_settled where it is sent),
 * with the outcome the turn would have. "retry once 300": the retry starts well after the
 * failed run's end. */
static void wait_for_idle_and_prompt_complete(const fake *f) {
    omprpc_client *c = start_fake(f, "\"prompt_complete_events\":true");
    char *id = NULL, *err = NULL, *ev = NULL;
    int64_t t0 = h_now_ms(), deadline;
    int ends = 0, completes = 0, settled = 0, complete_after_end = 0, at_return = 1;
    char last_text[64] = "", outcome[32] = "";
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt(c, "retry once 300", NULL, WAIT_MS, &id, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK_OK(omprpc_client_wait_for_idle(c, WAIT_MS, &err), err);
    CHECKF(h_now_ms() - t0 >= 300, "wait_for_idle returned %lld ms after the prompt, before the retry's delay ended",
           (long long)(h_now_ms() - t0));
    /* First what was queued when wait_for_idle returned (the last run's end among it), then on
     * until the prompt_complete. */
    deadline = h_now_ms() + WAIT_MS;
    for (;;) {
        jval *v;
        const char *type;
        int64_t left = deadline - h_now_ms();
        if (omprpc_client_next_event(c, at_return ? 0 : (left > 0 ? left : 0), &ev, &err) != OMPRPC_STATUS_OK) {
            h_strfree(&err);
            if (at_return) {
                CHECKF(ends == (f->omp ? 1 : 2) && !strcmp(last_text, "recovered"),
                       "%s: queued when wait_for_idle returned: %d agent_end, the last ending \"%s\"", f->name, ends,
                       last_text);
                CHECK(settled == (f->settles ? 1 : 0));
                at_return = 0;
                if (completes) break;
                continue;
            }
            break;
        }
        v = PARSE(ev);
        type = jpath_str(v, "type");
        if (type && !strcmp(type, "agent_end")) {
            const jval *msgs = jget(v, "messages");
            const char *text = jpath_str(jat(msgs, jlen(msgs) ? jlen(msgs) - 1 : 0), "content.0.text");
            ends++;
            snprintf(last_text, sizeof last_text, "%s", text ? text : "");
        } else if (type && !strcmp(type, "agent_settled")) {
            settled++;
        } else if (type && !strcmp(type, "prompt_complete") && jpath_str(v, "requestId") &&
                   !strcmp(jpath_str(v, "requestId"), id)) {
            completes++;
            complete_after_end = f->settles ? settled == 1 : ends == (f->omp ? 1 : 2);
            snprintf(outcome, sizeof outcome, "%s", jpath_str(v, "outcome") ? jpath_str(v, "outcome") : "?");
        }
        json_free(v);
        h_strfree(&ev);
        if (completes && !at_return) break;
    }
    CHECKF(completes == 1 && complete_after_end, "%s: %d prompt_complete, after the last end: %d", f->name, completes,
           complete_after_end);
    CHECK_STR(outcome, end_of(f));
    h_strfree(&id);
    check_next_prompt(c, f);
    omprpc_client_free(c);
}

/* collect_events from right after the prompt's acknowledgement runs through the retry's run
 * (to agent_settled where it is sent). */
static void collect_events_through_the_retry(const fake *f) {
    omprpc_client *c = start_fake(f, NULL);
    char *id = NULL, *err = NULL, *events = NULL;
    jval *arr;
    size_t n;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt(c, "retry once 300", NULL, WAIT_MS, &id, &err), err) &&
        CHECK_OK(omprpc_client_collect_events(c, WAIT_MS, &events, &err), err)) {
        arr = PARSE(events);
        n = jlen(arr);
        CHECK_STR(jpath_str(jat(arr, n ? n - 1 : 0), "type"), end_of(f));
        CHECKF(h_count_type(arr, "auto_retry_end") == 1, "%s: %d auto_retry_end collected", f->name,
               h_count_type(arr, "auto_retry_end"));
        {
            const jval *end = h_find_type(arr, "agent_end", h_count_type(arr, "agent_end") - 1);
            const jval *msgs = jget(end, "messages");
            CHECK_STR(jpath_str(jat(msgs, jlen(msgs) ? jlen(msgs) - 1 : 0), "content.0.text"), "recovered");
        }
        json_free(arr);
        h_strfree(&events);
    }
    h_strfree(&id);
    omprpc_client_free(c);
}

/* turn_summary: the summary holds the same record; the streaming summarizer fed the turn's
 * events derives the retry (attempt, maxAttempts, delayMs, error), its end and (pi 1.6.0) the
 * settling, and is not complete at the failed run's end. */
static void summaries_of_a_retry(const fake *f) {
    omprpc_client *c = start_fake(f, "\"turn_summary\":true");
    omprpc_summarizer *s = NULL;
    turn_t t;
    char *err = NULL, *summary = NULL;
    if (!c) return;
    if (prompt_turn(c, "retry once", &t)) {
        jval *sum = PARSE_STR(t.info.summary_json), *failed = PARSE_STR(t.info.failed_attempts_json);
        const omprpc_event_view *views = NULL;
        size_t n = 0, i;
        int retries = 0, retry_ends = 0, settled = 0, ends_seen = 0, complete_after_failed_end = -1;
        CHECK(jbool(jget(sum, "complete")) == 1);
        CHECK(jnum(jget(sum, "attempts"), NULL) == t.info.attempts);
        CHECKF(jlen(jget(sum, "failedAttempts")) == 1 && jlen(failed) == 1 &&
                   !strcmp(jpath_str(sum, "failedAttempts.0.then") ? jpath_str(sum, "failedAttempts.0.then") : "", "retry") &&
                   jnum(jpath(sum, "failedAttempts.0.delayMs"), NULL) == jnum(jpath(failed, "0.delayMs"), NULL) &&
                   !strcmp(jpath_str(sum, "failedAttempts.0.error") ? jpath_str(sum, "failedAttempts.0.error") : "",
                           jpath_str(failed, "0.error") ? jpath_str(failed, "0.error") : "-"),
               "%s: summary failedAttempts differ from the turn's", f->name);
        CHECK(jis(jget(sum, "compactions"), J_ARR) && jlen(jget(sum, "compactions")) == 0);
        json_free(sum);
        json_free(failed);
        if (CHECK_OK(omprpc_summarizer_new(NULL, &s, &err), err) &&
            CHECK_OK(omprpc_turn_events(t.turn, &views, &n, &err), err)) {
            for (i = 0; i < n; i++) {
                char *event = h_dup_str(views[i].json), *items = NULL;
                jval *v;
                size_t k;
                if (!CHECK_OK(omprpc_summarizer_feed(s, event, &items, &err), err)) {
                    free(event);
                    break;
                }
                free(event);
                v = PARSE(items);
                for (k = 0; k < jlen(v); k++) {
                    const jval *item = jat(v, k);
                    const char *kind = jpath_str(item, "kind");
                    if (!kind) continue;
                    if (!strcmp(kind, "retry")) {
                        retries++;
                        CHECK(jnum(jget(item, "attempt"), NULL) == 1);
                        CHECK(jnum(jget(item, "maxAttempts"), NULL) == (f->omp ? 10 : 3));
                        CHECK(jnum(jget(item, "delayMs"), NULL) >= 50 && jnum(jget(item, "delayMs"), NULL) <= 200);
                        CHECK(jpath_str(item, "error") && strstr(jpath_str(item, "error"), "500"));
                    } else if (!strcmp(kind, "retry_end")) {
                        retry_ends++;
                        CHECK(jbool(jget(item, "success")) == 1);
                    } else if (!strcmp(kind, "settled")) {
                        settled++;
                        CHECK(jbool(jget(item, "aborted")) == 0);
                    } else if (!strcmp(kind, "turn_end") && ++ends_seen == 1 && !f->omp) {
                        /* the failed run's end: the agent may still retry */
                        char *so_far = NULL;
                        if (CHECK_OK(omprpc_summarizer_summary(s, &so_far, &err), err)) {
                            jval *sv = PARSE(so_far);
                            complete_after_failed_end = jbool(jget(sv, "complete"));
                            json_free(sv);
                            h_strfree(&so_far);
                        }
                    }
                }
                json_free(v);
                h_strfree(&items);
            }
            CHECKF(retries == 1 && retry_ends == 1 && settled == (f->settles ? 1 : 0),
                   "%s: derived retry x%d, retry_end x%d, settled x%d", f->name, retries, retry_ends, settled);
            if (!f->omp) CHECKF(complete_after_failed_end == 0, "%s: complete after the failed run's end: %d", f->name,
                                complete_after_failed_end);
            if (CHECK_OK(omprpc_summarizer_summary(s, &summary, &err), err)) {
                jval *sv = PARSE(summary);
                CHECK(jbool(jget(sv, "complete")) == 1);
                CHECK(jnum(jget(sv, "attempts"), NULL) == 2);
                CHECK_STR(jpath_str(sv, "finalText"), "recovered");
                json_free(sv);
                h_strfree(&summary);
            }
        }
        omprpc_summarizer_free(s);
        turn_done(&t);
    }
    omprpc_client_free(c);
}

/* One test per fake: test_<name>_<fake>. */
#define ON_EVERY_FAKE(fn)                                                                               \
    static void test_##fn##_pi_0_73_1(void) { fn(&FAKES[0]); }                                        \
    static void test_##fn##_pi_1_6_0(void) { fn(&FAKES[1]); }                                         \
    static void test_##fn##_omp(void) { fn(&FAKES[2]); }
#define RUN_ON_EVERY_FAKE(fn)                                                                           \
    do {                                                                                                \
        RUN(test_##fn##_pi_0_73_1);                                                                     \
        RUN(test_##fn##_pi_1_6_0);                                                                      \
        RUN(test_##fn##_omp);                                                                           \
    } while (0)

ON_EVERY_FAKE(retry_after_500)
ON_EVERY_FAKE(retry_after_429)
ON_EVERY_FAKE(overflow)
ON_EVERY_FAKE(failed_call)
ON_EVERY_FAKE(retries_exhausted)
ON_EVERY_FAKE(abort_in_retry_delay)
ON_EVERY_FAKE(abort_retry_in_retry_delay)
ON_EVERY_FAKE(wait_for_idle_and_prompt_complete)
ON_EVERY_FAKE(collect_events_through_the_retry)
ON_EVERY_FAKE(summaries_of_a_retry)

int main(void) {
    h_init();
    RUN_ON_EVERY_FAKE(retry_after_500);
    RUN_ON_EVERY_FAKE(retry_after_429);
    RUN_ON_EVERY_FAKE(overflow);
    RUN_ON_EVERY_FAKE(failed_call);
    RUN_ON_EVERY_FAKE(retries_exhausted);
    RUN_ON_EVERY_FAKE(abort_in_retry_delay);
    RUN_ON_EVERY_FAKE(abort_retry_in_retry_delay);
    RUN_ON_EVERY_FAKE(wait_for_idle_and_prompt_complete);
    RUN_ON_EVERY_FAKE(collect_events_through_the_retry);
    RUN_ON_EVERY_FAKE(summaries_of_a_retry);
    return h_summary();
}

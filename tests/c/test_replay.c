/*
 * Session recording and replay through the C API: the `record_path` start option writes the
 * session (private: 0600, or an owner-only DACL on Windows), the fake agent's `--replay FILE` plays it back to a fresh client, and the
 * committed real-pi recording (tests/fixtures/recordings/pi-text-turn.jsonl, read relative to
 * the repository root where `make` runs the tests, or from OMPRPC_RECORDING_FIXTURE) replays
 * without pi.
 */
#include "harness.h"

static const char *fixture(void) {
    const char *p = getenv("OMPRPC_RECORDING_FIXTURE");
    return (p && *p) ? p : "tests/fixtures/recordings/pi-text-turn.jsonl";
}

/* A new directory in the temp dir; `buf` receives its path. */
static int make_dir(char *buf, size_t cap) {
    if (!plat_make_temp_dir("omprpc-replay", buf, cap)) {
        CHECKF(0, "cannot make a temp dir (%s)", buf);
        return 0;
    }
    return 1;
}

/* `lead` followed by `path` as a JSON string. Free with free(). */
static char *with_path(const char *lead, const char *path) {
    char *q = json_quote(path);
    size_t n = strlen(lead) + strlen(q) + 1;
    char *out = (char *)malloc(n);
    snprintf(out, n, "%s%s", lead, q);
    free(q);
    return out;
}

/* `"--replay","<path>"` for START's argument list. Free with free(). */
static char *replay_args(const char *path) { return with_path("\"--replay\",", path); }

/* `"record_path":"<path>"`. Free with free(). */
static char *record_opt(const char *path) { return with_path("\"record_path\":", path); }

/* prompt_and_wait; the turn JSON (free with omprpc_string_free) or NULL. */
static char *turn(omprpc_client *c, const char *message) {
    char *t = NULL, *err = NULL;
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &t, &err), err)) return NULL;
    return t;
}

static void test_committed_pi_recording_replays(void) {
    char *args = replay_args(fixture());
    FILE *f = fopen(fixture(), "r");
    omprpc_client *c;
    char *t, *state = NULL, *err = NULL;
    CHECKF(f != NULL, "cannot open %s (run from the repository root or set OMPRPC_RECORDING_FIXTURE)", fixture());
    if (!f) {
        free(args);
        return;
    }
    fclose(f);
    /* pi has no ready frame: the client's get_state probe is the recording's first frame. */
    c = START(args, "\"flavor\":\"pi\"");
    free(args);
    if (!c) return;
    t = turn(c, "say hello");
    if (t) {
        jval *v = PARSE(t);
        jval *evs = jget(v, "events");
        CHECK_STR(jpath_str(v, "assistantText"), "Hello from the fake model");
        CHECK_STR(jpath_str(v, "assistantMessage.provider"), "fake");
        CHECK(jlen(evs) > 5);
        CHECK_STR(jstr(jget(jat(evs, 0), "type")), "agent_start");
        CHECK_STR(jstr(jget(jat(evs, jlen(evs) - 1), "type")), "agent_end");
        CHECKF(h_count_type(evs, "message_update") >= 5, "expected the streamed deltas");
        json_free(v);
        omprpc_string_free(t);
    }
    if (CHECK_OK(omprpc_client_request(c, "get_state", NULL, WAIT_MS, &state, &err), err)) {
        jval *s = PARSE(state);
        CHECK_STR(jpath_str(s, "model.id"), "fake-model");
        CHECK(jbool(jget(s, "isStreaming")) == 0);
        json_free(s);
        h_strfree(&state);
    }
    omprpc_client_free(c);
}

static void test_record_then_replay(void) {
    char dir[512], path[600];
    char *opt, *args, *live = NULL, *again = NULL, *err = NULL;
    char *state1 = NULL, *state2 = NULL, why[1024];
    FILE *recording;
    omprpc_client *c;
    if (!make_dir(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/session.jsonl", dir);
    opt = record_opt(path);
    c = START(NULL, opt);
    free(opt);
    if (c) {
        live = turn(c, "say hello");
        CHECK_OK(omprpc_client_request(c, "get_state", NULL, WAIT_MS, &state1, &err), err);
        CHECK_OK(omprpc_client_close(c, &err), err);
        omprpc_client_free(c);
    }
    recording = fopen(path, "rb");
    CHECKF(recording != NULL, "no recording at %s", path);
    if (recording) fclose(recording);
    CHECKF(plat_file_is_private(path, why, sizeof why), "the recording is not private: %s", why);

    args = replay_args(path);
    c = START(args, NULL);
    free(args);
    if (c) {
        again = turn(c, "say hello");
        CHECK_OK(omprpc_client_request(c, "get_state", NULL, WAIT_MS, &state2, &err), err);
        omprpc_client_free(c);
    }
    /* The same frames, so the same turn JSON byte for byte. */
    CHECK(live && again && !strcmp(live, again));
    CHECK(state1 && state2 && !strcmp(state1, state2));
    if (live) {
        jval *v = PARSE(live);
        CHECK_STR(jpath_str(v, "assistantText"), "pong");
        json_free(v);
    }

    /* A different prompt is not what the recording holds: the replay stops and says why. */
    args = replay_args(path);
    c = START(args, NULL);
    free(args);
    if (c) {
        char *t = NULL, msg[2048];
        if (CHECK_STATUS(omprpc_client_prompt_and_wait(c, "say goodbye", NULL, WAIT_MS, &t, &err), OMPRPC_STATUS_PROCESS_EXITED, err)) {
            CHECKF(h_err_field(err, "message", msg, sizeof msg) && strstr(msg, "replay mismatch"), "error: %s", err);
        }
        h_strfree(&err);
        omprpc_client_free(c);
    }
    if (live) omprpc_string_free(live);
    if (again) omprpc_string_free(again);
    h_strfree(&state1);
    h_strfree(&state2);
    unlink(path);
    rmdir(dir);
}

static void test_unwritable_record_path_fails_start(void) {
    char dir[512], path[600], msg[1024];
    char *opts, *opt, *err = NULL;
    omprpc_client *c = NULL;
    if (!make_dir(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/missing/session.jsonl", dir);
    opt = record_opt(path);
    opts = h_opts(NULL, opt);
    free(opt);
    if (CHECK_STATUS(omprpc_client_start(opts, &c, &err), OMPRPC_STATUS_IO, err)) {
        CHECK(c == NULL);
        CHECKF(h_err_field(err, "message", msg, sizeof msg) && strstr(msg, "record_path"), "error: %s", err);
    }
    h_strfree(&err);
    free(opts);
    opts = h_opts(NULL, "\"record_path\":42");
    CHECK_STATUS(omprpc_client_start(opts, &c, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    free(opts);
    rmdir(dir);
}

int main(void) {
    h_init();
    RUN(test_committed_pi_recording_replays);
    RUN(test_record_then_replay);
    RUN(test_unwritable_record_path_fails_start);
    return h_summary();
}

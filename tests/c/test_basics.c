/*
 * Basics of the omprpc C API (docs/c-api.md): versions and status names, NULL handling,
 * invalid inputs, the argv builder, start / get_state / bash, every command through
 * omprpc_client_request, close semantics, many threads on one client.
 */
#include "harness.h"

static const char *const STATUS_NAMES[] = {
    "OK", "INVALID_ARGUMENT", "INVALID_JSON", "INVALID_UTF8", "TIMEOUT",
    "COMMAND_FAILED", "PROCESS_EXITED", "CLOSED", "CONCURRENCY", "PROTOCOL",
    "IO", "NOT_FOUND", "CANCELLED", "LIMIT_EXCEEDED", "PANIC",
};

static void test_version_abi_and_status_names(void) {
    const char *v = omprpc_version();
    int i;
    CHECK(v != NULL && *v != '\0');
    CHECK(omprpc_version() == v); /* a static string, the same every time */
    CHECK(omprpc_abi_version() == OMPRPC_ABI_VERSION);
    /* ABI 2: the turn outcomes AGENT_SETTLED / ABORTED and omprpc_turn_info's attempts,
     * settled, failed_attempts_json, compactions_json (a struct grown at its end). */
    CHECK(OMPRPC_ABI_VERSION == 2);
    CHECK(OMPRPC_TURN_OUTCOME_AGENT_END == 0 && OMPRPC_TURN_OUTCOME_PROMPT_RESULT == 1 &&
          OMPRPC_TURN_OUTCOME_NOT_INVOKED == 2 && OMPRPC_TURN_OUTCOME_AGENT_SETTLED == 3 &&
          OMPRPC_TURN_OUTCOME_ABORTED == 4);
    CHECK(OMPRPC_TIMEOUT_INFINITE == -1);
    CHECK(OMPRPC_TIMEOUT_DEFAULT == -2);
    CHECK(OMPRPC_STATUS_OK == 0);
    CHECK(OMPRPC_STATUS_PANIC == 14);
    for (i = 0; i < (int)(sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]); i++) {
        const char *name = omprpc_status_name((omprpc_status)i);
        CHECKF(name && !strcmp(name, STATUS_NAMES[i]), "status_name(%d) = %s, expected %s", i,
               name ? name : "NULL", STATUS_NAMES[i]);
    }
    CHECK_STR(omprpc_status_name(15), "UNKNOWN");
    CHECK_STR(omprpc_status_name(-1), "UNKNOWN");
    CHECK_STR(omprpc_status_name(1000), "UNKNOWN");
}

static void test_free_null_is_a_no_op(void) {
    omprpc_string_free(NULL);
    omprpc_client_free(NULL);
    CHECK(1);
}

/* Every entry point with a NULL handle answers INVALID_ARGUMENT and never crashes. */
static void test_null_client_is_invalid_argument(void) {
    char *out = NULL, *err = NULL;
    int fd = -1;
    const int64_t T = 100;
#define NULL_CASE(call) CHECK_STATUS(call, OMPRPC_STATUS_INVALID_ARGUMENT, err); h_strfree(&err); CHECK(out == NULL)
    NULL_CASE(omprpc_client_request(NULL, "get_state", NULL, T, &out, &err));
    NULL_CASE(omprpc_client_send_frame(NULL, "{\"type\":\"x\"}", &err));
    NULL_CASE(omprpc_client_prompt(NULL, "hi", NULL, T, &out, &err));
    NULL_CASE(omprpc_client_abort_and_prompt(NULL, "hi", NULL, T, &out, &err));
    NULL_CASE(omprpc_client_prompt_and_wait(NULL, "hi", NULL, T, &out, &err));
    NULL_CASE(omprpc_client_steer(NULL, "hi", NULL, T, &err));
    NULL_CASE(omprpc_client_follow_up(NULL, "hi", NULL, T, &err));
    NULL_CASE(omprpc_client_abort(NULL, T, &err));
    NULL_CASE(omprpc_client_get_state(NULL, T, &out, &err));
    NULL_CASE(omprpc_client_bash(NULL, "true", T, &out, &err));
    NULL_CASE(omprpc_client_collect_events(NULL, T, &out, &err));
    NULL_CASE(omprpc_client_wait_for_idle(NULL, T, &err));
    NULL_CASE(omprpc_client_next_event(NULL, T, &out, &err));
    NULL_CASE(omprpc_client_next_events(NULL, 4, T, &out, &err));
    NULL_CASE(omprpc_client_event_fd(NULL, &fd, &err));
    CHECK(fd == -1);
    void *event_handle = NULL;
    NULL_CASE(omprpc_client_event_handle(NULL, &event_handle, &err));
    CHECK(event_handle == NULL);
    NULL_CASE(omprpc_client_next_ui_request(NULL, T, &out, &err));
    NULL_CASE(omprpc_client_ui_send_value(NULL, "ui-1", "v", &err));
    NULL_CASE(omprpc_client_ui_send_confirmation(NULL, "ui-1", true, &err));
    NULL_CASE(omprpc_client_ui_cancel(NULL, "ui-1", false, &err));
    NULL_CASE(omprpc_client_set_ui_policy(NULL, "{\"confirm\":false}", &err));
    NULL_CASE(omprpc_client_set_host_tools(NULL, "[]", T, &out, &err));
    NULL_CASE(omprpc_client_set_host_uri_schemes(NULL, "[]", T, &out, &err));
    NULL_CASE(omprpc_client_host_tool_update(NULL, "h-1", "\"x\"", &err));
    NULL_CASE(omprpc_client_host_tool_result(NULL, "h-1", "\"x\"", false, &err));
    NULL_CASE(omprpc_client_host_uri_result(NULL, "u-1", "{}", &err));
    NULL_CASE(omprpc_client_stderr(NULL, &out, &err));
    NULL_CASE(omprpc_client_protocol_errors(NULL, &out, &err));
    NULL_CASE(omprpc_client_info(NULL, &out, &err));
    NULL_CASE(omprpc_client_close(NULL, &err));
    NULL_CASE(omprpc_build_argv(NULL, &out, &err));
    NULL_CASE(omprpc_build_argv("{}", NULL, &err));
    {
        omprpc_client *c = NULL;
        NULL_CASE(omprpc_client_start(NULL, &c, &err));
        CHECK(c == NULL);
        NULL_CASE(omprpc_client_start("{}", NULL, &err));
    }
    /* out_error itself may always be NULL */
    CHECK(omprpc_client_get_state(NULL, T, &out, NULL) == OMPRPC_STATUS_INVALID_ARGUMENT);
    CHECK(omprpc_client_close(NULL, NULL) == OMPRPC_STATUS_INVALID_ARGUMENT);
#undef NULL_CASE
}

/* NULL out-pointers and NULL required strings on a live client: INVALID_ARGUMENT, no crash,
 * and the client keeps working. */
static void test_null_out_pointers_on_live_client(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    if (!c) return;
#define BAD(call) CHECK_STATUS(call, OMPRPC_STATUS_INVALID_ARGUMENT, err); h_strfree(&err)
    BAD(omprpc_client_request(c, "get_state", NULL, WAIT_MS, NULL, &err));
    BAD(omprpc_client_request(c, NULL, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_get_state(c, WAIT_MS, NULL, &err));
    BAD(omprpc_client_bash(c, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_bash(c, "true", WAIT_MS, NULL, &err));
    BAD(omprpc_client_prompt(c, NULL, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_prompt_and_wait(c, NULL, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, NULL, &err));
    BAD(omprpc_client_steer(c, NULL, NULL, WAIT_MS, &err));
    BAD(omprpc_client_send_frame(c, NULL, &err));
    BAD(omprpc_client_next_event(c, 0, NULL, &err));
    BAD(omprpc_client_next_events(c, 4, 0, NULL, &err));
    BAD(omprpc_client_event_fd(c, NULL, &err));
    BAD(omprpc_client_event_handle(c, NULL, &err));
    {
        /* The other platform's event source (the event HANDLE off Windows, the descriptor on
         * Windows) is refused, naming this platform's, and its out-parameter is left alone. */
        int untouched = 0;
        CHECK_STATUS(plat_foreign_event_source(c, &untouched, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        CHECK(untouched && err != NULL && strstr(err, PLAT_EVENT_SOURCE_NAME) != NULL);
        h_strfree(&err);
    }
    BAD(omprpc_client_collect_events(c, 0, NULL, &err));
    BAD(omprpc_client_next_ui_request(c, 0, NULL, &err));
    BAD(omprpc_client_ui_send_value(c, NULL, "v", &err));
    BAD(omprpc_client_ui_send_confirmation(c, NULL, true, &err));
    BAD(omprpc_client_ui_cancel(c, NULL, false, &err));
    BAD(omprpc_client_host_tool_result(c, NULL, "\"x\"", false, &err));
    BAD(omprpc_client_host_tool_update(c, NULL, "\"x\"", &err));
    BAD(omprpc_client_host_uri_result(c, NULL, "{}", &err));
    BAD(omprpc_client_set_host_tools(c, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_set_host_uri_schemes(c, NULL, WAIT_MS, &out, &err));
    BAD(omprpc_client_stderr(c, NULL, &err));
    BAD(omprpc_client_protocol_errors(c, NULL, &err));
    BAD(omprpc_client_info(c, NULL, &err));
#undef BAD
    CHECK(out == NULL);
    /* still alive */
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err)) {
        jval *s = PARSE(out);
        CHECK_STR(jpath_str(s, "sessionId"), "fake-session");
        json_free(s);
    }
    h_strfree(&out);
    omprpc_client_free(c);
}

static void test_invalid_json_and_utf8(void) {
    omprpc_client *c = NULL;
    char *out = NULL, *err = NULL;
    CHECK_STATUS(omprpc_client_start("not json", &c, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_start("{\"command\":[\"x\"]", &c, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_start("[]", &c, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK(c == NULL);
    CHECK_STATUS(omprpc_build_argv("{", &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_build_argv("\"omp\"", &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_build_argv("{\"executable\":\"\xff\"}", &out, &err), OMPRPC_STATUS_INVALID_UTF8, err);
    h_strfree(&err);
    /* option values of the wrong type are bad arguments, not bad JSON */
    CHECK_STATUS(omprpc_build_argv("{\"flavor\":\"bogus\"}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_build_argv("{\"command\":\"omp --mode rpc\"}", &out, &err),
                 OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK(out == NULL);

    c = START(NULL, NULL);
    if (!c) return;
#define BADJSON(call) CHECK_STATUS(call, OMPRPC_STATUS_INVALID_JSON, err); h_strfree(&err)
    BADJSON(omprpc_client_request(c, "get_state", "{", WAIT_MS, &out, &err));
    BADJSON(omprpc_client_request(c, "get_state", "[1,2]", WAIT_MS, &out, &err));
    BADJSON(omprpc_client_send_frame(c, "nope", &err));
    BADJSON(omprpc_client_prompt(c, "hi", "{", WAIT_MS, &out, &err));
    BADJSON(omprpc_client_set_ui_policy(c, "{\"confirm\":", &err));
    BADJSON(omprpc_client_set_host_tools(c, "[{", WAIT_MS, &out, &err));
    BADJSON(omprpc_client_set_host_uri_schemes(c, "{\"scheme\":\"x\"}", WAIT_MS, &out, &err));
    BADJSON(omprpc_client_host_tool_result(c, "h-1", "{bad", false, &err));
#undef BADJSON
    CHECK_STATUS(omprpc_client_bash(c, "echo \xff\xfe", WAIT_MS, &out, &err), OMPRPC_STATUS_INVALID_UTF8, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_request(c, "get_\xc3", NULL, WAIT_MS, &out, &err), OMPRPC_STATUS_INVALID_UTF8, err);
    h_strfree(&err);
    CHECK(out == NULL);
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    omprpc_client_free(c);
}

static void check_argv(const char *options, const char *const *expected, size_t n) {
    char *out = NULL, *err = NULL;
    size_t i;
    jval *argv;
    if (!CHECK_OK(omprpc_build_argv(options, &out, &err), err)) return;
    argv = PARSE(out);
    CHECKF(jis(argv, J_ARR) && jlen(argv) == n, "build_argv(%s) = %s: expected %u items", options, out,
           (unsigned)n);
    for (i = 0; i < n && i < jlen(argv); i++)
        CHECKF(jstr(jat(argv, i)) && !strcmp(jstr(jat(argv, i)), expected[i]),
               "build_argv(%s)[%u] = %s, expected \"%s\" (whole argv: %s)", options, (unsigned)i,
               jstr(jat(argv, i)) ? jstr(jat(argv, i)) : "(not a string)", expected[i], out);
    json_free(argv);
    h_strfree(&out);
}

#define ARGV(options, ...)                                                           \
    do {                                                                             \
        static const char *const expected_[] = {__VA_ARGS__};                        \
        check_argv((options), expected_, sizeof expected_ / sizeof expected_[0]);    \
    } while (0)

static void test_build_argv(void) {
    ARGV("{\"executable\":\"omp\",\"model\":\"openrouter/anthropic/claude-sonnet-4.6\","
         "\"cwd\":\"/tmp/workspace\",\"thinking\":\"high\","
         "\"append_system_prompt\":\"extra instructions\","
         "\"provider_session_id\":\"provider-session-1\",\"tools\":[\"read\",\"edit\",\"write\"],"
         "\"no_session\":true,\"no_skills\":true,\"no_rules\":true,\"extra_args\":[\"--foo\",\"bar\"]}",
         "omp", "--mode", "rpc", "--model", "openrouter/anthropic/claude-sonnet-4.6", "--thinking",
         "high", "--append-system-prompt", "extra instructions", "--provider-session-id",
         "provider-session-1", "--tools", "read,edit,write", "--no-session", "--no-skills",
         "--no-rules", "--no-title", "--foo", "bar");
    /* the documented order of the remaining flags (spec/PROTOCOL.md §4.2) */
    ARGV("{\"provider\":\"anthropic\",\"model\":\"m\",\"session_dir\":\"/s\",\"tools\":[]}",
         "omp", "--mode", "rpc", "--provider", "anthropic", "--model", "m", "--session-dir", "/s",
         "--no-tools", "--no-title");
    ARGV("{}", "omp", "--mode", "rpc", "--no-title");
    ARGV("{\"no_title\":false}", "omp", "--mode", "rpc");
    ARGV("{\"rpc_defaults\":false}", "omp", "--mode", "rpc");
    /* an exact command wins over every flag option */
    ARGV("{\"command\":[\"/bin/agent\",\"--x\"],\"model\":\"ignored\"}", "/bin/agent", "--x");
}

static void test_start_get_state_bash_info(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    jval *v;
    if (!c) return;
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err)) {
        v = PARSE(out);
        CHECK_STR(jpath_str(v, "sessionId"), "fake-session");
        CHECK_STR(jpath_str(v, "model.id"), "claude-sonnet-4-5");
        json_free(v);
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_client_get_state(c, OMPRPC_TIMEOUT_DEFAULT, &out, &err), err)) h_strfree(&out);
    if (CHECK_OK(omprpc_client_get_state(c, OMPRPC_TIMEOUT_INFINITE, &out, &err), err)) h_strfree(&out);
    if (CHECK_OK(omprpc_client_bash(c, "echo hello", WAIT_MS, &out, &err), err)) {
        int ok;
        v = PARSE(out);
        CHECK_STR(jpath_str(v, "output"), "hello\n");
        CHECK(jnum(jget(v, "exitCode"), &ok) == 0 && ok);
        json_free(v);
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
        int ok;
        v = PARSE(out);
        CHECKF(jnum(jget(v, "pid"), &ok) > 0 && ok, "info.pid: %s", out);
        CHECKF(jis(jget(v, "argv"), J_ARR) && jlen(jget(v, "argv")) == 1, "info.argv: %s", out);
        CHECK_STR(jpath_str(v, "argv.0"), h_fake());
        CHECK_STR(jpath_str(v, "flavor"), "omp");
        /* "ready": the contract does not fix its type; true or the ready frame itself */
        CHECKF(jbool(jget(v, "ready")) == 1 || jis(jget(v, "ready"), J_OBJ), "info.ready: %s", out);
        CHECKF(jbool(jget(v, "closed")) == 0, "info.closed: %s", out);
        CHECKF(jnum(jget(v, "protocolVersion"), &ok) == 1 && ok, "info.protocolVersion (no --v2): %s", out);
        json_free(v);
        h_strfree(&out);
    }
    /* the first event is the agent's ready frame, verbatim */
    if (CHECK_OK(omprpc_client_next_event(c, WAIT_MS, &out, &err), err)) {
        v = PARSE(out);
        CHECK_STR(jpath_str(v, "type"), "ready");
        json_free(v);
        h_strfree(&out);
    }
    CHECK_OK(omprpc_client_close(c, &err), err);
    omprpc_client_free(c);
}

/* data_json of `request(type, params)`; NULL (and a failed check) on error. */
static jval *req(omprpc_client *c, const char *type, const char *params) {
    char *out = NULL, *err = NULL;
    jval *v = NULL;
    omprpc_status st = omprpc_client_request(c, type, params, WAIT_MS, &out, &err);
    if (st != OMPRPC_STATUS_OK) {
        h_fail(__FILE__, __LINE__, "request(%s, %s) returned %s; error: %s", type, params ? params : "NULL",
               h_name(st), err ? err : "(none)");
        h_strfree(&err);
        return NULL;
    }
    CHECKF(err == NULL, "request(%s) wrote out_error on success", type);
    v = json_parse(out);
    CHECKF(v != NULL, "request(%s): data is not JSON: %s", type, out ? out : "NULL");
    h_strfree(&out);
    return v;
}

#define REQ_STR(c, type, params, path, want)                      \
    do {                                                          \
        jval *r_ = req((c), (type), (params));                    \
        if (r_) CHECKF(jpath_str(r_, (path)) && !strcmp(jpath_str(r_, (path)), (want)), \
                       "%s: data.%s is not \"%s\"", (type), (path), (want)); \
        json_free(r_);                                            \
    } while (0)

#define REQ_OK(c, type, params) json_free(req((c), (type), (params)))

static void test_every_command_through_request(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    jval *v;
    int ok;
    if (!c) return;
    REQ_STR(c, "get_state", NULL, "sessionId", "fake-session");
    REQ_STR(c, "get_state", "{}", "sessionId", "fake-session");
    REQ_STR(c, "set_model", "{\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-6\"}", "id", "claude-sonnet-4-6");
    REQ_STR(c, "cycle_model", NULL, "model.id", "claude-sonnet-4-5");
    v = req(c, "get_available_models", NULL);
    CHECK(jlen(jget(v, "models")) == 2);
    CHECK_STR(jpath_str(v, "models.0.id"), "claude-sonnet-4-5");
    CHECK_STR(jpath_str(v, "models.1.id"), "claude-sonnet-4-6");
    json_free(v);
    REQ_OK(c, "set_thinking_level", "{\"level\":\"high\"}");
    REQ_STR(c, "get_state", NULL, "thinkingLevel", "high");
    REQ_STR(c, "cycle_thinking_level", NULL, "level", "low");
    REQ_OK(c, "set_steering_mode", "{\"mode\":\"all\"}");
    REQ_OK(c, "set_follow_up_mode", "{\"mode\":\"all\"}");
    REQ_OK(c, "set_interrupt_mode", "{\"mode\":\"wait\"}");
    REQ_OK(c, "set_auto_compaction", "{\"enabled\":false}");
    REQ_OK(c, "set_auto_retry", "{\"enabled\":false}");
    REQ_OK(c, "set_session_name", "{\"name\":\"Renamed\"}");
    v = req(c, "get_state", NULL);
    CHECK_STR(jpath_str(v, "steeringMode"), "all");
    CHECK_STR(jpath_str(v, "followUpMode"), "all");
    CHECK_STR(jpath_str(v, "interruptMode"), "wait");
    CHECK(jbool(jget(v, "autoCompactionEnabled")) == 0);
    CHECK_STR(jpath_str(v, "sessionName"), "Renamed");
    json_free(v);
    REQ_STR(c, "compact", NULL, "summary", "trimmed");
    v = req(c, "get_session_stats", NULL);
    CHECK_STR(jpath_str(v, "sessionId"), "fake-session");
    CHECK(jnum(jpath(v, "tokens.total"), &ok) == 15 && ok);
    json_free(v);
    REQ_STR(c, "export_html", "{\"outputPath\":\"/tmp/custom.html\"}", "path", "/tmp/custom.html");
    v = req(c, "new_session", NULL);
    CHECK(jbool(jget(v, "cancelled")) == 0);
    json_free(v);
    v = req(c, "switch_session", "{\"sessionPath\":\"/tmp/session.jsonl\"}");
    CHECK(jbool(jget(v, "cancelled")) == 0);
    json_free(v);
    REQ_STR(c, "branch", "{\"entryId\":\"entry-9\"}", "text", "branch created");
    REQ_STR(c, "get_branch_messages", NULL, "messages.0.entryId", "entry-9");
    v = req(c, "set_todos", "{\"phases\":[{\"id\":\"phase-1\",\"name\":\"Todos\",\"tasks\":"
                            "[{\"id\":\"task-1\",\"content\":\"Map tools\",\"status\":\"pending\"}]}]}");
    CHECK_STR(jpath_str(v, "todoPhases.0.tasks.0.content"), "Map tools");
    json_free(v);
    REQ_STR(c, "get_state", NULL, "todoPhases.0.name", "Todos");
    REQ_OK(c, "get_messages", NULL);
    REQ_OK(c, "get_last_assistant_text", NULL);
    REQ_OK(c, "abort_retry", NULL);
    REQ_OK(c, "abort_bash", NULL);
    REQ_OK(c, "steer", "{\"message\":\"nudge\"}");
    REQ_OK(c, "follow_up", "{\"message\":\"later\"}");
    REQ_OK(c, "abort", NULL);
    /* the dedicated wrappers */
    CHECK_OK(omprpc_client_steer(c, "nudge", NULL, WAIT_MS, &err), err);
    CHECK_OK(omprpc_client_follow_up(c, "later", NULL, WAIT_MS, &err), err);
    CHECK_OK(omprpc_client_abort(c, WAIT_MS, &err), err);
    /* a fire-and-forget frame: no id, no response awaited, the client carries on */
    CHECK_OK(omprpc_client_send_frame(c, "{\"type\":\"widget_layout\",\"widgetKey\":\"w\",\"visible\":true,"
                                         "\"availableWidth\":80,\"visibleRows\":3,\"hiddenBlocks\":[\"b\"]}",
                                      &err), err);
    /* an agent-side failure carries the command and the agent's text */
    if (CHECK_STATUS(omprpc_client_request(c, "no_such_command", NULL, WAIT_MS, &out, &err),
                     OMPRPC_STATUS_COMMAND_FAILED, err)) {
        char buf[256];
        CHECK_STR(h_err_field(err, "command", buf, sizeof buf), "no_such_command");
        CHECKF(h_err_field(err, "error", buf, sizeof buf) != NULL, "COMMAND_FAILED without \"error\": %s", err);
    }
    h_strfree(&err);
    CHECK(out == NULL);
    REQ_STR(c, "get_state", NULL, "sessionId", "fake-session");
    omprpc_client_free(c);
}

/* The requests a client has written so far (its counters). */
static double requests_sent(omprpc_client *c) {
    char *out = NULL, *err = NULL;
    double n = -1;
    if (CHECK_OK(omprpc_client_counters(c, &out, &err), err)) {
        jval *v = json_parse(out);
        int ok = 0;
        n = jnum(jget(v, "requests_sent"), &ok);
        CHECK(ok);
        json_free(v);
    }
    h_strfree(&out);
    h_strfree(&err);
    return n;
}

/* A command the running pi's version does not have yet (src/protocol/table.json: clear_queue
 * since pi 0.84.4) fails at once with INVALID_ARGUMENT naming the command and the version, and
 * is never written; a pi that has it answers it. The version is the one the client probed at
 * start (the fake answers --version with OMPRPC_FAKE_VERSION; the argv has --mode, so it is
 * asked). */
static void test_a_command_newer_than_the_agent_is_refused_unsent(void) {
    static const struct {
        const char *version;
        int has_clear_queue;
    } pis[] = {{"0.73.1", 0}, {"1.6.0", 1}};
    size_t i;
    for (i = 0; i < sizeof pis / sizeof pis[0]; i++) {
        char extra[256], buf[512];
        char *out = NULL, *err = NULL;
        omprpc_client *c;
        double before;
        omprpc_status st;
        snprintf(extra, sizeof extra, "\"flavor\":\"pi\",\"env\":{\"OMPRPC_FAKE_VERSION\":\"%s\"}", pis[i].version);
        c = START("\"--flavor\",\"pi\",\"--mode\",\"rpc\"", extra);
        if (!c) continue;
        if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
            jval *info = json_parse(out);
            CHECK_STR(jpath_str(info, "agentVersion"), pis[i].version);
            json_free(info);
        }
        h_strfree(&out);
        h_strfree(&err);
        before = requests_sent(c);
        st = omprpc_client_request(c, "clear_queue", NULL, WAIT_MS, &out, &err);
        if (pis[i].has_clear_queue) {
            if (CHECK_OK(st, err)) {
                jval *v = json_parse(out);
                CHECKF(jlen(jget(v, "steering")) == 0 && jlen(jget(v, "followUp")) == 0, "clear_queue on pi %s: %s", pis[i].version, out);
                json_free(v);
            }
            CHECK(requests_sent(c) == before + 1);
        } else {
            if (CHECK_STATUS(st, OMPRPC_STATUS_INVALID_ARGUMENT, err)) {
                const char *message = h_err_field(err, "message", buf, sizeof buf);
                CHECKF(message && strstr(message, "clear_queue") && strstr(message, "0.73.1") && strstr(message, "0.84.4"),
                       "the error names the command, the agent's version and the first with it: %s", err);
            }
            CHECK(out == NULL);
            CHECKF(requests_sent(c) == before, "clear_queue was written to pi %s", pis[i].version);
            /* The client carries on: the next command is sent and answered. */
            REQ_STR(c, "get_state", NULL, "sessionId", "fake-session");
        }
        h_strfree(&out);
        h_strfree(&err);
        omprpc_client_free(c);
    }
}

/* Out-parameters are written only on success. */
static void test_out_params_untouched_on_failure(void) {
    omprpc_client *c = START(NULL, NULL);
    char sentinel = 0;
    char *out = &sentinel, *err = NULL;
    if (!c) return;
    CHECK_OK(omprpc_client_close(c, &err), err);
    CHECK_STATUS(omprpc_client_get_state(c, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK(out == &sentinel);
    CHECK_STATUS(omprpc_client_request(c, "get_state", NULL, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK(out == &sentinel);
    CHECK_STATUS(omprpc_build_argv("nope", &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK(out == &sentinel);
    omprpc_client_free(c);
}

static void test_close_is_idempotent_and_requests_fail_fast(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    int64_t t0;
    int drained = 0, i;
    omprpc_status st;
    if (!c) return;
    CHECK_OK(omprpc_client_close(c, &err), err);
    CHECK_OK(omprpc_client_close(c, &err), err);
    CHECK_OK(omprpc_client_close(c, NULL), err);
    t0 = h_now_ms();
    CHECK_STATUS(omprpc_client_get_state(c, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_prompt(c, "say hello", NULL, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_bash(c, "true", WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    /* idle after close: nothing accepted is still running, so OK is as valid as CLOSED */
    st = omprpc_client_wait_for_idle(c, WAIT_MS, &err);
    CHECKF(st == OMPRPC_STATUS_OK || st == OMPRPC_STATUS_CLOSED, "wait_for_idle after close: %s", h_name(st));
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_next_ui_request(c, WAIT_MS, &out, &err), OMPRPC_STATUS_CLOSED, err);
    h_strfree(&err);
    CHECKF(h_now_ms() - t0 < 1000, "calls on a closed client took %lld ms", (long long)(h_now_ms() - t0));
    /* pollers drain what was queued before close, then see CLOSED */
    for (i = 0; i < 10000; i++) {
        st = omprpc_client_next_event(c, WAIT_MS, &out, &err);
        if (st != OMPRPC_STATUS_OK) break;
        drained++;
        h_strfree(&out);
    }
    CHECKF(st == OMPRPC_STATUS_CLOSED, "next_event after close and drain: %s (%s)", h_name(st), err ? err : "");
    h_strfree(&err);
    CHECKF(drained >= 1, "the ready event queued before close was not delivered");
    if (CHECK_OK(omprpc_client_info(c, &out, &err), err)) {
        jval *v = PARSE(out);
        CHECK(jbool(jget(v, "closed")) == 1);
        json_free(v);
        h_strfree(&out);
    }
    omprpc_client_free(c);
}

static void test_free_without_close(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    int64_t t0;
    if (!c) return;
    CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    t0 = h_now_ms();
    omprpc_client_free(c);
    CHECKF(h_now_ms() - t0 < 5000, "free of a live client took %lld ms", (long long)(h_now_ms() - t0));
}

static void test_stderr_ring_is_bounded(void) {
    omprpc_client *c = START("\"--scenario\",\"stderr\"", "\"max_stderr_lines\":1");
    char *out = NULL, *err = NULL;
    if (!c) return;
    /* closing joins the stderr reader, so everything the agent wrote has been seen */
    CHECK_OK(omprpc_client_close(c, &err), err);
    if (CHECK_OK(omprpc_client_stderr(c, &out, &err), err)) CHECK_STR(out, "second\n");
    h_strfree(&out);
    omprpc_client_free(c);
}

typedef struct {
    omprpc_client *c;
    int calls, ok;
} state_job;

static void *get_state_worker(void *arg) {
    state_job *job = (state_job *)arg;
    int i;
    for (i = 0; i < job->calls; i++) {
        char *out = NULL, *err = NULL;
        if (CHECK_OK(omprpc_client_get_state(job->c, WAIT_MS, &out, &err), err)) {
            jval *v = json_parse(out);
            if (jpath_str(v, "sessionId") && !strcmp(jpath_str(v, "sessionId"), "fake-session")) job->ok++;
            json_free(v);
        }
        h_strfree(&out);
    }
    return NULL;
}

static void test_many_threads_share_one_client(void) {
    enum { THREADS = 8, CALLS = 25 };
    omprpc_client *c = START(NULL, NULL);
    pthread_t th[THREADS];
    state_job jobs[THREADS];
    int i, total = 0;
    if (!c) return;
    for (i = 0; i < THREADS; i++) {
        jobs[i].c = c;
        jobs[i].calls = CALLS;
        jobs[i].ok = 0;
        pthread_create(&th[i], NULL, get_state_worker, &jobs[i]);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += jobs[i].ok;
    }
    CHECKF(total == THREADS * CALLS, "%d of %d concurrent get_state calls answered correctly", total,
           THREADS * CALLS);
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_version_abi_and_status_names);
    RUN(test_free_null_is_a_no_op);
    RUN(test_null_client_is_invalid_argument);
    RUN(test_null_out_pointers_on_live_client);
    RUN(test_invalid_json_and_utf8);
    RUN(test_build_argv);
    RUN(test_start_get_state_bash_info);
    RUN(test_every_command_through_request);
    RUN(test_a_command_newer_than_the_agent_is_refused_unsent);
    RUN(test_out_params_untouched_on_failure);
    RUN(test_close_is_idempotent_and_requests_fail_fast);
    RUN(test_free_without_close);
    RUN(test_stderr_ring_is_bounded);
    RUN(test_many_threads_share_one_client);
    return h_summary();
}

/*
 * Host tools and host URIs through the C API: registration at start and later, calls
 * answered from another thread (update + result), xd:// renaming, cancellation, calls the
 * library answers by itself (bad arguments, unknown tool, unregistered scheme).
 */
#include "harness.h"

static omprpc_client *start_with_echo(void) { return START(NULL, "\"host_tools\":[" ECHO_TOOL "]"); }

/* What the host thread does with the host_tool_call it waits for. */
typedef enum { ANSWER_TEXT, ANSWER_OBJECT_ERROR, ANSWER_AFTER_CANCEL } answer_mode;

typedef struct {
    omprpc_client *c;
    answer_mode mode;
    int got_call;
    char call_id[64], tool_name[64], tool_call_id[64], arg_message[64];
    omprpc_status update_st, result_st, second_result_st;
} host_job;

static void copy_str(char *dst, size_t cap, const char *src) {
    dst[0] = '\0';
    if (src) {
        strncpy(dst, src, cap - 1);
        dst[cap - 1] = '\0';
    }
}

static void *host_thread(void *arg) {
    host_job *j = (host_job *)arg;
    char *err = NULL;
    jval *call = h_wait_event(j->c, "host_tool_call", WAIT_MS);
    if (!call) return NULL;
    j->got_call = 1;
    copy_str(j->call_id, sizeof j->call_id, jpath_str(call, "id"));
    copy_str(j->tool_name, sizeof j->tool_name, jpath_str(call, "toolName"));
    copy_str(j->tool_call_id, sizeof j->tool_call_id, jpath_str(call, "toolCallId"));
    copy_str(j->arg_message, sizeof j->arg_message, jpath_str(call, "arguments.message"));
    json_free(call);
    switch (j->mode) {
    case ANSWER_TEXT:
        j->update_st = omprpc_client_host_tool_update(j->c, j->call_id, "\"working:hello\"", &err);
        h_strfree(&err);
        j->result_st = omprpc_client_host_tool_result(j->c, j->call_id, "\"host:hello\"", false, &err);
        h_strfree(&err);
        break;
    case ANSWER_OBJECT_ERROR:
        j->update_st = omprpc_client_host_tool_update(
            j->c, j->call_id, "{\"content\":[{\"type\":\"text\",\"text\":\"half\"}],\"details\":{\"step\":1}}", &err);
        h_strfree(&err);
        j->result_st = omprpc_client_host_tool_result(
            j->c, j->call_id, "{\"content\":[{\"type\":\"text\",\"text\":\"it broke\"}],\"details\":{\"k\":1}}", true, &err);
        h_strfree(&err);
        break;
    case ANSWER_AFTER_CANCEL: {
        jval *cancel = h_wait_event(j->c, "host_tool_cancel", WAIT_MS);
        json_free(cancel);
        j->result_st = omprpc_client_host_tool_result(j->c, j->call_id, "\"too late\"", false, &err);
        h_strfree(&err);
        break;
    }
    }
    /* the call is finished either way: a second answer names no open call */
    j->second_result_st = omprpc_client_host_tool_result(j->c, j->call_id, "\"again\"", false, &err);
    h_strfree(&err);
    return NULL;
}

/* prompt_and_wait(message) in this thread while host_thread answers; the turn or NULL. */
static jval *turn_with_host(omprpc_client *c, const char *message, host_job *j) {
    pthread_t th;
    char *out = NULL, *err = NULL;
    jval *turn = NULL;
    j->c = c;
    pthread_create(&th, NULL, host_thread, j);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &out, &err), err)) turn = PARSE(out);
    h_strfree(&out);
    pthread_join(th, NULL);
    CHECKF(j->got_call, "no host_tool_call event for \"%s\"", message);
    return turn;
}

static void test_host_tool_round_trip(void) {
    omprpc_client *c = start_with_echo();
    char *out = NULL, *err = NULL;
    host_job j;
    jval *turn, *ev;
    if (!c) return;
    /* registered during start */
    if (CHECK_OK(omprpc_client_get_state(c, WAIT_MS, &out, &err), err)) {
        jval *s = PARSE(out);
        jval *tools = jget(s, "dumpTools");
        CHECK_STR(jstr(jget(jat(tools, jlen(tools) ? jlen(tools) - 1 : 0), "name")), "echo_host");
        json_free(s);
        h_strfree(&out);
    }
    memset(&j, 0, sizeof j);
    j.mode = ANSWER_TEXT;
    turn = turn_with_host(c, "needs host tool", &j);
    CHECK_STR(j.call_id, "host-call-1");
    CHECK_STR(j.tool_name, "echo_host");
    CHECK_STR(j.tool_call_id, "toolu_host_1");
    CHECK_STR(j.arg_message, "hello");
    CHECK(j.update_st == OMPRPC_STATUS_OK);
    CHECK(j.result_st == OMPRPC_STATUS_OK);
    CHECKF(j.second_result_st == OMPRPC_STATUS_NOT_FOUND, "second result: %s", h_name(j.second_result_st));
    if (turn) {
        jval *events = jget(turn, "events");
        CHECK(h_count_type(events, "tool_execution_update") == 1);
        CHECK(h_count_type(events, "tool_execution_end") == 1);
        ev = h_find_type(events, "tool_execution_update", 0);
        CHECK_STR(jpath_str(ev, "partialResult.content.0.text"), "working:hello");
        CHECK_STR(jpath_str(ev, "toolName"), "echo_host");
        ev = h_find_type(events, "tool_execution_end", 0);
        CHECK_STR(jpath_str(ev, "result.content.0.text"), "host:hello");
        CHECK(jbool(jget(ev, "isError")) == 0);
    }
    json_free(turn);
    /* object-form answers, is_error */
    memset(&j, 0, sizeof j);
    j.mode = ANSWER_OBJECT_ERROR;
    turn = turn_with_host(c, "needs host tool", &j);
    CHECK(j.update_st == OMPRPC_STATUS_OK && j.result_st == OMPRPC_STATUS_OK);
    if (turn) {
        ev = h_find_type(jget(turn, "events"), "tool_execution_update", 0);
        CHECK_STR(jpath_str(ev, "partialResult.content.0.text"), "half");
        ev = h_find_type(jget(turn, "events"), "tool_execution_end", 0);
        CHECK_STR(jpath_str(ev, "result.content.0.text"), "it broke");
        CHECK(jnum(jpath(ev, "result.details.k"), NULL) == 1);
        CHECK(jbool(jget(ev, "isError")) == 1);
    }
    json_free(turn);
    /* ids that name no open call */
    CHECK_STATUS(omprpc_client_host_tool_result(c, "no-such-call", "\"x\"", false, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_host_tool_update(c, "no-such-call", "\"x\"", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

/* xd:// dispatch: update and end events are renamed to the host tool, start keeps `write`. */
static void test_xd_dispatched_tool_is_renamed(void) {
    omprpc_client *c = start_with_echo();
    host_job j;
    jval *turn, *ev;
    if (!c) return;
    memset(&j, 0, sizeof j);
    j.mode = ANSWER_TEXT;
    turn = turn_with_host(c, "needs xd tool", &j);
    if (turn) {
        jval *events = jget(turn, "events");
        ev = h_find_type(events, "tool_execution_start", 0);
        CHECK_STR(jpath_str(ev, "toolName"), "write");
        CHECK_STR(jpath_str(ev, "toolCallId"), "toolu_host_1");
        ev = h_find_type(events, "tool_execution_update", 0);
        CHECK_STR(jpath_str(ev, "toolName"), "echo_host");
        CHECK_STR(jpath_str(ev, "toolCallId"), "toolu_host_1");
        ev = h_find_type(events, "tool_execution_end", 0);
        CHECK_STR(jpath_str(ev, "toolName"), "echo_host");
        CHECK_STR(jpath_str(ev, "toolCallId"), "toolu_host_1");
        CHECK_STR(jpath_str(ev, "result.content.0.text"), "host:hello");
    }
    json_free(turn);
    omprpc_client_free(c);
}

static void test_cancelled_host_call(void) {
    omprpc_client *c = start_with_echo();
    host_job j;
    jval *turn;
    if (!c) return;
    memset(&j, 0, sizeof j);
    j.mode = ANSWER_AFTER_CANCEL;
    turn = turn_with_host(c, "cancel host tool", &j);
    CHECKF(j.result_st == OMPRPC_STATUS_CANCELLED, "result after host_tool_cancel: %s", h_name(j.result_st));
    CHECKF(j.second_result_st == OMPRPC_STATUS_NOT_FOUND || j.second_result_st == OMPRPC_STATUS_CANCELLED,
           "second result after cancel: %s", h_name(j.second_result_st));
    json_free(turn);
    omprpc_client_free(c);
}

/* The agent's echo of the host_tool_result the library sent by itself. */
static void check_library_answered(omprpc_client *c, const char *message, const char *call_id) {
    char *out = NULL, *err = NULL;
    jval *seen;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = h_wait_event(c, "host_result_seen", WAIT_MS);
    CHECKF(seen != NULL, "\"%s\": the library sent no host_tool_result", message);
    CHECK_STR(jpath_str(seen, "frame.type"), "host_tool_result");
    CHECK_STR(jpath_str(seen, "frame.id"), call_id);
    CHECK(jbool(jpath(seen, "frame.isError")) == 1);
    CHECK(jis(jpath(seen, "frame.result.content"), J_ARR));
    json_free(seen);
    CHECK_STATUS(omprpc_client_host_tool_result(c, call_id, "\"x\"", false, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
}

static void test_library_answers_bad_calls(void) {
    omprpc_client *c = start_with_echo();
    if (!c) return;
    check_library_answered(c, "bad host call", "host-call-bad");
    check_library_answered(c, "unknown host tool", "host-call-unknown");
    omprpc_client_free(c);
}

static void test_set_host_tools_later(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_set_host_tools(c, "[" ECHO_TOOL ",{\"name\":\"other\",\"description\":\"d\","
                                                 "\"parameters\":{\"type\":\"object\"},\"label\":\"Other\",\"hidden\":true}]",
                                              WAIT_MS, &out, &err), err)) {
        /* The agent's answer, verbatim: {"toolNames":[…]}. */
        jval *data = PARSE(out);
        jval *names = jget(data, "toolNames");
        CHECKF(jlen(names) == 2 && jpath_str(names, "0") && !strcmp(jpath_str(names, "0"), "echo_host") &&
                   jpath_str(names, "1") && !strcmp(jpath_str(names, "1"), "other"),
               "set_host_tools returned %s", out);
        json_free(data);
        h_strfree(&out);
    }
    /* the newly registered tool is served */
    {
        host_job j;
        jval *turn;
        memset(&j, 0, sizeof j);
        j.mode = ANSWER_TEXT;
        turn = turn_with_host(c, "needs host tool", &j);
        CHECK(j.result_st == OMPRPC_STATUS_OK);
        CHECK_STR(jpath_str(h_find_type(jget(turn, "events"), "tool_execution_end", 0), "result.content.0.text"),
                  "host:hello");
        json_free(turn);
    }
    omprpc_client_free(c);
}

/* omp protocol 1.1: tools added and removed one at a time; the library serves what the agent
 * registered, and answers a removed tool's call by itself. An agent without the commands
 * refuses them (COMMAND_FAILED) and nothing stays registered. */
static void test_add_and_remove_host_tools(void) {
    omprpc_client *c = START("\"--protocol\",\"1.1\"", NULL);
    omprpc_client *plain;
    char *out = NULL, *err = NULL;
    host_job j;
    jval *turn;
    if (!c) return;
    if (CHECK_OK(omprpc_client_add_host_tools(c, "[" ECHO_TOOL "]", WAIT_MS, &out, &err), err)) {
        CHECK_STR(out, "{\"toolNames\":[\"echo_host\"]}");
        h_strfree(&out);
    }
    memset(&j, 0, sizeof j);
    j.mode = ANSWER_TEXT;
    turn = turn_with_host(c, "needs host tool", &j);
    CHECK(j.result_st == OMPRPC_STATUS_OK);
    json_free(turn);
    if (CHECK_OK(omprpc_client_remove_host_tools(c, "[\"echo_host\"]", WAIT_MS, &out, &err), err)) {
        CHECK_STR(out, "{\"toolNames\":[]}");
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs host tool", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    if (CHECK_OK(omprpc_client_protocol_errors(c, &out, &err), err)) {
        CHECKF(strstr(out, "is not registered") != NULL, "the removed tool's call was answered by the library: %s", out);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_client_remove_host_tools(c, "[\"\"]", WAIT_MS, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_add_host_tools(c, "not json", WAIT_MS, &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    if (CHECK_OK(omprpc_client_add_host_uri_schemes(c, "[{\"scheme\":\"memo\"}]", WAIT_MS, &out, &err), err)) {
        CHECK_STR(out, "{\"schemes\":[\"memo\"]}");
        h_strfree(&out);
    }
    if (CHECK_STATUS(omprpc_client_add_host_uri_schemes(c, "[{\"scheme\":\"omp\"}]", WAIT_MS, &out, &err),
                     OMPRPC_STATUS_COMMAND_FAILED, err)) {
        /* The agent's typed error reaches the error JSON. */
        char code[64];
        CHECK_STR(h_err_field(err, "errorCode", code, sizeof code), "host_uri_denied");
    }
    h_strfree(&err);
    if (CHECK_OK(omprpc_client_remove_host_uri_schemes(c, "[\"memo\"]", WAIT_MS, &out, &err), err)) {
        CHECK_STR(out, "{\"schemes\":[]}");
        h_strfree(&out);
    }
    omprpc_client_free(c);

    plain = START(NULL, NULL);
    if (!plain) return;
    CHECK_STATUS(omprpc_client_add_host_tools(plain, "[" ECHO_TOOL "]", WAIT_MS, &out, &err), OMPRPC_STATUS_COMMAND_FAILED, err);
    h_strfree(&err);
    if (CHECK_OK(omprpc_client_prompt_and_wait(plain, "needs host tool", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    if (CHECK_OK(omprpc_client_protocol_errors(plain, &out, &err), err)) {
        CHECKF(strstr(out, "is not registered") != NULL, "a refused tool stays unregistered: %s", out);
        h_strfree(&out);
    }
    omprpc_client_free(plain);
}

/* --- host URIs ---------------------------------------------------------------------- */

typedef struct {
    omprpc_client *c;
    const char *result;
    char id[64], operation[16], url[128], content[64];
    omprpc_status st, second_st;
} uri_job;

static void *uri_thread(void *arg) {
    uri_job *j = (uri_job *)arg;
    char *err = NULL;
    jval *req = h_wait_event(j->c, "host_uri_request", WAIT_MS);
    if (!req) return NULL;
    copy_str(j->id, sizeof j->id, jpath_str(req, "id"));
    copy_str(j->operation, sizeof j->operation, jpath_str(req, "operation"));
    copy_str(j->url, sizeof j->url, jpath_str(req, "url"));
    copy_str(j->content, sizeof j->content, jpath_str(req, "content"));
    json_free(req);
    j->st = omprpc_client_host_uri_result(j->c, j->id, j->result, &err);
    h_strfree(&err);
    j->second_st = omprpc_client_host_uri_result(j->c, j->id, j->result, &err);
    h_strfree(&err);
    return NULL;
}

/* Runs `message` while uri_thread answers with `result`; returns the agent's echo frame. */
static jval *uri_round_trip(omprpc_client *c, const char *message, const char *result, uri_job *j) {
    pthread_t th;
    char *out = NULL, *err = NULL;
    jval *seen;
    memset(j, 0, sizeof *j);
    j->c = c;
    j->result = result;
    pthread_create(&th, NULL, uri_thread, j);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, message, NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    pthread_join(th, NULL);
    CHECKF(j->st == OMPRPC_STATUS_OK, "host_uri_result for \"%s\": %s", message, h_name(j->st));
    CHECKF(j->second_st == OMPRPC_STATUS_NOT_FOUND, "second host_uri_result: %s", h_name(j->second_st));
    seen = h_wait_event(c, "host_uri_result_seen", WAIT_MS);
    CHECKF(seen != NULL, "the agent never received the host_uri_result for \"%s\"", message);
    return seen;
}

static void test_host_uris(void) {
    omprpc_client *c = START(NULL, "\"host_uri_schemes\":[{\"scheme\":\"memo\",\"description\":\"notes\",\"writable\":true}]");
    char *out = NULL, *err = NULL;
    uri_job j;
    jval *seen;
    if (!c) return;
    seen = uri_round_trip(c, "needs host uri", "{\"content\":\"hello notes\",\"contentType\":\"text/plain\"}", &j);
    CHECK_STR(j.id, "uri-1");
    CHECK_STR(j.operation, "read");
    CHECK_STR(j.url, "memo://notes/today");
    CHECK_STR(jpath_str(seen, "frame.type"), "host_uri_result");
    CHECK_STR(jpath_str(seen, "frame.id"), "uri-1");
    CHECK_STR(jpath_str(seen, "frame.content"), "hello notes");
    CHECK_STR(jpath_str(seen, "frame.contentType"), "text/plain");
    CHECK(jget(jget(seen, "frame"), "isError") == NULL || jbool(jpath(seen, "frame.isError")) == 0);
    json_free(seen);

    seen = uri_round_trip(c, "needs host uri write", "{}", &j);
    CHECK_STR(j.operation, "write");
    CHECK_STR(j.content, "new text");
    CHECK_STR(jpath_str(seen, "frame.id"), "uri-1");
    CHECK(jget(jget(seen, "frame"), "error") == NULL);
    json_free(seen);

    seen = uri_round_trip(c, "needs host uri", "{\"error\":\"no such note\"}", &j);
    CHECK_STR(jpath_str(seen, "frame.error"), "no such note");
    CHECK(jbool(jpath(seen, "frame.isError")) == 1);
    json_free(seen);

    CHECK_STATUS(omprpc_client_host_uri_result(c, "no-such-request", "{}", &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);

    /* replacing the set later */
    if (CHECK_OK(omprpc_client_set_host_uri_schemes(c, "[{\"scheme\":\"Docs\"}]", WAIT_MS, &out, &err), err)) {
        CHECKF(strstr(out, "\"docs\"") != NULL, "set_host_uri_schemes returned %s", out);
        h_strfree(&out);
    }
    omprpc_client_free(c);
}

/* A request for a scheme nobody registered is answered with an error by the library
 * (spec/PROTOCOL.md §4.7 and §6.12: never leave the agent waiting on an id). */
static void test_unregistered_scheme_is_answered(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    jval *seen;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "needs host uri", NULL, WAIT_MS, &out, &err), err)) h_strfree(&out);
    seen = h_wait_event(c, "host_uri_result_seen", WAIT_MS);
    CHECKF(seen != NULL, "the library left the host_uri_request unanswered");
    CHECK(jbool(jpath(seen, "frame.isError")) == 1);
    CHECK(jpath_str(seen, "frame.error") != NULL);
    json_free(seen);
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_host_tool_round_trip);
    RUN(test_xd_dispatched_tool_is_renamed);
    RUN(test_cancelled_host_call);
    RUN(test_library_answers_bad_calls);
    RUN(test_set_host_tools_later);
    RUN(test_add_and_remove_host_tools);
    RUN(test_host_uris);
    RUN(test_unregistered_scheme_is_answered);
    return h_summary();
}

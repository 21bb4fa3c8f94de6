/*
 * The turn summary and the helpers through the C API: a summary inside prompt_and_wait's
 * turn, the stateless omprpc_summarize over a turn's events, the streaming summarizer, the
 * environment allow-list, prompt content blocks and the provider config writer; plus the
 * policy-gate verdict call's argument checks (the gate itself is exercised in tests/bridge.rs);
 * and nested tool calls: real pi 1.6.0's codemode turn, replayed from its recording
 * (tests/fixtures/recordings/pi-1.6.0-codemode.jsonl, read relative to the repository root where
 * `make` runs the tests, or from OMPRPC_CODEMODE_FIXTURE).
 */
#include "harness.h"

static void test_summary_in_turn_and_from_events(void) {
    omprpc_client *c = START(NULL, "\"turn_summary\":true,\"model\":\"configured\"");
    char *turn = NULL, *err = NULL, *summary = NULL;
    if (!c) return;
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "all events", NULL, WAIT_MS, &turn, &err), err)) {
        jval *t = PARSE(turn);
        CHECK_STR(jpath_str(t, "summary.finalText"), "pong");
        CHECK_STR(jpath_str(t, "summary.toolCalls.0.outcome"), "success");
        CHECK(jbool(jpath(t, "summary.complete")) == 1);
        {
            /* The same summary again, from the events alone. */
            char *events = NULL;
            jval *evs = jget(t, "events");
            size_t n = jlen(evs);
            CHECKF(n >= 3, "turn has %zu events", n);
            /* Rebuild the events array text from the turn text: it starts the object. */
            {
                const char *start = strstr(turn, "\"events\":[") + strlen("\"events\":");
                const char *end = strstr(turn, "],\"requestId\"");
                size_t len = (size_t)(end - start) + 1;
                events = (char *)malloc(len + 1);
                memcpy(events, start, len);
                events[len] = 0;
            }
            if (CHECK_OK(omprpc_summarize(events, "{\"model\":\"configured\"}", &summary, &err), err)) {
                jval *s = PARSE(summary);
                CHECK_STR(jpath_str(s, "finalText"), "pong");
                CHECK_STR(jpath_str(s, "usage.model"), "claude-sonnet-4-5");
                json_free(s);
                h_strfree(&summary);
            }
            free(events);
        }
        json_free(t);
        h_strfree(&turn);
    }
    CHECK_STATUS(omprpc_summarize("{}", NULL, &summary, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_summarize("[]", "{\"model\":5}", &summary, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_summarize(NULL, NULL, &summary, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

static void test_streaming_summarizer(void) {
    omprpc_summarizer *s = NULL;
    char *err = NULL, *derived = NULL, *summary = NULL;
    if (!CHECK_OK(omprpc_summarizer_new(NULL, &s, &err), err)) return;
    if (CHECK_OK(omprpc_summarizer_feed(s, "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"thinking_delta\",\"delta\":\"hm\"}}", &derived, &err), err)) {
        jval *d = PARSE(derived);
        CHECK_STR(jpath_str(d, "0.kind"), "reasoning");
        json_free(d);
        h_strfree(&derived);
    }
    CHECK_OK(omprpc_summarizer_feed(s, "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"delta\":\"hi\"}}", &derived, &err), err);
    h_strfree(&derived);
    CHECK_OK(omprpc_summarizer_feed(s, "{\"type\":\"agent_end\",\"messages\":[]}", &derived, &err), err);
    h_strfree(&derived);
    CHECK_STATUS(omprpc_summarizer_feed(s, "not json", &derived, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_summarizer_feed(NULL, "{}", &derived, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    if (CHECK_OK(omprpc_summarizer_summary(s, &summary, &err), err)) {
        jval *v = PARSE(summary);
        CHECK_STR(jpath_str(v, "text"), "hi");
        CHECK_STR(jpath_str(v, "reasoning"), "hm");
        CHECK(jbool(jget(v, "complete")) == 1);
        CHECK(jis(jget(v, "usage"), J_NULL));
        json_free(v);
        h_strfree(&summary);
    }
    omprpc_summarizer_free(s);
    omprpc_summarizer_free(NULL);
}

static void test_policy_verdict_arguments(void) {
    omprpc_client *c = START(NULL, NULL);
    char *err = NULL;
    if (!c) return;
    CHECK_STATUS(omprpc_client_policy_verdict(c, "no-such", 1, NULL, &err), OMPRPC_STATUS_NOT_FOUND, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_policy_verdict(c, NULL, 1, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_policy_verdict(NULL, "x", 0, "r", &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

static void test_helpers(void) {
    char *out = NULL, *err = NULL;
    plat_setenv("OMPRPC_C_TEST_SECRET", "x");
    plat_setenv("OMPRPC_C_TEST_OPTIN", "y");
    if (CHECK_OK(omprpc_env_allowlisted("{\"passthrough\":[\"OMPRPC_C_TEST_OPTIN\"]}", &out, &err), err)) {
        jval *env = PARSE(out);
        CHECK(jget(env, "OMPRPC_C_TEST_SECRET") == NULL);
        CHECK_STR(jstr(jget(env, "OMPRPC_C_TEST_OPTIN")), "y");
        CHECK(jget(env, "PATH") != NULL);
        json_free(env);
        h_strfree(&out);
    }
    /* A 1x1 PNG header is enough for the type check. */
    if (CHECK_OK(omprpc_prompt_from_content("[{\"type\":\"text\",\"text\":\"see\"},"
                                            "{\"type\":\"image\",\"data_uri\":\"data:image/png;base64,iVBORw0KGgo=\"}]",
                                            &out, &err), err)) {
        jval *p = PARSE(out);
        CHECK_STR(jpath_str(p, "message"), "see");
        CHECK_STR(jpath_str(p, "images.0.mimeType"), "image/png");
        json_free(p);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_prompt_from_content("[{\"type\":\"audio\"}]", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    CHECKF(err && strstr(err, "audio"), "error should name the block type: %s", err ? err : "(none)");
    h_strfree(&err);
    if (CHECK_OK(omprpc_provider_config("{\"providers\":{\"fake\":{\"baseUrl\":\"http://127.0.0.1:9/v1\","
                                        "\"api\":\"openai-completions\",\"apiKeyEnv\":\"FAKE_KEY\","
                                        "\"models\":[{\"id\":\"m\"}]}}}", &out, &err), err)) {
        jval *r = PARSE(out);
        CHECK_STR(jpath_str(r, "model"), "fake/m");
        CHECK_STR(jpath_str(r, "envPassthrough.0"), "FAKE_KEY");
        CHECK(jpath_str(r, "env.PI_CODING_AGENT_DIR") != NULL);
        if (jpath_str(r, "file")) remove(jpath_str(r, "file"));
        if (jpath_str(r, "dir")) rmdir(jpath_str(r, "dir"));
        json_free(r);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_provider_config("{\"providers\":{}}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
}

static void test_events_as_lines_and_nul_messages(void) {
    omprpc_client *c = START(NULL, NULL);
    char *out = NULL, *err = NULL;
    if (!c) return;
    CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, WAIT_MS, &out, &err), err);
    h_strfree(&out);
    if (CHECK_OK(omprpc_client_next_events_lines(c, 1000, WAIT_MS, &out, &err), err)) {
        int lines = 0, saw_end = 0;
        char *line = out, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            jval *v;
            *nl = 0;
            v = json_parse(line);
            CHECKF(v != NULL, "line %d is not JSON: %s", lines, line);
            if (v && jstr(jget(v, "type")) && !strcmp(jstr(jget(v, "type")), "agent_end")) saw_end = 1;
            json_free(v);
            lines++;
            line = nl + 1;
        }
        CHECKF(*line == 0, "text after the last newline: %s", line);
        CHECKF(lines >= 5 && saw_end, "%d lines, agent_end seen: %d", lines, saw_end);
        h_strfree(&out);
    }
    /* A message with a NUL travels in the options (a C string cannot carry it). */
    CHECK_OK(omprpc_client_steer(c, NULL, "{\"message\":\"a\\u0000b\"}", WAIT_MS, &err), err);
    CHECK_STATUS(omprpc_client_steer(c, "x", "{\"message\":\"y\"}", WAIT_MS, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_client_follow_up(c, NULL, NULL, WAIT_MS, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    omprpc_client_free(c);
}

/* A codemode call ran bash and read from one script (read ended first): each call's summary
 * item holds its own result, the inner ones name the codemode call in parentToolCallId and the
 * codemode item lists them in children; the streaming summarizer's tool items name it too. */
static void test_nested_tool_calls(void) {
    const char *env = getenv("OMPRPC_CODEMODE_FIXTURE");
    char *path = json_quote((env && *env) ? env : "tests/fixtures/recordings/pi-1.6.0-codemode.jsonl");
    size_t n = strlen(path) + 32;
    char *args = (char *)malloc(n);
    omprpc_client *c;
    omprpc_turn *turn = NULL;
    omprpc_turn_info info;
    const omprpc_event_view *views = NULL;
    size_t count = 0, i;
    char *err = NULL;
    jval *s;
    /* `--mode rpc` makes the client ask the replay its `--version`: the recorded pi's. */
    snprintf(args, n, "\"--replay\",%s,\"--mode\",\"rpc\"", path);
    c = START(args, "\"flavor\":\"pi\",\"turn_summary\":true");
    free(args);
    free(path);
    if (!c) return;
    if (!CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "please run codemode", NULL, WAIT_MS, &turn, &err), err)) {
        omprpc_client_free(c);
        return;
    }
    CHECK_OK(omprpc_turn_get_info(turn, &info, &err), err);
    CHECK(info.outcome == OMPRPC_TURN_OUTCOME_AGENT_SETTLED);
    s = PARSE_STR(info.summary_json);
    CHECKF(jlen(jget(s, "toolCalls")) == 3, "%u tool calls", (unsigned)jlen(jget(s, "toolCalls")));
    CHECK_STR(jpath_str(s, "toolCalls.0.toolName"), "codemode");
    CHECK(jis(jpath(s, "toolCalls.0.parentToolCallId"), J_NULL));
    CHECK(jlen(jpath(s, "toolCalls.0.children")) == 2);
    CHECK_STR(jpath_str(s, "toolCalls.0.children.0"), "call_fake_2/1");
    CHECK_STR(jpath_str(s, "toolCalls.0.children.1"), "call_fake_2/2");
    CHECK_STR(jpath_str(s, "toolCalls.0.result.content.1.text"), "inner+from-note");
    CHECK_STR(jpath_str(s, "toolCalls.1.toolCallId"), "call_fake_2/1");
    CHECK_STR(jpath_str(s, "toolCalls.1.toolName"), "bash");
    CHECK_STR(jpath_str(s, "toolCalls.1.parentToolCallId"), "call_fake_2");
    CHECK_STR(jpath_str(s, "toolCalls.1.outcome"), "success");
    CHECK_STR(jpath_str(s, "toolCalls.1.result.content.0.text"), "inner\n");
    CHECK(jlen(jpath(s, "toolCalls.1.children")) == 0);
    CHECK_STR(jpath_str(s, "toolCalls.2.toolName"), "read");
    CHECK_STR(jpath_str(s, "toolCalls.2.parentToolCallId"), "call_fake_2");
    CHECK_STR(jpath_str(s, "toolCalls.2.result.content.0.text"), "from-note\n");
    json_free(s);
    /* The same events through the streaming summarizer: every tool item names its caller. */
    if (CHECK_OK(omprpc_turn_events(turn, &views, &count, &err), err)) {
        omprpc_summarizer *sm = NULL;
        int inner = 0, outer = 0;
        if (CHECK_OK(omprpc_summarizer_new(NULL, &sm, &err), err)) {
            for (i = 0; i < count; i++) {
                char *event = h_dup_str(views[i].json), *derived = NULL;
                if (CHECK_OK(omprpc_summarizer_feed(sm, event, &derived, &err), err)) {
                    jval *d = PARSE(derived);
                    size_t k;
                    for (k = 0; k < jlen(d); k++) {
                        jval *item = jat(d, k);
                        const char *kind = jstr(jget(item, "kind")), *id = jstr(jget(item, "toolCallId"));
                        if (!kind || strncmp(kind, "tool_", 5) || !id) continue;
                        if (!strcmp(id, "call_fake_2")) {
                            CHECKF(jis(jget(item, "parentToolCallId"), J_NULL), "%s of the codemode call names a caller", kind);
                            outer++;
                        } else {
                            CHECK_STR(jstr(jget(item, "parentToolCallId")), "call_fake_2");
                            inner++;
                        }
                    }
                    json_free(d);
                    h_strfree(&derived);
                }
                free(event);
            }
            CHECKF(inner >= 4 && outer >= 2, "%d inner and %d outer tool items", inner, outer);
            omprpc_summarizer_free(sm);
        }
    }
    omprpc_turn_free(turn);
    omprpc_client_free(c);
}

int main(void) {
    h_init();
    RUN(test_events_as_lines_and_nul_messages);
    RUN(test_helpers);
    RUN(test_summary_in_turn_and_from_events);
    RUN(test_streaming_summarizer);
    RUN(test_policy_verdict_arguments);
    RUN(test_nested_tool_calls);
    return h_summary();
}

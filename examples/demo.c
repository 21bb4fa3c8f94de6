/*
 * omprpc demo: start an agent, send one prompt, stream the assistant's text as it arrives,
 * then print the final assistant text.
 *
 *   demo AGENT [ARG...]      e.g.  demo omp --model anthropic/claude-sonnet-4-5
 *
 * `make demo` runs it on the fake agent, or on the shell-word argv in $OMPRPC_DEMO_AGENT.
 * The agent's argv is used exactly as given (the "command" option), with the caller's
 * environment (a real agent needs PATH, HOME and its API keys).
 *
 * Build: cc -std=c99 -Iinclude -Itests/c examples/demo.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h) */

#define PROMPT "say hello"
/* A real model can think for a while between events. */
#define EVENT_TIMEOUT_MS 120000

static int fail(const char *what, omprpc_status st, char *err) {
    fprintf(stderr, "demo: %s failed: %s %s\n", what, omprpc_status_name(st), err ? err : "");
    omprpc_string_free(err);
    return 1;
}

/* {"command":[argv...],"inherit_env":true,"prompt_complete_events":true}: the library says
 * when the prompt is done (a prompt_complete event), so this loop decides nothing itself. */
static char *options_for(int argc, char **argv) {
    size_t cap = 96, n;
    int i;
    char *opts;
    for (i = 1; i < argc; i++) cap += strlen(argv[i]) * 6 + 3;
    opts = (char *)malloc(cap);
    if (!opts) return NULL;
    n = (size_t)sprintf(opts, "{\"command\":[");
    for (i = 1; i < argc; i++) {
        if (i > 1) opts[n++] = ',';
        n += json_quote_into(opts + n, argv[i]);
    }
    sprintf(opts + n, "],\"inherit_env\":true,\"prompt_complete_events\":true}");
    return opts;
}

int main(int argc, char **argv) {
    omprpc_client *client = NULL;
    char *err = NULL, *request_id = NULL, *data = NULL;
    char *options;
    omprpc_status st;
    int done = 0, rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s AGENT [ARG...]\n", argv[0]);
        return 2;
    }
    printf("omprpc %s (ABI %u)\n", omprpc_version(), omprpc_abi_version());

    options = options_for(argc, argv);
    st = omprpc_client_start(options, &client, &err);
    free(options);
    if (st != OMPRPC_STATUS_OK) return fail("start", st, err);

    /* Never block on a dialog: cancel anything interactive the agent asks. */
    st = omprpc_client_set_ui_policy(client, "{\"confirm\":false,\"select\":null,\"input\":null,\"editor\":null}", &err);
    if (st != OMPRPC_STATUS_OK) rc = fail("set_ui_policy", st, err);

    printf("> %s\n", PROMPT);
    st = omprpc_client_prompt(client, PROMPT, NULL, OMPRPC_TIMEOUT_DEFAULT, &request_id, &err);
    if (st != OMPRPC_STATUS_OK) {
        rc = fail("prompt", st, err);
        done = 1;
    }

    /* Stream: print every text delta until the library says the prompt is complete. */
    while (!done) {
        char *event_json = NULL;
        jval *ev;
        const char *type;
        st = omprpc_client_next_event(client, EVENT_TIMEOUT_MS, &event_json, &err);
        if (st != OMPRPC_STATUS_OK) {
            rc = fail("next_event", st, err);
            break;
        }
        ev = json_parse(event_json);
        omprpc_string_free(event_json);
        type = jstr(jget(ev, "type"));
        if (type && !strcmp(type, "message_update")) {
            const char *kind = jpath_str(ev, "assistantMessageEvent.type");
            const char *delta = jpath_str(ev, "assistantMessageEvent.delta");
            if (kind && !strcmp(kind, "text_delta") && delta) {
                fputs(delta, stdout);
                fflush(stdout);
            }
        } else if (type && !strcmp(type, "prompt_complete") && request_id
                   && !strcmp(jstr(jget(ev, "requestId")) ? jstr(jget(ev, "requestId")) : "", request_id)) {
            /* The library's word: the agent will not go on with this prompt (its last run ended,
             * after any retries; or nothing needed to run). */
            const char *outcome = jstr(jget(ev, "outcome"));
            printf("\n(prompt complete: %s)", outcome ? outcome : "?");
            done = 1;
        }
        json_free(ev);
    }
    printf("\n");
    omprpc_string_free(request_id);

    if (rc == 0) {
        st = omprpc_client_request(client, "get_last_assistant_text", NULL, OMPRPC_TIMEOUT_DEFAULT, &data, &err);
        if (st == OMPRPC_STATUS_OK) {
            jval *v = json_parse(data);
            const char *text = jstr(jget(v, "text"));
            printf("final assistant text: %s\n", text ? text : "(none)");
            json_free(v);
            omprpc_string_free(data);
        } else {
            rc = fail("get_last_assistant_text", st, err);
        }
    }

    st = omprpc_client_close(client, &err);
    if (st != OMPRPC_STATUS_OK) rc = fail("close", st, err);
    omprpc_client_free(client);
    return rc;
}

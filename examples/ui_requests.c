/*
 * UI requests: prompts that make the agent ask the user something (type a value, confirm,
 * edit a text, and a kind of question this program does not know), each answered by this
 * program as a UI would.
 *
 *   ui_requests AGENT [ARG...]     `make examples` passes the fake agent
 *
 * Without an answer the agent waits, so a host either answers every request (this program),
 * or sets a headless policy (omprpc_client_set_ui_policy) that answers inside the library.
 *
 * Exits 0 when every prompt raised its question, the answer was accepted and the agent
 * finished its run; 1 otherwise.
 * Build: cc -std=c99 -Iinclude -Itests/c examples/ui_requests.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h), as in examples/demo.c */

/* How long to wait for a question or for the run to end (a real model can be slow). */
#define WAIT_MS 60000

/* Each prompt makes the fake agent ask one question of the method named next to it. */
static const char *const PROMPTS[][2] = {
    {"needs ui", "input"},
    {"needs confirm", "confirm"},
    {"needs cancel", "editor"},
    {"unknown ui", "ask"}, /* a method this program does not know: it cancels it */
};

static void report(const char *what, omprpc_status st, char *err) {
    jval *e = json_parse(err);
    const char *message = jstr(jget(e, "message"));
    fprintf(stderr, "ui_requests: %s failed: %s: %s\n", what, omprpc_status_name((int)st),
            message ? message : "(no detail)");
    json_free(e);
    omprpc_string_free(err);
}

/* {"command":[argv...],"inherit_env":true}: the agent's argv as given, this environment. */
static char *start_options(int argc, char **argv) {
    size_t cap = 64, n;
    int i;
    char *opts;
    for (i = 1; i < argc; i++) cap += strlen(argv[i]) * 6 + 3;
    opts = malloc(cap);
    if (!opts) return NULL;
    n = (size_t)sprintf(opts, "{\"command\":[");
    for (i = 1; i < argc; i++) {
        if (i > 1) opts[n++] = ',';
        n += json_quote_into(opts + n, argv[i]);
    }
    sprintf(opts + n, "],\"inherit_env\":true}");
    return opts;
}

/* Answers one UI request the way a user of this program would; 0 when the answer went out.
 * select, input and editor take a value; confirm takes yes or no; anything else is
 * cancelled, so that the agent never waits for an answer that cannot come. */
static int answer(omprpc_client *client, const jval *request) {
    const char *id = jstr(jget(request, "id"));
    const char *method = jstr(jget(request, "method"));
    const char *title = jstr(jget(request, "title"));
    const char *first_option = jstr(jat(jget(request, "options"), 0));
    char *err = NULL;
    omprpc_status st;

    if (!id || !method) {
        fprintf(stderr, "ui_requests: a UI request without an id or a method\n");
        return 1;
    }
    printf("the agent asks (%s): %s\n", method, title ? title : "(no title)");
    if (!strcmp(method, "select") && first_option) {
        /* A real UI lets the user choose. Never pick blindly: omp's own approval gate
         * (approval_mode) asks with a select whose first option is "Approve". */
        printf("  choosing %s\n", first_option);
        st = omprpc_client_ui_send_value(client, id, first_option, &err);
    } else if (!strcmp(method, "confirm")) {
        printf("  answering yes\n");
        st = omprpc_client_ui_send_confirmation(client, id, true, &err);
    } else if (!strcmp(method, "input")) {
        printf("  typing \"blue\"\n");
        st = omprpc_client_ui_send_value(client, id, "blue", &err);
    } else if (!strcmp(method, "editor")) {
        printf("  submitting an edited text\n");
        st = omprpc_client_ui_send_value(client, id, "line one\nline two\n", &err);
    } else {
        /* timed_out=false: the user declined; true tells the agent the host's own timer fired. */
        printf("  cancelling (this program has no UI for \"%s\")\n", method);
        st = omprpc_client_ui_cancel(client, id, false, &err);
    }
    if (st != OMPRPC_STATUS_OK) {
        report("answering the UI request", st, err); /* NOT_FOUND: the agent withdrew it */
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    omprpc_client *client = NULL;
    char *options, *err = NULL;
    omprpc_status st;
    size_t i;
    int rc = 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s AGENT [ARG...]\n", argv[0]);
        return 2;
    }

    /* 1. Start the agent. */
    options = start_options(argc, argv);
    if (!options) {
        fprintf(stderr, "ui_requests: out of memory\n");
        return 1;
    }
    st = omprpc_client_start(options, &client, &err);
    free(options);
    if (st != OMPRPC_STATUS_OK) {
        report("start", st, err);
        return 1;
    }

    for (i = 0; i < sizeof PROMPTS / sizeof PROMPTS[0]; i++) {
        char *request_id = NULL, *request_json = NULL, *reply = NULL;
        jval *request, *text;
        const char *method, *said;

        /* 2. Send the prompt. It returns once the agent accepted it, and the question
         *    follows. (pi accepts a prompt only after its preflight, where an extension's
         *    /command may already ask: there, serve UI requests from another thread while
         *    prompt waits.) */
        printf("> %s\n", PROMPTS[i][0]);
        st = omprpc_client_prompt(client, PROMPTS[i][0], NULL, OMPRPC_TIMEOUT_DEFAULT, &request_id, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("prompt", st, err);
            goto done;
        }
        omprpc_string_free(request_id);

        /* 3. Wait for the question. UI requests have a queue of their own; they are also
         *    delivered as ordinary extension_ui_request events, for a program that wants to
         *    handle them in its event loop. */
        st = omprpc_client_next_ui_request(client, WAIT_MS, &request_json, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("next_ui_request", st, err); /* TIMEOUT: the agent asked nothing */
            goto done;
        }
        request = json_parse(request_json);
        omprpc_string_free(request_json);
        method = jstr(jget(request, "method"));
        if (!method || strcmp(method, PROMPTS[i][1]) != 0) {
            fprintf(stderr, "ui_requests: expected a %s request, got %s\n", PROMPTS[i][1],
                    method ? method : "?");
            json_free(request);
            goto done;
        }

        /* 4. Answer it. */
        if (answer(client, request) != 0) {
            json_free(request);
            goto done;
        }
        json_free(request);

        /* 5. With its answer the agent goes on; wait until its run is over, then read what
         *    it said. */
        st = omprpc_client_wait_for_idle(client, WAIT_MS, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("wait_for_idle", st, err);
            goto done;
        }
        st = omprpc_client_request(client, "get_last_assistant_text", NULL, OMPRPC_TIMEOUT_DEFAULT,
                                   &reply, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("get_last_assistant_text", st, err);
            goto done;
        }
        text = json_parse(reply);
        omprpc_string_free(reply);
        said = jstr(jget(text, "text"));
        printf("  the agent replied: %s\n", said ? said : "(nothing)");
        if (!said) {
            fprintf(stderr, "ui_requests: the agent said nothing after the answer\n");
            json_free(text);
            goto done;
        }
        json_free(text);
    }

    /* The run's events (and the questions, as events) are still queued: nothing here needs
     * them, and close drops them. */
    printf("all %u questions answered\n", (unsigned)(sizeof PROMPTS / sizeof PROMPTS[0]));
    rc = 0;

done:
    if (client) {
        st = omprpc_client_close(client, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("close", st, err);
            rc = 1;
        }
        omprpc_client_free(client);
    }
    return rc;
}

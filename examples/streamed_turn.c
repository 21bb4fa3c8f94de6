/*
 * A streamed turn: start an agent, send one prompt, print the reply as it streams in, then
 * print how the turn ended.
 *
 *   streamed_turn AGENT [ARG...]     `make examples` passes the fake agent
 *
 * The events are fed to a summarizer (omprpc_summarizer_*), which turns raw agent events
 * into a few kinds of items ("text", "reasoning", "retry", "turn_end", …) and keeps the turn's
 * summary, so the program never has to know the shape of every agent event. When the prompt
 * is done is the library's word (a prompt_complete event): a run's end is not always the end
 * of the prompt — the agent may retry a failed request, or compact and try again.
 *
 * Exits 0 when text streamed and the turn completed, 1 otherwise.
 * Build: cc -std=c99 -Iinclude -Itests/c examples/streamed_turn.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h), as in examples/demo.c */

/* The fake agent answers this prompt with some reasoning, then text; any prompt works with
 * a real agent. */
#define PROMPT "thinking"
/* How long to wait for the next event before giving up (a real model can be slow). */
#define EVENT_TIMEOUT_MS 60000

/* Prints what failed, with the library's own message, and frees the error. */
static void report(const char *what, omprpc_status st, char *err) {
    jval *e = json_parse(err);
    const char *message = jstr(jget(e, "message"));
    fprintf(stderr, "streamed_turn: %s failed: %s: %s\n", what, omprpc_status_name((int)st),
            message ? message : "(no detail)");
    json_free(e);
    omprpc_string_free(err);
}

/* The start options: {"command":[argv...],"inherit_env":true,"prompt_complete_events":true}.
 * The agent's argv is used as given; inherit_env passes it this process's environment (PATH,
 * HOME, API keys); prompt_complete_events makes the library say when a prompt is done. */
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
    sprintf(opts + n, "],\"inherit_env\":true,\"prompt_complete_events\":true}");
    return opts;
}

/* Prints the items one event produced. */
static void show_items(const char *items_json, int *text_chunks) {
    jval *items = json_parse(items_json);
    size_t i;
    for (i = 0; i < jlen(items); i++) {
        const jval *item = jat(items, i);
        const char *kind = jstr(jget(item, "kind"));
        const char *text = jstr(jget(item, "text"));
        if (!kind) continue;
        if (!strcmp(kind, "text") && text) {
            fputs(text, stdout);
            (*text_chunks)++;
        } else if (!strcmp(kind, "reasoning") && text) {
            printf("(thinking: %s)\n", text);
        } else if (!strcmp(kind, "retry")) {
            /* the request failed and the agent will try again by itself after a delay */
            const char *error = jstr(jget(item, "error"));
            printf("\n(failed: %s; retry %.0f of %.0f in %.0f ms)\n", error ? error : "?", jnum(jget(item, "attempt"), NULL),
                   jnum(jget(item, "maxAttempts"), NULL), jnum(jget(item, "delayMs"), NULL));
        } else if (!strcmp(kind, "retry_end") && jbool(jget(item, "success")) == 0) {
            const char *error = jstr(jget(item, "finalError"));
            printf("\n(the agent gave up retrying: %s)\n", error ? error : "?");
        } else if (!strcmp(kind, "compaction")) {
            printf("\n(the agent compacted its context: %s%s)\n", jstr(jget(item, "reason")) ? jstr(jget(item, "reason")) : "?",
                   jbool(jget(item, "willRetry")) == 1 ? ", and tries again" : "");
        }
        fflush(stdout); /* show each piece as soon as it arrives */
    }
    json_free(items);
}

/* 1 when `event_json` is the prompt_complete of the prompt `request_id`; its outcome into buf. */
static int completes(const char *event_json, const char *request_id, char *outcome, size_t cap) {
    jval *ev = json_parse(event_json);
    const char *type = jstr(jget(ev, "type")), *id = jstr(jget(ev, "requestId"));
    int done = type && !strcmp(type, "prompt_complete") && id && !strcmp(id, request_id);
    if (done) snprintf(outcome, cap, "%s", jstr(jget(ev, "outcome")) ? jstr(jget(ev, "outcome")) : "?");
    json_free(ev);
    return done;
}

int main(int argc, char **argv) {
    omprpc_client *client = NULL;
    omprpc_summarizer *summarizer = NULL;
    char *options, *err = NULL, *request_id = NULL, *summary_json = NULL, outcome[32] = "";
    jval *summary = NULL;
    omprpc_status st;
    int text_chunks = 0, prompt_done = 0, rc = 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s AGENT [ARG...]\n", argv[0]);
        return 2;
    }

    /* 1. Start the agent. start returns once the agent is ready for commands. */
    options = start_options(argc, argv);
    if (!options) {
        fprintf(stderr, "streamed_turn: out of memory\n");
        return 1;
    }
    st = omprpc_client_start(options, &client, &err);
    free(options);
    if (st != OMPRPC_STATUS_OK) {
        report("start", st, err);
        return 1;
    }

    /* 2. A summarizer for this turn (NULL: no options). */
    st = omprpc_summarizer_new(NULL, &summarizer, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("summarizer_new", st, err);
        goto done;
    }

    /* 3. Send the prompt. It returns when the agent accepted it; the run itself arrives as
     *    events. The request id names the prompt in its prompt_complete event; ours to free. */
    printf("> %s\n", PROMPT);
    st = omprpc_client_prompt(client, PROMPT, NULL, OMPRPC_TIMEOUT_DEFAULT, &request_id, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("prompt", st, err);
        goto done;
    }

    /* 4. Take events one by one until the prompt is complete. Each event is JSON, owned by us.
     *    Not at the first agent_end: after a failed request the agent may retry (pi, omp), or
     *    compact its context and try again; the library knows when it will not go on. */
    while (!prompt_done) {
        char *event = NULL, *items = NULL;
        st = omprpc_client_next_event(client, EVENT_TIMEOUT_MS, &event, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("next_event", st, err); /* TIMEOUT: nothing came; CLOSED: the agent is gone */
            goto done;
        }
        prompt_done = completes(event, request_id, outcome, sizeof outcome);
        st = omprpc_summarizer_feed(summarizer, event, &items, &err);
        omprpc_string_free(event);
        if (st != OMPRPC_STATUS_OK) {
            report("summarizer_feed", st, err);
            goto done;
        }
        show_items(items, &text_chunks);
        omprpc_string_free(items);
    }
    printf("\n");

    /* 5. The outcome: how the prompt ended ("agent_end", "agent_settled", "aborted", …) and the
     *    summary of everything fed (text, stop reason, attempts, tool calls, usage). */
    st = omprpc_summarizer_summary(summarizer, &summary_json, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("summarizer_summary", st, err);
        goto done;
    }
    summary = json_parse(summary_json);
    {
        int have_tokens = 0;
        double tokens = jnum(jpath(summary, "usage.totalTokens"), &have_tokens);
        const char *final_text = jstr(jget(summary, "finalText"));
        const char *stop = jstr(jget(summary, "stopReason"));
        printf("outcome: %s, stop reason %s, %.0f attempt(s), %d text chunk(s), %.0f tokens\n", outcome,
               stop ? stop : "(none)", jnum(jget(summary, "attempts"), NULL), text_chunks, have_tokens ? tokens : 0.0);
        printf("final text: %s\n", final_text ? final_text : "(none)");
        /* What this example promises: text streamed, and the turn completed. */
        if (text_chunks == 0 || jbool(jget(summary, "complete")) != 1 || !final_text) {
            fprintf(stderr, "streamed_turn: the turn did not stream text to completion\n");
            goto done;
        }
    }
    rc = 0;

done:
    omprpc_string_free(request_id);
    json_free(summary);
    omprpc_string_free(summary_json);
    omprpc_summarizer_free(summarizer);
    /* close stops the agent (stdin EOF, then signals to its process group; on Windows, its job
     * object is ended) and reports how that went; free releases the handle (and would close it
     * too). */
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

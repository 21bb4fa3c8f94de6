/*
 * Host tools from an event loop: this program offers the agent a tool of its own
 * ("echo_host"), sends a prompt, then waits on the client's event descriptor with poll(2) —
 * as an application with its own loop (epoll, libuv, a GUI toolkit) would; on Windows on its
 * event HANDLE with WaitForSingleObject — and answers each host_tool_call as it arrives, until
 * the run ends.
 *
 *   host_tools_event_loop AGENT [ARG...]     `make examples` passes the fake agent
 *
 * Exits 0 when the agent called the tool, got the answer and finished its run; 1 otherwise.
 * Build: cc -std=c99 -Iinclude -Itests/c examples/host_tools_event_loop.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <poll.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h), as in examples/demo.c */

/* The fake agent calls echo_host({"message":"hello"}) when it gets this prompt. */
#define PROMPT "needs host tool"
/* How long the loop waits for the agent before giving up (a real model can be slow). */
#define WAIT_MS 60000

/* The tool, as the agent will see it: a name, a description for the model, and a JSON
 * Schema for its arguments. */
#define ECHO_TOOL                                                                          \
    "{\"name\":\"echo_host\",\"description\":\"Echoes a message back, from the host\","   \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}}," \
    "\"required\":[\"message\"]}}"

/* What the loop waits on: the client's event descriptor on Unix (poll(2) here; epoll, libuv
 * or a GUI toolkit's loop alike), its event HANDLE on Windows (WaitForSingleObject here;
 * WaitForMultipleObjects or MsgWaitForMultipleObjects alike). Either is the client's: never
 * read, reset or close it. It is ready while events are queued, and once the client closed. */
#ifdef _WIN32
typedef HANDLE event_source;

static omprpc_status get_event_source(omprpc_client *client, event_source *out, char **err) {
    void *handle = NULL;
    omprpc_status st = omprpc_client_event_handle(client, &handle, err);
    *out = (HANDLE)handle;
    return st;
}

/* 1: ready, 0: nothing within `ms`, -1: the wait failed. */
static int wait_ready(event_source source, int ms) {
    DWORD r = WaitForSingleObject(source, (DWORD)ms);
    return r == WAIT_OBJECT_0 ? 1 : r == WAIT_TIMEOUT ? 0 : -1;
}
#else
typedef int event_source;

static omprpc_status get_event_source(omprpc_client *client, event_source *out, char **err) {
    return omprpc_client_event_fd(client, out, err);
}

static int wait_ready(event_source source, int ms) {
    struct pollfd pfd;
    pfd.fd = source;
    pfd.events = POLLIN;
    return poll(&pfd, 1, ms);
}
#endif

static void report(const char *what, omprpc_status st, char *err) {
    jval *e = json_parse(err);
    const char *message = jstr(jget(e, "message"));
    fprintf(stderr, "host_tools_event_loop: %s failed: %s: %s\n", what, omprpc_status_name((int)st),
            message ? message : "(no detail)");
    json_free(e);
    omprpc_string_free(err);
}

/* The start options: the agent's argv as given, this process's environment, and the host
 * tools. Registering them at start works on omp and on pi (where a bridge extension carries
 * them); on omp, omprpc_client_set_host_tools can also change them later. */
static char *start_options(int argc, char **argv) {
    size_t cap = 128 + strlen(ECHO_TOOL), n;
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
    sprintf(opts + n, "],\"inherit_env\":true,\"host_tools\":[" ECHO_TOOL "]}");
    return opts;
}

/* Runs the tool for one host_tool_call event and sends the result back. Returns 0 on
 * success. The answer may come from any thread, at any later time; here it is immediate. */
static int answer_tool_call(omprpc_client *client, const jval *call) {
    const char *call_id = jstr(jget(call, "id"));
    const char *tool = jstr(jget(call, "toolName"));
    const char *message = jpath_str(call, "arguments.message");
    char *quoted, *result, *err = NULL;
    omprpc_status st;

    if (!call_id) {
        fprintf(stderr, "host_tools_event_loop: a host_tool_call without an id\n");
        return 1;
    }
    printf("host tool call %s: %s(message=%s)\n", call_id, tool ? tool : "?", message ? message : "(none)");

    /* Optional: progress while the tool works (the agent shows it as a partial result). */
    st = omprpc_client_host_tool_update(client, call_id, "\"echoing...\"", &err);
    if (st != OMPRPC_STATUS_OK) {
        report("host_tool_update", st, err);
        return 1;
    }

    /* The result: {"content":[{"type":"text","text":…}]} (a bare JSON string works too).
     * The text comes from the model, so it is quoted as JSON, never pasted in as is. */
    quoted = json_quote(message ? message : "");
    result = quoted ? malloc(strlen(quoted) + 64) : NULL;
    if (!result) {
        free(quoted);
        fprintf(stderr, "host_tools_event_loop: out of memory\n");
        return 1;
    }
    sprintf(result, "{\"content\":[{\"type\":\"text\",\"text\":%s}]}", quoted);
    free(quoted);
    st = omprpc_client_host_tool_result(client, call_id, result, false, &err);
    free(result);
    if (st == OMPRPC_STATUS_CANCELLED) {
        /* The agent gave up on the call (e.g. an abort) before the answer: not an error. */
        printf("  the agent cancelled %s first\n", call_id);
        omprpc_string_free(err);
        return 0;
    }
    if (st != OMPRPC_STATUS_OK) {
        report("host_tool_result", st, err);
        return 1;
    }
    printf("  answered %s\n", call_id);
    return 0;
}

int main(int argc, char **argv) {
    omprpc_client *client = NULL;
    char *options, *err = NULL, *request_id = NULL;
    omprpc_status st;
    event_source source;
    int calls_answered = 0, results_seen = 0, run_over = 0, rc = 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s AGENT [ARG...]\n", argv[0]);
        return 2;
    }

    /* 1. Start the agent with the tool registered. */
    options = start_options(argc, argv);
    if (!options) {
        fprintf(stderr, "host_tools_event_loop: out of memory\n");
        return 1;
    }
    st = omprpc_client_start(options, &client, &err);
    free(options);
    if (st != OMPRPC_STATUS_OK) {
        report("start", st, err);
        return 1;
    }

    /* 2. What to wait on (see event_source above). */
    st = get_event_source(client, &source, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("event source", st, err);
        goto done;
    }

    /* 3. Send the prompt; the run (and the tool call) arrives as events. */
    printf("> %s\n", PROMPT);
    st = omprpc_client_prompt(client, PROMPT, NULL, OMPRPC_TIMEOUT_DEFAULT, &request_id, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("prompt", st, err);
        goto done;
    }
    omprpc_string_free(request_id);

    /* 4. The event loop. A real application would wait on its own descriptors (handles) too. */
    while (!run_over) {
        int ready = wait_ready(source, WAIT_MS);
        if (ready < 0) {
            fprintf(stderr, "host_tools_event_loop: waiting for events failed\n");
            goto done;
        }
        if (ready == 0) {
            fprintf(stderr, "host_tools_event_loop: no event for %d ms\n", WAIT_MS);
            goto done;
        }
        /* Ready: take everything queued without blocking (timeout 0), then wait again. */
        for (;;) {
            char *event_json = NULL;
            jval *event;
            const char *type;
            st = omprpc_client_next_event(client, 0, &event_json, &err);
            if (st == OMPRPC_STATUS_TIMEOUT) { /* the queue is empty */
                omprpc_string_free(err);
                err = NULL;
                break;
            }
            if (st != OMPRPC_STATUS_OK) { /* CLOSED: the agent went away */
                report("next_event", st, err);
                goto done;
            }
            event = json_parse(event_json);
            omprpc_string_free(event_json);
            type = jstr(jget(event, "type"));
            if (type && !strcmp(type, "host_tool_call")) {
                if (answer_tool_call(client, event) != 0) {
                    json_free(event);
                    goto done;
                }
                calls_answered++;
            } else if (type && !strcmp(type, "host_tool_cancel")) {
                const char *target = jstr(jget(event, "targetId"));
                printf("the agent cancelled host call %s\n", target ? target : "?");
            } else if (type && !strcmp(type, "tool_execution_end")) {
                const char *tool = jstr(jget(event, "toolName"));
                printf("the agent got the result of %s\n", tool ? tool : "?");
                results_seen++;
            } else if (type && !strcmp(type, "agent_end") && jbool(jget(event, "isTerminal")) != 0) {
                run_over = 1; /* isTerminal:false would mean the run goes on */
            }
            json_free(event);
        }
    }

    /* What this example promises: the agent called the host tool, got the answer, and its
     * run finished. */
    printf("run over: %d host tool call(s) answered\n", calls_answered);
    if (calls_answered == 0 || results_seen == 0) {
        fprintf(stderr, "host_tools_event_loop: the agent %s\n",
                calls_answered == 0 ? "never called the host tool" : "never reported the tool's result");
        goto done;
    }
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

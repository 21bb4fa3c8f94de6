/*
 * The policy gate over pi's own tools (bash, read, write, …). Before pi runs one of them,
 * the bridge extension omprpc loads into pi asks the library, and the tool runs only if the
 * gate allows it; a blocked tool gives the model the reason as the tool's result. The gate
 * decides either by rules given at start, or by asking this program (a policy_eval event,
 * answered with omprpc_client_policy_verdict). It fails closed: a question nobody answers
 * in time blocks the tool.
 *
 *   policy_gate AGENT [ARG...]     `make examples` passes the fake agent as pi (--flavor pi)
 *
 * Part 1 gates with rules (read allowed, bash blocked); part 2 asks this program, which
 * allows read and denies bash. Each part sends two prompts, and each prompt makes the model
 * call one tool; the program watches how the call ends (tool_execution_end).
 *
 * Exits 0 when both gates allowed read and blocked bash, and the host was told; 1 otherwise.
 * Build: cc -std=c99 -Iinclude -Itests/c examples/policy_gate.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h), as in examples/demo.c */

/* How long to wait for the next event before giving up (a real model can be slow). */
#define EVENT_TIMEOUT_MS 60000

/* The prompts. With a real pi any request that makes the model use the tool will do ("show
 * me README.md"); the fake agent has no model, and "gated TOOL ARGS" tells it which tool call
 * its pretend model makes. */
#define READ_PROMPT "gated read {\"path\":\"README.md\"}"
#define BASH_PROMPT "gated bash {\"command\":\"rm -rf build\"}"

/* Rules: the library answers by itself, without a round trip to this program. Tools in
 * neither list get the default ("block" unless said otherwise). */
#define RULES_POLICY                                                                        \
    "{\"mode\":\"rules\",\"allow\":[\"read\",\"ls\"],"                                      \
    "\"block\":{\"bash\":\"no shell commands in this example\"},\"default\":\"block\"}"
/* Host mode: every question is a policy_eval event for this program; timeout_ms is how long
 * the gate waits for a verdict before it blocks the tool. */
#define HOST_POLICY "{\"mode\":\"host\",\"timeout_ms\":10000}"

/* How one prompt's tool call went. */
typedef struct {
    int ended;      /* a tool_execution_end arrived */
    int is_error;   /* it said isError: blocked (or the tool failed) */
    int asked;      /* policy_eval questions this program answered */
    int host_told;  /* tool_blocked events: the library's note of a blocked call */
} outcome;

static void report(const char *what, omprpc_status st, char *err) {
    jval *e = json_parse(err);
    const char *message = jstr(jget(e, "message"));
    fprintf(stderr, "policy_gate: %s failed: %s: %s\n", what, omprpc_status_name((int)st),
            message ? message : "(no detail)");
    json_free(e);
    omprpc_string_free(err);
}

/* Starts the agent as pi with the given tool_policy. The gate lives in the bridge
 * extension, so start fails (rather than run ungated) unless pi loaded it. */
static omprpc_client *start_gated(int argc, char **argv, const char *policy) {
    omprpc_client *client = NULL;
    char *opts, *err = NULL;
    size_t cap = 128 + strlen(policy), n;
    omprpc_status st;
    int i;
    for (i = 1; i < argc; i++) cap += strlen(argv[i]) * 6 + 3;
    opts = malloc(cap);
    if (!opts) {
        fprintf(stderr, "policy_gate: out of memory\n");
        return NULL;
    }
    n = (size_t)sprintf(opts, "{\"command\":[");
    for (i = 1; i < argc; i++) {
        if (i > 1) opts[n++] = ',';
        n += json_quote_into(opts + n, argv[i]);
    }
    sprintf(opts + n, "],\"flavor\":\"pi\",\"inherit_env\":true,\"tool_policy\":%s}", policy);
    st = omprpc_client_start(opts, &client, &err);
    free(opts);
    if (st != OMPRPC_STATUS_OK) {
        report("start", st, err);
        return NULL;
    }
    return client;
}

/* This program's policy, for host mode: reading is fine, nothing else is. */
static int host_allows(const char *tool, const char **reason) {
    if (tool && !strcmp(tool, "read")) return 1;
    *reason = "this program allows only read";
    return 0;
}

/* Answers one policy_eval question. pi is paused on it: the tool neither runs nor fails
 * until the verdict (or the gate's timeout) comes. Returns 0 when the verdict was given. */
static int answer_question(omprpc_client *client, const jval *question) {
    const char *id = jstr(jget(question, "id"));
    const char *tool = jstr(jget(question, "toolName"));
    const char *reason = "";
    char *err = NULL;
    int allow = host_allows(tool, &reason);
    omprpc_status st;
    printf("  the gate asks: may pi run %s? -> %s\n", tool ? tool : "?", allow ? "allow" : "deny");
    st = omprpc_client_policy_verdict(client, id ? id : "", allow, reason, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("policy_verdict", st, err);
        return 1;
    }
    return 0;
}

/* Prints the text of a tool result: {"content":[{"type":"text","text":…}, …]}. */
static void print_result_text(const jval *result) {
    const jval *content = jget(result, "content");
    size_t i;
    for (i = 0; i < jlen(content); i++) {
        const char *text = jstr(jget(jat(content, i), "text"));
        if (text) printf("%s", text);
    }
}

/* Sends one prompt and takes its events until the run ends (pi's agent_end), answering the
 * gate's questions on the way when the host decides. Returns 0 when the run ended.
 * The question and the tool_blocked note come from the bridge, the rest from pi's output:
 * two channels, so their order among pi's own events (tool_execution_start, …) may vary. */
static int run_prompt(omprpc_client *client, const char *prompt, int host_decides, outcome *out) {
    char *err = NULL, *request_id = NULL;
    omprpc_status st;
    printf("> %s\n", prompt);
    st = omprpc_client_prompt(client, prompt, NULL, OMPRPC_TIMEOUT_DEFAULT, &request_id, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("prompt", st, err);
        return 1;
    }
    omprpc_string_free(request_id);

    for (;;) {
        char *event_json = NULL;
        jval *event;
        const char *type;
        int done = 0, failed = 0;
        st = omprpc_client_next_event(client, EVENT_TIMEOUT_MS, &event_json, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("next_event", st, err); /* TIMEOUT: nothing came; CLOSED: the agent is gone */
            return 1;
        }
        event = json_parse(event_json);
        omprpc_string_free(event_json);
        type = jstr(jget(event, "type"));
        if (!type) {
            /* not an event this program looks at */
        } else if (!strcmp(type, "policy_eval")) {
            /* Only in host mode: with rules the library never asks. */
            if (!host_decides || answer_question(client, event) != 0) failed = 1;
            out->asked++;
        } else if (!strcmp(type, "tool_blocked")) {
            /* Whoever blocked it, the host hears about every blocked call (a turn's summary
             * marks that tool call "blocked" too). */
            const char *tool = jstr(jget(event, "toolName"));
            printf("  the host is told: %s was blocked\n", tool ? tool : "?");
            out->host_told++;
        } else if (!strcmp(type, "tool_execution_end")) {
            /* A blocked call ends like a failed one, with the reason as its result: that is
             * what the model reads, and it carries on from there. */
            const char *tool = jstr(jget(event, "toolName"));
            out->ended = 1;
            out->is_error = jbool(jget(event, "isError")) == 1;
            printf("  %s %s; the model reads: ", tool ? tool : "?", out->is_error ? "was blocked" : "ran");
            print_result_text(jget(event, "result"));
            printf("\n");
        } else if (!strcmp(type, "agent_end")) {
            done = 1; /* pi's run is over: the model has answered after the tool call */
        }
        json_free(event);
        if (failed) return 1;
        if (done) return 0;
    }
}

/* Runs one gate: read must run, bash must be blocked, and the host must be told of the block
 * (and, in host mode, asked about both). Returns 0 when all of that happened. */
static int run_gate(int argc, char **argv, const char *policy, int host_decides) {
    omprpc_client *client = start_gated(argc, argv, policy);
    outcome read_call = {0, 0, 0, 0}, bash_call = {0, 0, 0, 0};
    char *err = NULL;
    omprpc_status st;
    int rc = 1;
    if (!client) return 1;

    if (run_prompt(client, READ_PROMPT, host_decides, &read_call) != 0) goto done;
    if (run_prompt(client, BASH_PROMPT, host_decides, &bash_call) != 0) goto done;
    if (!read_call.ended || read_call.is_error || !bash_call.ended || !bash_call.is_error) {
        fprintf(stderr, "policy_gate: expected read to run and bash to be blocked\n");
        goto done;
    }
    if (read_call.host_told != 0 || bash_call.host_told != 1) {
        fprintf(stderr, "policy_gate: expected one tool_blocked event, for bash\n");
        goto done;
    }
    if (host_decides && (read_call.asked != 1 || bash_call.asked != 1)) {
        fprintf(stderr, "policy_gate: expected one policy_eval question per tool call\n");
        goto done;
    }
    rc = 0;

done:
    st = omprpc_client_close(client, &err);
    if (st != OMPRPC_STATUS_OK) {
        report("close", st, err);
        rc = 1;
    }
    omprpc_client_free(client);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s AGENT [ARG...]\n", argv[0]);
        return 2;
    }
    printf("== 1. the gate decides by rules: %s\n", RULES_POLICY);
    if (run_gate(argc, argv, RULES_POLICY, 0) != 0) return 1;
    printf("== 2. the gate asks this program: %s\n", HOST_POLICY);
    if (run_gate(argc, argv, HOST_POLICY, 1) != 0) return 1;
    printf("both gates let read run and blocked bash\n");
    return 0;
}

/*
 * The policy gate over pi's own tools (bash, read, write, …). Before pi runs one of them,
 * the bridge extension omprpc loads into pi asks the library, and the tool runs only if the
 * gate allows it. The gate decides either by rules given at start, or by asking this
 * program (a policy_eval event, answered with omprpc_client_policy_verdict). It fails
 * closed: a question nobody answers in time blocks the tool.
 *
 *   policy_gate AGENT [ARG...]     `make examples` passes the fake agent as pi (--flavor pi)
 *
 * Part 1 gates with rules (read allowed, bash blocked); part 2 asks this program, which
 * allows read and denies bash.
 *
 * The fake agent loads the extension (start waits for its hello) but has no model, so it
 * never calls a tool. This program therefore also plays pi's side: the functions under
 * "pi's side" at the end send the very question the extension sends when pi's model calls
 * a tool. With a real pi that part goes away — the model's tool calls raise the questions.
 *
 * Exits 0 when both gates allowed read and blocked bash, and the host was told; 1 otherwise.
 * Build: cc -std=c99 -Iinclude -Itests/c examples/policy_gate.c -Ltarget/debug -lomprpc
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "omprpc.h"
#include "json.h" /* a small JSON reader (tests/c/json.h), as in examples/demo.c */

#define WAIT_MS 30000

/* Rules: the library answers by itself, without a round trip to this program. Tools in
 * neither list get the default ("block" unless said otherwise). */
#define RULES_POLICY                                                                        \
    "{\"mode\":\"rules\",\"allow\":[\"read\",\"ls\"],"                                      \
    "\"block\":{\"bash\":\"no shell commands in this example\"},\"default\":\"block\"}"
/* Host mode: every question is a policy_eval event for this program; timeout_ms is how long
 * the gate waits for a verdict before it blocks the tool. */
#define HOST_POLICY "{\"mode\":\"host\",\"timeout_ms\":10000}"

/* pi's side (defined at the end): a connection to the bridge, as the extension has. */
typedef struct {
    int fd;
    char *token, *client_id;
    int asked;
} pi_side;
static int pi_connect(omprpc_client *client, pi_side *pi);
static int pi_ask(pi_side *pi, const char *tool, const char *args_json);
static int pi_read_verdict(pi_side *pi, int *blocked, char *reason, size_t reason_cap);
static void pi_disconnect(pi_side *pi);

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

/* Takes events until one of `type` arrives (NULL after `timeout_ms`, or on an error). */
static jval *wait_for_event(omprpc_client *client, const char *type, int64_t timeout_ms) {
    for (;;) {
        char *event_json = NULL, *err = NULL;
        jval *event;
        const char *t;
        omprpc_status st = omprpc_client_next_event(client, timeout_ms, &event_json, &err);
        if (st != OMPRPC_STATUS_OK) {
            report("next_event", st, err);
            return NULL;
        }
        event = json_parse(event_json);
        omprpc_string_free(event_json);
        t = jstr(jget(event, "type"));
        if (t && !strcmp(t, type)) return event;
        json_free(event); /* any other event: not what this waits for */
    }
}

/* This program's policy, for host mode: reading is fine, nothing else is. */
static int host_allows(const char *tool, const char **reason) {
    if (tool && !strcmp(tool, "read")) return 1;
    *reason = "this program allows only read";
    return 0;
}

/* Answers one policy_eval event; returns 1 if it allowed the tool, 0 if it denied it, -1 if
 * no question came or the verdict could not be given. */
static int answer_one_question(omprpc_client *client) {
    jval *question = wait_for_event(client, "policy_eval", WAIT_MS);
    const char *id, *tool, *reason = NULL;
    char *err = NULL;
    omprpc_status st;
    int allow;
    if (!question) return -1;
    id = jstr(jget(question, "id"));
    tool = jstr(jget(question, "toolName"));
    allow = host_allows(tool, &reason);
    printf("  policy_eval %s: %s -> %s\n", id ? id : "?", tool ? tool : "?", allow ? "allow" : "deny");
    /* The verdict goes back to the extension at once; pi runs the tool or reports it blocked. */
    st = omprpc_client_policy_verdict(client, id ? id : "", allow, reason, &err);
    json_free(question);
    if (st != OMPRPC_STATUS_OK) {
        report("policy_verdict", st, err); /* NOT_FOUND: the gate's timeout had already blocked it */
        return -1;
    }
    return allow;
}

/* One tool call through the gate: pi asks, the gate (rules, or this program) decides, pi
 * gets the verdict. Returns 1 allowed, 0 blocked, -1 on failure. */
static int call_tool(omprpc_client *client, pi_side *pi, const char *tool, const char *args_json,
                     int host_decides) {
    char reason[256];
    int blocked;
    printf("pi's model calls %s %s\n", tool, args_json);
    if (pi_ask(pi, tool, args_json) != 0) return -1;
    if (host_decides && answer_one_question(client) < 0) return -1;
    if (pi_read_verdict(pi, &blocked, reason, sizeof reason) != 0) return -1;
    if (blocked)
        printf("  -> blocked: %s\n", reason);
    else
        printf("  -> allowed: pi runs %s\n", tool);
    return !blocked;
}

/* Runs one gate: read must be allowed, bash blocked, and a tool_blocked event must tell the
 * host which call was blocked and why. Returns 0 when all of that happened. */
static int run_gate(int argc, char **argv, const char *policy, int host_decides) {
    omprpc_client *client = start_gated(argc, argv, policy);
    pi_side pi = {-1, NULL, NULL, 0};
    jval *blocked_event = NULL;
    char *err = NULL;
    omprpc_status st;
    int rc = 1, read_ok, bash_ok;
    if (!client) return 1;
    if (pi_connect(client, &pi) != 0) goto done;

    read_ok = call_tool(client, &pi, "read", "{\"path\":\"README.md\"}", host_decides);
    bash_ok = call_tool(client, &pi, "bash", "{\"command\":\"rm -rf build\"}", host_decides);
    if (read_ok != 1 || bash_ok != 0) {
        fprintf(stderr, "policy_gate: expected read allowed and bash blocked\n");
        goto done;
    }

    /* Whoever blocked it, the host hears about every blocked call (a turn's summary marks
     * that tool call "blocked" too). */
    blocked_event = wait_for_event(client, "tool_blocked", WAIT_MS);
    if (!blocked_event) goto done;
    {
        const char *tool = jstr(jget(blocked_event, "toolName"));
        const char *reason = jstr(jget(blocked_event, "reason"));
        printf("  the host is told: tool_blocked %s (%s)\n", tool ? tool : "?", reason ? reason : "?");
    }
    rc = 0;

done:
    json_free(blocked_event);
    pi_disconnect(&pi);
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
    printf("both gates allowed read and blocked bash\n");
    return 0;
}

/* ---- pi's side -------------------------------------------------------------------------
 * What the bridge extension does inside pi, reduced to the gate's question. A program using
 * a real pi never writes this. The extension omprpc generates for a client is named in the
 * agent's argv (`--extension PATH`); one line of it, `const CONFIG = {…};`, holds the
 * bridge's socket, the client id and the per-client token every request must carry. */

static int pi_connect(omprpc_client *client, pi_side *pi) {
    char *info_json = NULL, *err = NULL, *line = NULL;
    const char *ext_path = NULL, *socket_path;
    size_t cap = 0, i;
    jval *info, *argv, *config = NULL;
    struct sockaddr_un addr;
    FILE *f = NULL;
    omprpc_status st = omprpc_client_info(client, &info_json, &err);
    int rc = 1;
    if (st != OMPRPC_STATUS_OK) {
        report("info", st, err);
        return 1;
    }
    info = json_parse(info_json);
    omprpc_string_free(info_json);
    argv = jget(info, "argv");
    for (i = 0; i + 1 < jlen(argv); i++) {
        const char *word = jstr(jat(argv, i));
        if (word && !strcmp(word, "--extension")) ext_path = jstr(jat(argv, i + 1));
    }
    if (ext_path) f = fopen(ext_path, "r");
    while (f && getline(&line, &cap, f) > 0) {
        if (strncmp(line, "const CONFIG = ", 15) == 0) {
            char *end = strrchr(line, ';');
            if (end) *end = '\0';
            config = json_parse(line + 15);
            break;
        }
    }
    socket_path = jstr(jget(config, "socket"));
    if (!socket_path || strlen(socket_path) >= sizeof addr.sun_path || !jstr(jget(config, "token"))) {
        fprintf(stderr, "policy_gate: no bridge socket in the agent's extension (%s)\n",
                ext_path ? ext_path : "no --extension");
        goto out;
    }
    pi->token = json_quote(jstr(jget(config, "token")));
    pi->client_id = json_quote(jstr(jget(config, "client")) ? jstr(jget(config, "client")) : "");
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, socket_path);
    pi->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (pi->fd < 0 || connect(pi->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "policy_gate: connecting to the bridge: %s\n", strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free(line);
    if (f) fclose(f);
    json_free(config);
    json_free(info);
    return rc;
}

/* Sends {"kind":"policy_eval","tool","toolCallId","args","id","token","client"}. */
static int pi_ask(pi_side *pi, const char *tool, const char *args_json) {
    char frame[1024];
    int n;
    pi->asked++;
    n = snprintf(frame, sizeof frame,
                 "{\"kind\":\"policy_eval\",\"tool\":\"%s\",\"toolCallId\":\"call-%d\",\"args\":%s,"
                 "\"id\":\"q-%d\",\"token\":%s,\"client\":%s}\n",
                 tool, pi->asked, args_json, pi->asked, pi->token, pi->client_id);
    /* MSG_NOSIGNAL: a closed bridge is an error here, not a SIGPIPE. */
    if (n < 0 || (size_t)n >= sizeof frame || send(pi->fd, frame, (size_t)n, MSG_NOSIGNAL) != n) {
        fprintf(stderr, "policy_gate: sending the question to the bridge failed\n");
        return 1;
    }
    return 0;
}

/* Reads the answer line {"id","verdict":{"block":bool,"reason":"…"}}. */
static int pi_read_verdict(pi_side *pi, int *blocked, char *reason, size_t reason_cap) {
    char buf[4096];
    size_t got = 0;
    jval *reply;
    const char *why;
    while (got == 0 || buf[got - 1] != '\n') {
        struct pollfd p;
        ssize_t n;
        p.fd = pi->fd;
        p.events = POLLIN;
        if (got == sizeof buf - 1 || poll(&p, 1, WAIT_MS) != 1) {
            fprintf(stderr, "policy_gate: no verdict from the bridge\n");
            return 1;
        }
        n = read(pi->fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) {
            fprintf(stderr, "policy_gate: the bridge closed the connection\n");
            return 1;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    reply = json_parse(buf);
    *blocked = jbool(jpath(reply, "verdict.block")) == 1;
    why = jpath_str(reply, "verdict.reason");
    snprintf(reason, reason_cap, "%s", why ? why : "");
    if (jbool(jpath(reply, "verdict.block")) < 0) {
        fprintf(stderr, "policy_gate: not a verdict: %s", buf);
        json_free(reply);
        return 1;
    }
    json_free(reply);
    return 0;
}

static void pi_disconnect(pi_side *pi) {
    if (pi->fd >= 0) close(pi->fd);
    free(pi->token);
    free(pi->client_id);
    pi->fd = -1;
    pi->token = pi->client_id = NULL;
}

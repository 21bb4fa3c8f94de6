/*
 * The error table (tests/fixtures/error-table.json, issue 23 §4) through the C header: every
 * row's failure caused on the fake agent, its status (number and name) and the core's message
 * checked. The Go, Node and Python suites run the same table through their bindings.
 * OMPRPC_ERROR_TABLE names the fixture (default: the path from the repository root).
 */
#include "harness.h"

#include <stdio.h>

#define TABLE_DEFAULT "tests/fixtures/error-table.json"

static jval *h_table;

/* --- JSON text from a parsed value (the fixture's options and params) ----------------- */

typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *p = (char *)realloc(b->p, cap);
        if (!p) abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_quoted(sbuf *b, const char *s) {
    char *q = json_quote(s);
    sb_str(b, q);
    free(q);
}

static void sb_json(sbuf *b, const jval *v) {
    char num[64];
    size_t i;
    switch (v->type) {
    case J_NULL: sb_str(b, "null"); break;
    case J_BOOL: sb_str(b, v->boolean ? "true" : "false"); break;
    case J_NUM:
        snprintf(num, sizeof num, "%.17g", v->num);
        sb_str(b, num);
        break;
    case J_STR: sb_quoted(b, v->str); break;
    case J_ARR:
    case J_OBJ:
        sb_str(b, v->type == J_ARR ? "[" : "{");
        for (i = 0; i < v->n; i++) {
            if (i) sb_str(b, ",");
            if (v->type == J_OBJ) {
                sb_quoted(b, v->keys[i]);
                sb_str(b, ":");
            }
            sb_json(b, v->items[i]);
        }
        sb_str(b, v->type == J_ARR ? "]" : "}");
        break;
    }
}

/* The row's start options: {"command":[FAKE, agent_args…], "env":agent_env, options…}; an
 * options key given there (e.g. "command") replaces the default one. Free with free(). */
static char *row_options(const jval *row) {
    const jval *options = jget(row, "options"), *args = jget(row, "agent_args"), *env = jget(row, "agent_env");
    sbuf b = {NULL, 0, 0};
    size_t i;
    sb_str(&b, "{");
    if (!jget(options, "command")) {
        sb_str(&b, "\"command\":[");
        sb_quoted(&b, h_fake());
        for (i = 0; i < jlen(args); i++) {
            sb_str(&b, ",");
            sb_json(&b, jat(args, i));
        }
        sb_str(&b, "],");
    }
    sb_str(&b, "\"env\":");
    if (env) sb_json(&b, env);
    else sb_str(&b, "{}");
    for (i = 0; i < jlen(options); i++) {
        sb_str(&b, ",");
        sb_quoted(&b, options->keys[i]);
        sb_str(&b, ":");
        sb_json(&b, options->items[i]);
    }
    sb_str(&b, "}");
    return b.p;
}

/* --- the calls ------------------------------------------------------------------------ */

typedef struct {
    omprpc_client *c;
    const char *message;
} prompt_job;

static void *prompt_and_wait_job(void *arg) {
    prompt_job *job = (prompt_job *)arg;
    char *turn = NULL, *err = NULL;
    /* Ends once the foreground aborts the turn; how it ends is not the row's business. */
    omprpc_client_prompt_and_wait(job->c, job->message, NULL, WAIT_MS, &turn, &err);
    omprpc_string_free(turn);
    omprpc_string_free(err);
    return NULL;
}

/* Whether get_state says the agent is streaming (a run is open). */
static int is_streaming(omprpc_client *c) {
    char *out = NULL, *err = NULL;
    int streaming = 0;
    if (omprpc_client_request(c, "get_state", NULL, WAIT_MS, &out, &err) == OMPRPC_STATUS_OK) {
        jval *v = json_parse(out);
        streaming = jbool(jget(v, "isStreaming")) == 1;
        json_free(v);
    }
    h_strfree(&out);
    h_strfree(&err);
    return streaming;
}

/* `collect_while_prompting`: prompt_and_wait on another thread; once the agent streams, its
 * prompt was sent and its wait holds the prompt lifecycle: collect_events meets it. Then abort,
 * which ends the background wait. */
static omprpc_status collect_while_prompting(omprpc_client *c, const jval *call, char **err) {
    prompt_job job;
    pthread_t thread;
    char *out = NULL, *e = NULL;
    int64_t deadline = h_now_ms() + WAIT_MS;
    omprpc_status st;
    job.c = c;
    job.message = jstr(jget(call, "message"));
    if (pthread_create(&thread, NULL, prompt_and_wait_job, &job) != 0) return OMPRPC_STATUS_IO;
    while (!is_streaming(c) && h_now_ms() < deadline) {
    }
    st = omprpc_client_collect_events(c, WAIT_MS, &out, err);
    h_strfree(&out);
    CHECK(omprpc_client_abort(c, WAIT_MS, &e) == OMPRPC_STATUS_OK);
    h_strfree(&e);
    pthread_join(thread, NULL);
    return st;
}

/* Makes the row's call on `c`; the status, with *err set on failure. */
static omprpc_status make_call(omprpc_client *c, const jval *call, char **err) {
    const char *op = jstr(jget(call, "op"));
    char *out = NULL;
    omprpc_status st;
    if (!strcmp(op, "request") || !strcmp(op, "request_after_close")) {
        sbuf params = {NULL, 0, 0};
        if (jget(call, "params")) sb_json(&params, jget(call, "params"));
        if (!strcmp(op, "request_after_close")) CHECK(omprpc_client_close(c, NULL) == OMPRPC_STATUS_OK);
        st = omprpc_client_request(c, jstr(jget(call, "type")), params.p, OMPRPC_TIMEOUT_DEFAULT, &out, err);
        free(params.p);
    } else if (!strcmp(op, "prompt_and_wait")) {
        st = omprpc_client_prompt_and_wait(c, jstr(jget(call, "message")), NULL, WAIT_MS, &out, err);
    } else if (!strcmp(op, "host_tool_result")) {
        sbuf result = {NULL, 0, 0};
        sb_json(&result, jget(call, "result"));
        st = omprpc_client_host_tool_result(c, jstr(jget(call, "id")), result.p, false, err);
        free(result.p);
    } else if (!strcmp(op, "collect_while_prompting")) {
        st = collect_while_prompting(c, call, err);
    } else {
        h_fail(__FILE__, __LINE__, "unknown op %s in the error table", op);
        return OMPRPC_STATUS_OK;
    }
    h_strfree(&out);
    return st;
}

/* --- the table ------------------------------------------------------------------------ */

static void run_row(const jval *row) {
    const char *name = jstr(jget(row, "name")), *want_name = jstr(jget(row, "status"));
    const char *want = jstr(jget(row, "message")), *prefix = jstr(jget(row, "message_prefix"));
    const jval *call = jget(row, "call");
    int want_code = (int)jnum(jget(row, "code"), NULL);
    char *opts = row_options(row), *err = NULL;
    omprpc_client *c = NULL;
    omprpc_status st = omprpc_client_start(opts, &c, &err);
    if (call) {
        if (st != OMPRPC_STATUS_OK) {
            h_fail(__FILE__, __LINE__, "%s: start failed (%s): %s", name, h_name(st), err ? err : "");
            h_strfree(&err);
            free(opts);
            return;
        }
        st = make_call(c, call, &err);
    }
    CHECKF((int)st == want_code && !strcmp(h_name(st), want_name), "%s: status %d %s, the table says %d %s", name, (int)st,
           h_name(st), want_code, want_name);
    {
        jval *e = err ? json_parse(err) : NULL;
        const char *message = jstr(jget(e, "message")), *code = jstr(jget(e, "code"));
        int ok = 0;
        CHECKF(code && !strcmp(code, want_name), "%s: error code %s", name, code ? code : "(none)");
        CHECKF((int)jnum(jget(e, "status"), &ok) == want_code && ok, "%s: error status in %s", name, err ? err : "(no error)");
        if (want)
            CHECKF(message && !strcmp(message, want), "%s: message \"%s\", the table says \"%s\"", name, message ? message : "(none)", want);
        else
            CHECKF(message && prefix && !strncmp(message, prefix, strlen(prefix)), "%s: message \"%s\" does not start \"%s\"", name,
                   message ? message : "(none)", prefix ? prefix : "(no prefix in the table)");
        json_free(e);
    }
    h_strfree(&err);
    omprpc_client_free(c);
    free(opts);
}

static void test_every_row_fails_as_the_table_says(void) {
    const jval *rows = jget(h_table, "rows");
    size_t i;
    CHECKF(jlen(rows) >= 10, "the table has %u rows", (unsigned)jlen(rows));
    for (i = 0; i < jlen(rows); i++) run_row(jat(rows, i));
}

static jval *load_table(void) {
    const char *path = getenv("OMPRPC_ERROR_TABLE") ? getenv("OMPRPC_ERROR_TABLE") : TABLE_DEFAULT;
    static char buf[1 << 16];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open the error table %s (run from the repository root, or set OMPRPC_ERROR_TABLE)\n", path);
        exit(2);
    }
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return json_parse(buf);
}

int main(void) {
    h_init();
    h_table = load_table();
    if (!h_table) {
        fprintf(stderr, "the error table is not JSON\n");
        return 2;
    }
    RUN(test_every_row_fails_as_the_table_says);
    json_free(h_table);
    return h_summary();
}

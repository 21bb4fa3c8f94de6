/*
 * The real pi 0.73.1 and omp 18.2.3 through the C API, offline, with omprpc-fake-llm as the
 * model (the scenarios of tests/real_pi.rs and tests/real_omp.rs, short): start, a text turn,
 * a host tool answered from this program's event loop (pi: through the tool bridge; omp: its
 * own host tools, loadMode "essential"), close leaving no process. And the activity model
 * (src/client/lifecycle.rs): a queued follow_up runs before the agent is idle; steer then
 * abort a hanging stream (pi parks the steer, omp runs it by itself before it is idle); pi: an
 * extension command with no work, and a bridged host tool silent for longer than
 * turn_idle_timeout_ms.
 *
 * Not a test_*.c program (those run in shared, ASan, valgrind and TSan modes): `make
 * c-real-agents` runs it once. Environment (the Makefile's REAL_AGENT_ENV): OMPRPC_FAKE_LLM,
 * OMPRPC_PI_CLI (run by `node`), OMPRPC_OMP_CLI + OMPRPC_BUN. Unset: that agent is skipped
 * with a message; set but unusable: the test fails.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "harness.h"
#include "proc.h"

/* Every wait on a real agent: generous, a loaded 2-core machine is slow. */
#define REAL_WAIT_MS 120000

/* --- the workspace ------------------------------------------------------------------- */

/* One test's throw-away directories (HOME, the agent directory with the provider file, the
 * working directory) and its fake LLM. */
typedef struct {
    const char *agent; /* "pi" or "omp" */
    char root[256], home[300], agent_dir[300], work[300], llm_log[300];
    pid_t llm_pid;
    int llm_stdin, llm_stdout;
    int port;
} workspace;

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

static int cloexec_pipe(int fds[2]) {
    if (pipe(fds) != 0) return 0;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 1;
}

/* Starts omprpc-fake-llm (stdin held open: --exit-on-eof) and reads its port. */
static int start_fake_llm(workspace *w, const char *llm, const char *script_path) {
    int in[2], out[2];
    char line[128];
    size_t got = 0;
    int64_t deadline = h_now_ms() + 30000;
    if (!cloexec_pipe(in) || !cloexec_pipe(out)) return 0;
    w->llm_pid = fork();
    if (w->llm_pid < 0) return 0;
    if (w->llm_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(llm, llm, "--script", script_path, "--log", w->llm_log, "--exit-on-eof", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    w->llm_stdin = in[1];
    w->llm_stdout = out[0];
    while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
        struct pollfd p;
        ssize_t n;
        p.fd = w->llm_stdout;
        p.events = POLLIN;
        if (poll(&p, 1, (int)(deadline - h_now_ms() > 0 ? deadline - h_now_ms() : 0)) <= 0) break;
        n = read(w->llm_stdout, line + got, sizeof line - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
        line[got] = '\0';
    }
    line[got] = '\0';
    if (sscanf(line, "LISTENING %d", &w->port) != 1 || w->port <= 0) {
        h_fail(__FILE__, __LINE__, "the fake LLM %s said \"%s\" instead of LISTENING <port>", llm, line);
        return 0;
    }
    return 1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void ws_free(workspace *w) {
    if (w->llm_pid > 0) {
        int status;
        close(w->llm_stdin);
        close(w->llm_stdout);
        kill(w->llm_pid, SIGTERM);
        waitpid(w->llm_pid, &status, 0);
        w->llm_pid = 0;
    }
    if (w->root[0] && !(getenv("OMPRPC_KEEP_TMP") && !strcmp(getenv("OMPRPC_KEEP_TMP"), "1")))
        nftw(w->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    w->root[0] = '\0';
}

/* The workspace for `agent`: directories, the fake LLM with `script` (its rules: see
 * src/bin/omprpc-fake-llm/main.rs), the provider file written by omprpc_provider_config. */
static int ws_new(workspace *w, const char *agent, const char *llm, const char *script) {
    char path[400], opts[1200], *result = NULL, *err = NULL;
    jval *r;
    int ok;
    memset(w, 0, sizeof *w);
    w->agent = agent;
    snprintf(w->root, sizeof w->root, "/tmp/omprpc-c-real-%s-XXXXXX", agent);
    if (!mkdtemp(w->root)) {
        h_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
        w->root[0] = '\0';
        return 0;
    }
    snprintf(w->home, sizeof w->home, "%s/home", w->root);
    snprintf(w->agent_dir, sizeof w->agent_dir, "%s/agent", w->root);
    snprintf(w->work, sizeof w->work, "%s/work", w->root);
    snprintf(w->llm_log, sizeof w->llm_log, "%s/llm-requests.jsonl", w->root);
    snprintf(path, sizeof path, "%s/llm-script.json", w->root);
    if (mkdir(w->home, 0700) || mkdir(w->agent_dir, 0700) || mkdir(w->work, 0700) || !write_text(path, script)) {
        h_fail(__FILE__, __LINE__, "creating the workspace %s: %s", w->root, strerror(errno));
        return 0;
    }
    if (!start_fake_llm(w, llm, path)) return 0;
    snprintf(opts, sizeof opts,
             "{\"flavor\":\"%s\",\"dir\":\"%s\",\"providers\":{\"fake\":{"
             "\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"api\":\"openai-completions\",\"apiKey\":\"fake-key\","
             "\"compat\":{\"supportsDeveloperRole\":false,\"supportsReasoningEffort\":false},"
             "\"models\":[{\"id\":\"fake-model\",\"name\":\"Fake Model\",\"reasoning\":false,\"input\":[\"text\"],"
             "\"contextWindow\":128000,\"maxTokens\":4096}]}}}",
             agent, w->agent_dir, w->port);
    if (!CHECK_OK(omprpc_provider_config(opts, &result, &err), err)) return 0;
    r = PARSE(result);
    snprintf(path, sizeof path, "%s/%s", w->agent_dir, strcmp(agent, "pi") ? "models.yml" : "models.json");
    ok = CHECK_STR(jpath_str(r, "file"), path) && CHECK_STR(jpath_str(r, "model"), "fake/fake-model") &&
         CHECK_STR(jpath_str(r, "env.PI_CODING_AGENT_DIR"), w->agent_dir);
    json_free(r);
    h_strfree(&result);
    return ok;
}

/* Start options: pi `node <cli> --mode rpc --no-session --offline --model fake/fake-model`,
 * omp `<bun> <cli> --mode rpc --no-session --no-title --model fake/fake-model`, then `args`
 * (JSON strings joined by commas, or NULL); the workspace's environment (HOME,
 * PI_CODING_AGENT_DIR, PATH, and PI_OFFLINE=1 for pi) and working directory; `extra`: more
 * members (or NULL). Free with free(). */
static char *ws_options(const workspace *w, const char *launcher0, const char *cli, const char *args,
                        const char *extra) {
    const char *path = getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
    int pi = !strcmp(w->agent, "pi");
    char *q_l0 = json_quote(launcher0), *q_cli = json_quote(cli), *q_home = json_quote(w->home),
         *q_dir = json_quote(w->agent_dir), *q_path = json_quote(path), *q_work = json_quote(w->work);
    size_t n = strlen(q_l0) + strlen(q_cli) + strlen(q_home) + strlen(q_dir) + strlen(q_path) + strlen(q_work) +
               (extra ? strlen(extra) : 0) + (args ? strlen(args) : 0) + 512;
    char *out = (char *)malloc(n);
    snprintf(out, n,
             "{\"command\":[%s,%s,\"--mode\",\"rpc\",\"--no-session\",\"%s\",\"--model\",\"fake/fake-model\"%s%s],"
             "\"flavor\":\"%s\",\"cwd\":%s,\"env\":{\"HOME\":%s,\"PI_CODING_AGENT_DIR\":%s,\"PATH\":%s%s},"
             "\"startup_timeout_ms\":%d,\"request_timeout_ms\":60000,\"stop_grace_ms\":5000%s%s}",
             q_l0, q_cli, pi ? "--offline" : "--no-title", args ? "," : "", args ? args : "", w->agent, q_work, q_home, q_dir, q_path,
             pi ? ",\"PI_OFFLINE\":\"1\"" : "", REAL_WAIT_MS, extra ? "," : "", extra ? extra : "");
    free(q_l0);
    free(q_cli);
    free(q_home);
    free(q_dir);
    free(q_path);
    free(q_work);
    return out;
}

/* --- the scenarios -------------------------------------------------------------------- */

#define SCRIPT                                                                                          \
    "[{\"match\":\"say hello\",\"replies\":[{\"text\":\"Hello from the fake model\"}]},"                \
    "{\"match\":\"add numbers\",\"replies\":[{\"tool_call\":{\"name\":\"host_add\",\"arguments\":{\"a\":2,\"b\":3}}}," \
    "{\"text\":\"sum is {{last_tool_result}}\"}]},"                                                    \
    "{\"match\":\"hang\",\"replies\":[{\"text\":\"thinking about it\",\"hang\":true}]},"                 \
    "{\"match\":\"steer me\",\"replies\":[{\"text\":\"steered ok\"}]},"                                  \
    "{\"match\":\"slow\",\"replies\":[{\"text\":\"one two three four\",\"chunk_delay_ms\":250}]},"       \
    "{\"match\":\"follow me\",\"replies\":[{\"text\":\"followed ok\"}]},"                           \
    "{\"match\":\"big\",\"replies\":[{\"text\":\"got it\"}]}]"

/* pi: an extension command that does nothing (no run, no model call). */
#define QUIET_EXTENSION                                                                                 \
    "export default function (pi) {\n"                                                                  \
    "  pi.registerCommand(\"quiet\", { description: \"q\", handler: async () => {} });\n"               \
    "}\n"

#define HOST_ADD(load_mode)                                                                             \
    "\"host_tools\":[{\"name\":\"host_add\",\"description\":\"Add two numbers\"" load_mode ",\"parameters\":" \
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}},"       \
    "\"required\":[\"a\",\"b\"]}}]"

/* The text parts of `content` joined into buf. */
static const char *content_text(const jval *content, char *buf, size_t cap) {
    size_t i;
    buf[0] = '\0';
    for (i = 0; i < jlen(content); i++) {
        const char *s = jpath_str(jat(content, i), "text");
        if (s && strlen(buf) + strlen(s) < cap) strcat(buf, s);
    }
    return buf;
}

/* Takes every event queued now (the turns before leave theirs in the queue). */
static void drain_events(omprpc_client *c) {
    char *ev = NULL, *err = NULL;
    while (omprpc_client_next_event(c, 0, &ev, &err) == OMPRPC_STATUS_OK) h_strfree(&ev);
    h_strfree(&err);
}

static void text_turn(omprpc_client *c) {
    char *turn = NULL, *err = NULL;
    int64_t t0 = h_now_ms();
    jval *t;
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    CHECK_STR(jpath_str(t, "assistantText"), "Hello from the fake model");
    CHECK(jbool(jget(t, "agentInvoked")) == 1);
    CHECK_STR(jpath_str(t, "assistantMessage.stopReason"), "stop");
    CHECK_STR(jpath_str(jat(jget(t, "events"), 0), "type"), "agent_start");
    CHECK_STR(jpath_str(jat(jget(t, "events"), jlen(jget(t, "events")) - 1), "type"), "agent_end");
    printf("  text turn: %lld ms\n", (long long)(h_now_ms() - t0));
    json_free(t);
    h_strfree(&turn);
}

/* prompt, then this program's event loop: the host_tool_call answered with "5", the tool's
 * end, the run's terminal agent_end with the model's "sum is 5". */
static void host_tool_turn(omprpc_client *c, int bridged) {
    char *id = NULL, *err = NULL, buf[256];
    int64_t t0 = h_now_ms(), deadline = t0 + REAL_WAIT_MS;
    int got_call = 0, got_end = 0, done = 0;
    drain_events(c);
    if (!CHECK_OK(omprpc_client_prompt(c, "add numbers", NULL, REAL_WAIT_MS, &id, &err), err)) return;
    while (!done) {
        char *ev = NULL;
        jval *v;
        const char *type;
        int64_t left = deadline - h_now_ms();
        omprpc_status st = omprpc_client_next_event(c, left > 0 ? left : 0, &ev, &err);
        if (st != OMPRPC_STATUS_OK) {
            h_fail(__FILE__, __LINE__, "waiting for the host tool turn's events: %s %s (call %d, end %d)", h_name(st),
                   err ? err : "", got_call, got_end);
            h_strfree(&err);
            break;
        }
        v = PARSE(ev);
        type = jpath_str(v, "type");
        if (type && !strcmp(type, "host_tool_call")) {
            got_call++;
            CHECK_STR(jpath_str(v, "toolName"), "host_add");
            CHECK(jnum(jpath(v, "arguments.a"), NULL) == 2 && jnum(jpath(v, "arguments.b"), NULL) == 3);
            CHECKF(jbool(jget(v, "bridged")) == (bridged ? 1 : -1), "bridged: %s", ev);
            CHECK_OK(omprpc_client_host_tool_result(c, jpath_str(v, "id"), "\"5\"", false, &err), err);
        } else if (type && !strcmp(type, "tool_execution_end") && got_call) {
            got_end++;
            CHECK_STR(jpath_str(v, "toolName"), "host_add");
            CHECK(jbool(jget(v, "isError")) == 0);
            CHECK_STR(content_text(jpath(v, "result.content"), buf, sizeof buf), "5");
        } else if (type && !strcmp(type, "agent_end") && got_end) {
            const jval *msgs = jget(v, "messages");
            CHECK_STR(content_text(jpath(jat(msgs, jlen(msgs) - 1), "content"), buf, sizeof buf), "sum is 5");
            done = 1;
        }
        json_free(v);
        h_strfree(&ev);
    }
    CHECKF(got_call == 1 && got_end == 1, "host_tool_call x%d, tool_execution_end x%d", got_call, got_end);
    printf("  host tool turn (%s): %lld ms\n", bridged ? "bridged" : "native", (long long)(h_now_ms() - t0));
    h_strfree(&id);
}

/* Close, then neither the agent nor anything of its process group is left. */
static void close_leaves_no_process(omprpc_client *c) {
    char *err = NULL, *info = NULL, desc[256];
    long pid = proc_client_pid(c);
    int64_t t0 = h_now_ms();
    CHECKF(pid > 0 && proc_pid_left(pid), "the agent (pid %ld) is not running before close", pid);
    CHECK_OK(omprpc_client_close(c, &err), err);
    CHECKF(!proc_pid_left(pid), "the agent (pid %ld) is still there after close", pid);
    CHECKF(proc_group_left(pid, desc, sizeof desc) == 0, "process group %ld after close: %s", pid, desc);
    if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
        jval *v = PARSE(info);
        CHECK(jbool(jget(v, "closed")) == 1);
        json_free(v);
        h_strfree(&info);
    }
    printf("  close: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* --- the activity model ---------------------------------------------------------------- */

/* prompt_and_wait on a thread of its own (the test's thread steers, aborts, answers). */
typedef struct {
    omprpc_client *c;
    const char *message;
    omprpc_status st;
    char *turn, *err;
    pthread_t th;
} waited_turn;

static void *waited_turn_thread(void *arg) {
    waited_turn *t = (waited_turn *)arg;
    t->st = omprpc_client_prompt_and_wait(t->c, t->message, NULL, REAL_WAIT_MS, &t->turn, &t->err);
    return NULL;
}

static void waited_turn_start(waited_turn *t, omprpc_client *c, const char *message) {
    memset(t, 0, sizeof *t);
    t->c = c;
    t->message = message;
    t->st = OMPRPC_STATUS_PANIC;
    pthread_create(&t->th, NULL, waited_turn_thread, t);
}

/* Joins the thread; the turn parsed (NULL and a failure when prompt_and_wait failed). */
static jval *waited_turn_join(waited_turn *t, omprpc_client *c) {
    jval *v = NULL;
    pthread_join(t->th, NULL);
    if (t->st != OMPRPC_STATUS_OK) {
        char *stderr_text = NULL, *err = NULL;
        omprpc_client_stderr(c, &stderr_text, &err);
        h_fail(__FILE__, __LINE__, "prompt_and_wait(%s): %s %s\nstderr: %s", t->message, h_name(t->st),
               t->err ? t->err : "", stderr_text ? stderr_text : "");
        h_strfree(&stderr_text);
        h_strfree(&err);
    } else {
        v = PARSE(t->turn);
    }
    h_strfree(&t->turn);
    h_strfree(&t->err);
    return v;
}

/* Takes events until the assistant's first streamed text delta; 0 (and a failure) without one. */
static int wait_text_delta(omprpc_client *c) {
    int64_t deadline = h_now_ms() + REAL_WAIT_MS;
    for (;;) {
        int64_t left = deadline - h_now_ms();
        jval *v = h_wait_event(c, "message_update", left > 0 ? left : 0);
        int delta;
        if (!v) {
            h_fail(__FILE__, __LINE__, "no text_delta from the streaming run");
            return 0;
        }
        delta = jpath_str(v, "assistantMessageEvent.type") && !strcmp(jpath_str(v, "assistantMessageEvent.type"), "text_delta");
        json_free(v);
        if (delta) return 1;
    }
}

/* The text of the last message of the last agent_end queued now (every queued event is taken);
 * buf[0] == '\0' when there was none. */
static const char *last_agent_end_text(omprpc_client *c, char *buf, size_t cap, int *agent_ends) {
    char *ev = NULL, *err = NULL;
    buf[0] = '\0';
    *agent_ends = 0;
    while (omprpc_client_next_event(c, 0, &ev, &err) == OMPRPC_STATUS_OK) {
        jval *v = PARSE(ev);
        const char *type = jpath_str(v, "type");
        if (type && !strcmp(type, "agent_end")) {
            const jval *msgs = jget(v, "messages");
            (*agent_ends)++;
            content_text(jpath(jat(msgs, jlen(msgs) - 1), "content"), buf, cap);
        }
        json_free(v);
        h_strfree(&ev);
    }
    h_strfree(&err);
    return buf;
}

/* prompt "slow please" (a slow stream), follow_up during it: the follow-up runs in the same
 * run, and wait_for_idle returns after the run's agent_end ending "followed ok". */
static void queued_follow_up(omprpc_client *c) {
    char *id = NULL, *err = NULL, buf[256];
    int64_t t0 = h_now_ms();
    int ends;
    drain_events(c);
    if (!CHECK_OK(omprpc_client_prompt(c, "slow please", NULL, REAL_WAIT_MS, &id, &err), err)) return;
    h_strfree(&id);
    if (!wait_text_delta(c)) return;
    if (!CHECK_OK(omprpc_client_follow_up(c, "follow me", NULL, REAL_WAIT_MS, &err), err)) return;
    if (!CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err)) return;
    last_agent_end_text(c, buf, sizeof buf, &ends);
    CHECKF(ends >= 1 && !strcmp(buf, "followed ok"),
           "queued when wait_for_idle returned: %d agent_end, the last ending \"%s\"", ends, buf);
    printf("  queued follow_up: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* prompt_and_wait "hang please" (one delta, then the model hangs), steer, abort: the turn is
 * the aborted one. omp then runs the steer by itself, pi parks it. */
static jval *steer_then_abort(omprpc_client *c) {
    char *err = NULL;
    waited_turn t;
    jval *turn;
    drain_events(c);
    waited_turn_start(&t, c, "hang please");
    if (wait_text_delta(c)) {
        CHECK_OK(omprpc_client_steer(c, "steer me now", NULL, REAL_WAIT_MS, &err), err);
        CHECK_OK(omprpc_client_abort(c, REAL_WAIT_MS, &err), err);
    } else {
        CHECK_OK(omprpc_client_abort(c, REAL_WAIT_MS, &err), err); /* ends the thread's wait */
    }
    turn = waited_turn_join(&t, c);
    if (turn) {
        const jval *evs = jget(turn, "events");
        CHECK_STR(jpath_str(turn, "assistantMessage.stopReason"), "aborted");
        CHECK_STR(jpath_str(jat(evs, jlen(evs) - 1), "type"), "agent_end");
    }
    return turn;
}

/* pi: the steer stays parked; the agent is idle, wait_for_idle returns OK. */
static void pi_steer_then_abort(omprpc_client *c) {
    char *err = NULL, *state = NULL;
    int64_t t0 = h_now_ms();
    jval *turn = steer_then_abort(c);
    if (!turn) return;
    CHECK_STR(jpath_str(turn, "assistantMessage.errorMessage"), "Request was aborted");
    json_free(turn);
    CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    if (CHECK_OK(omprpc_client_get_state(c, REAL_WAIT_MS, &state, &err), err)) {
        jval *s = PARSE(state);
        CHECKF(jbool(jget(s, "isStreaming")) == 0 && jnum(jget(s, "pendingMessageCount"), NULL) == 1, "state: %s", state);
        json_free(s);
        h_strfree(&state);
    }
    printf("  steer then abort (parked): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* omp: wait_for_idle returns only after the run omp started for the steer ended: its
 * agent_end, ending with the steered reply, is already queued. */
static void omp_steer_then_abort(omprpc_client *c) {
    char *err = NULL, buf[256];
    int64_t t0 = h_now_ms();
    int ends;
    jval *turn = steer_then_abort(c);
    if (!turn) return;
    CHECK_STR(jpath_str(turn, "assistantMessage.errorMessage"), "Interrupted by user");
    json_free(turn);
    if (!CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err)) return;
    last_agent_end_text(c, buf, sizeof buf, &ends);
    CHECKF(ends >= 1 && !strcmp(buf, "steered ok"),
           "queued when wait_for_idle returned: %d agent_end, the last ending \"%s\"", ends, buf);
    printf("  steer then abort (steer run): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* pi: an extension command with no work completes prompt_and_wait without a run. */
static void pi_quiet_command(omprpc_client *c) {
    char *turn = NULL, *err = NULL;
    int64_t t0 = h_now_ms();
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "/quiet", NULL, REAL_WAIT_MS, &turn, &err), err)) {
        jval *t = PARSE(turn);
        CHECKF(jbool(jget(t, "agentInvoked")) == 0, "/quiet turn: %s", turn);
        CHECK(h_count_type(jget(t, "events"), "agent_start") == 0);
        json_free(t);
        h_strfree(&turn);
    }
    CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    printf("  /quiet: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* The host answers its bridged call after 5 s of silence, longer than turn_idle_timeout_ms
 * (4000): the idle clock stands still while pi waits on the host, the turn succeeds. */
static void *silent_host_thread(void *arg) {
    omprpc_client *c = (omprpc_client *)arg;
    char *err = NULL;
    jval *call = h_wait_event(c, "host_tool_call", REAL_WAIT_MS);
    if (!call) {
        h_fail(__FILE__, __LINE__, "no host_tool_call");
        return NULL;
    }
    h_sleep_ms(5000); /* the scenario: the host works silently */
    CHECK_OK(omprpc_client_host_tool_result(c, jpath_str(call, "id"), "\"5\"", false, &err), err);
    json_free(call);
    return NULL;
}

static void pi_silent_host_tool(omprpc_client *c) {
    pthread_t th;
    waited_turn t;
    jval *turn;
    int64_t t0 = h_now_ms();
    drain_events(c);
    pthread_create(&th, NULL, silent_host_thread, c);
    waited_turn_start(&t, c, "add numbers");
    turn = waited_turn_join(&t, c);
    pthread_join(th, NULL);
    if (turn) {
        CHECK_STR(jpath_str(turn, "assistantText"), "sum is 5");
        json_free(turn);
    }
    printf("  silent bridged host tool (5 s, idle timeout 4 s): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* omp's compaction handoff: a prompt over the compaction threshold (600 KiB of text against a
 * 128k-token window) ends its run with agent_end {isTerminal:false} and nothing after it; the
 * library asks get_state after the silence and the turn completes. Run last on its client:
 * the compaction changes the session. */
static void omp_compaction_handoff(omprpc_client *c) {
    size_t n = 600 * 1024;
    char *big = malloc(4 + n + 1), *turn = NULL, *err = NULL;
    int64_t t0 = h_now_ms();
    jval *t, *events, *last;
    size_t i, count;
    int compaction = 0;
    if (!big) {
        h_fail(__FILE__, __LINE__, "out of memory");
        return;
    }
    memcpy(big, "big ", 4);
    memset(big + 4, 'x', n);
    big[4 + n] = '\0';
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, big, NULL, REAL_WAIT_MS, &turn, &err), err)) {
        t = PARSE(turn);
        events = jget(t, "events");
        count = jlen(events);
        for (i = 0; i < count; i++) {
            const char *type = jpath_str(jat(events, i), "type");
            if (type && !strcmp(type, "auto_compaction_start")) compaction = 1;
        }
        last = jat(events, count ? count - 1 : 0);
        CHECKF(compaction, "the handoff turn has auto_compaction_start (%zu events)", count);
        CHECK_STR(jpath_str(last, "type"), "agent_end");
        CHECK(jbool(jget(last, "isTerminal")) == 0);
        CHECK_STR(jpath_str(t, "assistantText"), "got it");
        json_free(t);
        h_strfree(&turn);
        CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    }
    free(big);
    printf("  compaction handoff: %lld ms\n", (long long)(h_now_ms() - t0));
}

static omprpc_client *start_real(const char *opts, const char *agent) {
    omprpc_client *c = NULL;
    char *err = NULL;
    int64_t t0 = h_now_ms();
    if (!CHECK_OK(omprpc_client_start(opts, &c, &err), err)) return NULL;
    printf("  %s was ready after %lld ms\n", agent, (long long)(h_now_ms() - t0));
    return c;
}

static const char *env_file(const char *name, int *missing) {
    const char *v = getenv(name);
    struct stat st;
    if (!v || !*v) {
        *missing = 1;
        return NULL;
    }
    if (stat(v, &st) != 0 || !S_ISREG(st.st_mode)) {
        h_fail(__FILE__, __LINE__, "%s=%s is not a file", name, v);
        return NULL;
    }
    return v;
}

static void test_real_pi(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_PI_CLI", &missing);
    workspace w;
    omprpc_client *c;
    char *opts, *info = NULL, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM or OMPRPC_PI_CLI is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli) return;
    if (ws_new(&w, "pi", llm, SCRIPT)) {
        char ext[400], args[600], *q_ext;
        snprintf(ext, sizeof ext, "%s/quiet.mjs", w.root);
        CHECK(write_text(ext, QUIET_EXTENSION));
        q_ext = json_quote(ext);
        snprintf(args, sizeof args, "\"--extension\",%s", q_ext);
        free(q_ext);
        opts = ws_options(&w, "node", cli, args, HOST_ADD(""));
        c = start_real(opts, "pi");
        free(opts);
        if (c) {
            if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
                jval *v = PARSE(info);
                CHECK_STR(jpath_str(v, "flavor"), "pi");
                CHECK_STR(jpath_str(v, "agentVersion"), "0.73.1");
                CHECK(jbool(jget(v, "bridgeLoaded")) == 1);
                json_free(v);
                h_strfree(&info);
            }
            /* The bridge extension's hello got its answer (pi awaits it before its first
             * command; unanswered, start took 10 s more). */
            if (CHECK_OK(omprpc_client_stderr(c, &info, &err), err)) {
                CHECKF(!strstr(info, "hello not acknowledged"), "the bridge's hello went unanswered: %s", info);
                h_strfree(&info);
            }
            text_turn(c);
            host_tool_turn(c, 1);
            pi_quiet_command(c);
            queued_follow_up(c);
            pi_steer_then_abort(c); /* last: the parked steer would join the next prompt */
            close_leaves_no_process(c);
            omprpc_client_free(c);
        }
        /* turn_idle_timeout_ms is a start option: a client of its own (same workspace). */
        opts = ws_options(&w, "node", cli, NULL, "\"turn_idle_timeout_ms\":4000," HOST_ADD(""));
        c = start_real(opts, "pi (turn_idle_timeout_ms 4000)");
        free(opts);
        if (c) {
            pi_silent_host_tool(c);
            CHECK_OK(omprpc_client_close(c, &err), err);
            omprpc_client_free(c);
        }
    }
    ws_free(&w);
}

static void test_real_omp(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_OMP_CLI", &missing),
               *bun = env_file("OMPRPC_BUN", &missing);
    workspace w;
    omprpc_client *c;
    char *opts, *info = NULL, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM, OMPRPC_OMP_CLI or OMPRPC_BUN is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !bun) return;
    if (ws_new(&w, "omp", llm, SCRIPT)) {
        /* loadMode "essential": omp offers the host tool to the model directly. */
        opts = ws_options(&w, bun, cli, NULL, HOST_ADD(",\"loadMode\":\"essential\""));
        c = start_real(opts, "omp");
        free(opts);
        if (c) {
            if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
                jval *v = PARSE(info);
                CHECK_STR(jpath_str(v, "flavor"), "omp");
                CHECK_STR(jpath_str(v, "agentVersion"), "18.2.3");
                CHECKF(!strstr(info, "--extension"), "no bridge on omp: %s", info);
                json_free(v);
                h_strfree(&info);
            }
            text_turn(c);
            host_tool_turn(c, 0);
            queued_follow_up(c);
            omp_steer_then_abort(c);
            omp_compaction_handoff(c);
            close_leaves_no_process(c);
            omprpc_client_free(c);
        }
    }
    ws_free(&w);
}

int main(void) {
    /* h_init wants the fake agent, which this program does not use. */
    setenv("OMPRPC_FAKE_AGENT", "(unused)", 0);
    h_init();
    RUN(test_real_pi);
    RUN(test_real_omp);
    return h_summary();
}

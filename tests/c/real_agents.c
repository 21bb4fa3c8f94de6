/*
 * The real pi and omp 18.2.3 through the C API, offline, with omprpc-fake-llm as the model
 * (the scenarios of tests/real_pi.rs and tests/real_omp.rs: pi's full set, omp's short set —
 * Python runs omp's full set). Both: start, a text turn, a host tool answered from this
 * program's event loop (pi: through the tool bridge; omp: its own host tools, loadMode
 * "essential"), close leaving no process. And the activity model (src/client/lifecycle.rs): a
 * queued follow_up runs before the agent is idle; steer then abort a hanging stream (pi parks
 * the steer, omp runs it by itself before it is idle); an extension command with no work
 * completes without a run; a host tool silent for longer than turn_idle_timeout_ms.
 * pi also: its native bash tool; an extension command asking the UI (input, then notify)
 * answered from here; abort while this program holds a
 * bridged host call (host_tool_cancel, a late result refused); 3 MB of bash output
 * (truncated, the full output in a file); the policy gate blocking its bash, by the
 * library's rules and by this program's verdict (policy_eval). omp also: the compaction
 * handoff. The gate on pi 0.99+ (its own client, the fake MCP server omprpc-fake-mcp in the
 * agent dir's mcp.json): a direct MCP call blocked and allowed by this program (the server's log
 * shows only the allowed one), a codemode script's bash and MCP calls blocked (each policy_eval
 * names the codemode call as parentToolCallId); and the gate with --no-extensions in argv (pi
 * and the previous pi).
 *
 * Recovery (issue 21), on pi and omp (their main clients) and on the previous pi (0.73.1, a
 * client of its own), through the structured turn (omprpc_client_prompt_and_wait_turn): a retry
 * after a 500 and after a 429, overflow recovery (pi 0.73.1 and omp compact and answer; pi
 * 0.80.4 on gives up and settles) — each call returns after the agent's last run with that
 * run's outcome and the record of the attempts, the agent starts nothing after it, a second
 * prompt right after it is accepted — and abort from another thread in a retry's delay (the
 * turn ends at once, ABORTED, and no retry follows).
 *
 * What depends on the agent's version is read from its package.json (not from the library),
 * and the library's probed version (client info agentVersion) is checked against it and
 * printed: pi 0.80.4 on ends a prompt with agent_settled (turn outcome AGENT_SETTLED), pi 1.x
 * lists a system message first in the session's first run's messages.
 *
 * Not a test_*.c program (those run in shared, ASan, valgrind and TSan modes): `make
 * c-real-agents` runs it once. Environment (the Makefile's REAL_AGENT_ENV): OMPRPC_FAKE_LLM,
 * OMPRPC_PI_CLI (run by OMPRPC_PI_NODE when set — pi 0.80 on needs Node 22 — else by `node`),
 * OMPRPC_PI_PREVIOUS_CLI (run by `node`), OMPRPC_OMP_CLI + OMPRPC_BUN, OMPRPC_FAKE_MCP. Unset: that agent is
 * skipped with a message; set but unusable: the test fails.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
 * working directory, TMPDIR: pi keeps a long bash output there) and its fake LLM. */
typedef struct {
    const char *agent; /* "pi" or "omp" */
    char root[256], home[300], agent_dir[300], work[300], tmp[300], llm_log[300];
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
    snprintf(w->tmp, sizeof w->tmp, "%s/tmp", w->root);
    snprintf(w->llm_log, sizeof w->llm_log, "%s/llm-requests.jsonl", w->root);
    snprintf(path, sizeof path, "%s/llm-script.json", w->root);
    if (mkdir(w->home, 0700) || mkdir(w->agent_dir, 0700) || mkdir(w->work, 0700) || mkdir(w->tmp, 0700) ||
        !write_text(path, script)) {
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
 * (JSON strings joined by commas, or NULL); the workspace's environment (HOME, TMPDIR,
 * PI_CODING_AGENT_DIR, PATH, and PI_OFFLINE=1 for pi) and working directory; `extra`: more
 * members (or NULL). Free with free(); NULL (and a failure) when out of memory. */
static char *ws_options(const workspace *w, const char *launcher0, const char *cli, const char *args,
                        const char *extra) {
    const char *path = getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
    int pi = !strcmp(w->agent, "pi");
    char *q_l0 = json_quote(launcher0), *q_cli = json_quote(cli), *q_home = json_quote(w->home),
         *q_tmp = json_quote(w->tmp), *q_dir = json_quote(w->agent_dir), *q_path = json_quote(path),
         *q_work = json_quote(w->work), *out = NULL;
    if (q_l0 && q_cli && q_home && q_tmp && q_dir && q_path && q_work) {
        size_t n = strlen(q_l0) + strlen(q_cli) + strlen(q_home) + strlen(q_tmp) + strlen(q_dir) + strlen(q_path) +
                   strlen(q_work) + (extra ? strlen(extra) : 0) + (args ? strlen(args) : 0) + 512;
        out = (char *)malloc(n);
        if (out)
            snprintf(out, n,
                     "{\"command\":[%s,%s,\"--mode\",\"rpc\",\"--no-session\",\"%s\",\"--model\",\"fake/fake-model\"%s%s],"
                     "\"flavor\":\"%s\",\"cwd\":%s,\"env\":{\"HOME\":%s,\"TMPDIR\":%s,\"PI_CODING_AGENT_DIR\":%s,"
                     "\"PATH\":%s%s},\"inherit_env\":false,\"startup_timeout_ms\":%d,\"request_timeout_ms\":60000,\"stop_grace_ms\":5000%s%s}",
                     q_l0, q_cli, pi ? "--offline" : "--no-title", args ? "," : "", args ? args : "", w->agent, q_work,
                     q_home, q_tmp, q_dir, q_path, pi ? ",\"PI_OFFLINE\":\"1\"" : "", REAL_WAIT_MS, extra ? "," : "",
                     extra ? extra : "");
    }
    if (!out) h_fail(__FILE__, __LINE__, "out of memory");
    free(q_l0);
    free(q_cli);
    free(q_home);
    free(q_tmp);
    free(q_dir);
    free(q_path);
    free(q_work);
    return out;
}

/* --- what this program knows of the agents -------------------------------------------- */

/* What this program knows of an agent apart from the library: its package's version (the
 * package.json above its cli.js) and what follows from it. */
typedef struct {
    const char *label; /* "pi", "pi (previous)", "omp" */
    int omp;
    char version[32];
    int settles; /* pi >= 0.80.4 announces settling: agent_settled ends a prompt */
} agent_facts;

/* A whole file, NUL-terminated (NULL when unreadable); free with free(). */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = (char *)malloc((size_t)n + 1)) != NULL) {
        size_t got = fread(buf, 1, (size_t)n, f);
        buf[got] = '\0';
    }
    fclose(f);
    return buf;
}

/* The version of the package `cli` belongs to: the first package.json in the directories above
 * it (pi 1.x: …/pi-coding-agent/dist/bundle/cli.js, pi 0.x and omp: …/dist/cli.js). */
static int cli_package_version(const char *cli, char *out, size_t cap) {
    char dir[1024], path[1100];
    int up;
    snprintf(dir, sizeof dir, "%s", cli);
    for (up = 0; up < 4; up++) {
        char *slash = strrchr(dir, '/'), *text;
        jval *v;
        if (!slash) break;
        *slash = '\0';
        snprintf(path, sizeof path, "%s/package.json", dir);
        if (!(text = read_text(path))) continue;
        v = json_parse(text);
        free(text);
        if (jpath_str(v, "version")) snprintf(out, cap, "%s", jpath_str(v, "version"));
        json_free(v);
        return out[0] != '\0';
    }
    return 0;
}

/* a.b.c >= maj.min.pat */
static int version_at_least(const char *v, int maj, int min, int pat) {
    int a = 0, b = 0, c = 0;
    if (sscanf(v, "%d.%d.%d", &a, &b, &c) != 3) return 0;
    return a != maj ? a > maj : b != min ? b > min : c >= pat;
}

static int facts_of(agent_facts *f, const char *label, const char *cli) {
    memset(f, 0, sizeof *f);
    f->label = label;
    f->omp = !strcmp(label, "omp");
    if (!cli_package_version(cli, f->version, sizeof f->version)) {
        h_fail(__FILE__, __LINE__, "no package.json with a version above %s", cli);
        return 0;
    }
    f->settles = !f->omp && version_at_least(f->version, 0, 80, 4);
    return 1;
}

/* The client's info agrees with the package: the probed version (agentVersion), printed. */
static void check_agent_version(omprpc_client *c, const agent_facts *f) {
    char *text = NULL, *err = NULL;
    if (CHECK_OK(omprpc_client_info(c, &text, &err), err)) {
        jval *v = PARSE(text);
        const char *got = jpath_str(v, "agentVersion");
        printf("  %s: agentVersion %s (package %s)%s\n", f->label, got ? got : "(none)", f->version,
               f->settles ? ", announces settling" : "");
        CHECK_STR(got, f->version);
        CHECK_STR(jpath_str(v, "flavor"), f->omp ? "omp" : "pi");
        json_free(v);
        h_strfree(&text);
    }
}

/* --- the scenarios -------------------------------------------------------------------- */

/* The rules both agents' fake LLMs know (first match on the last user message wins). */
#define COMMON_RULES                                                                                    \
    "{\"match\":\"say hello\",\"replies\":[{\"text\":\"Hello from the fake model\"}]},"                \
    "{\"match\":\"add numbers\",\"replies\":[{\"tool_call\":{\"name\":\"host_add\",\"arguments\":{\"a\":2,\"b\":3}}}," \
    "{\"text\":\"sum is {{last_tool_result}}\"}]},"                                                    \
    "{\"match\":\"hang\",\"replies\":[{\"text\":\"thinking about it\",\"hang\":true}]},"                 \
    "{\"match\":\"steer me\",\"replies\":[{\"text\":\"steered ok\"}]},"                                  \
    "{\"match\":\"slow\",\"replies\":[{\"text\":\"one two three four\",\"chunk_delay_ms\":250}]},"       \
    "{\"match\":\"follow me\",\"replies\":[{\"text\":\"followed ok\"}]},"                           \
    "{\"match\":\"big\",\"replies\":[{\"text\":\"got it\"}]}"

/* Recovery (issue 21). The fake LLM's failures (src/bin/omprpc-fake-llm/main.rs) are counted
 * per rule over the server's life, so each case has a rule of its own. A compaction's summary
 * request (pi and omp: "<conversation>…</conversation>" and instructions, which contain "changes":
 * the common "hang" rule) quotes the conversation: the first rule answers it, whatever the
 * conversation held. */
#define SUMMARY_RULE "{\"match\":\"<conversation>\",\"replies\":[{\"text\":\"summary of the conversation\"}]}"
#define RECOVERY_OVERFLOW                                                                               \
    "{\"match\":\"overflow now\",\"replies\":[{\"text\":\"recovered after compaction\",\"fail\":\"context_length\"}]}"
/* pi: one failure each (pi 0.73.1's SDK retries of one call fail alike; retry-after-ms 1 keeps
 * them fast on the 429s); the abort case fails every attempt. */
#define PI_RECOVERY_RULES                                                                               \
    RECOVERY_OVERFLOW ","                                                                               \
    "{\"match\":\"fail with 500\",\"replies\":[{\"text\":\"recovered from 500\",\"fail\":\"http_500\"}]},"  \
    "{\"match\":\"fail with 429\",\"replies\":[{\"text\":\"recovered from 429\","                          \
    "\"fail\":{\"kind\":\"http_429\",\"retry_after_ms\":1}}]},"                                            \
    "{\"match\":\"abort my retry\",\"replies\":[{\"text\":\"never\","                                      \
    "\"fail\":{\"kind\":\"http_429\",\"times\":10,\"retry_after_ms\":1}}]}"
/* omp: its provider layer retries a failing call 11 more times by itself (all 12 must fail for
 * the session to see it; retry-after-ms 1 makes that fast); a retry-after above 60 s makes it
 * give up at once and the session wait 61 s (the abort case). */
#define OMP_RECOVERY_RULES                                                                              \
    RECOVERY_OVERFLOW ","                                                                               \
    "{\"match\":\"fail with 500\",\"replies\":[{\"text\":\"recovered from 500\","                          \
    "\"fail\":{\"kind\":\"http_500\",\"times\":12,\"retry_after_ms\":1}}]},"                              \
    "{\"match\":\"fail with 429\",\"replies\":[{\"text\":\"recovered from 429\","                          \
    "\"fail\":{\"kind\":\"http_429\",\"times\":12,\"retry_after_s\":0,\"retry_after_ms\":1}}]},"         \
    "{\"match\":\"abort my retry\",\"replies\":[{\"text\":\"never\","                                      \
    "\"fail\":{\"kind\":\"http_429\",\"times\":12,\"retry_after_s\":61}}]}"

#define OMP_SCRIPT "[" SUMMARY_RULE "," OMP_RECOVERY_RULES "," COMMON_RULES "]"
/* The previous pi runs only the recovery cases. */
#define PI_PREVIOUS_SCRIPT "[" SUMMARY_RULE "," PI_RECOVERY_RULES "," COMMON_RULES "]"

/* pi's own scenarios: its bash tool (a short command, one the gate blocks, two calls for the
 * host's verdicts, 3 MB of output) and the bridged host_wait. First, so that "big output"
 * wins over the common "big". */
#define PI_SCRIPT                                                                                       \
    "[" SUMMARY_RULE "," PI_RECOVERY_RULES ",{\"match\":\"run bash\",\"replies\":[{\"text\":\"Running it. \",\"tool_call\":{\"name\":\"bash\","   \
    "\"arguments\":{\"command\":\"echo hi-from-bash\"}}},{\"text\":\"done: {{last_tool_result}}\"}]},"    \
    "{\"match\":\"run forbidden\",\"replies\":[{\"tool_call\":{\"name\":\"bash\",\"arguments\":"          \
    "{\"command\":\"touch ran-forbidden\"}}},{\"text\":\"after: {{last_tool_result}}\"}]},"              \
    "{\"match\":\"two calls\",\"replies\":[{\"tool_calls\":[{\"name\":\"bash\",\"arguments\":"            \
    "{\"command\":\"touch ran-first\"}},{\"name\":\"bash\",\"arguments\":{\"command\":\"echo second-ran\"}}]}," \
    "{\"text\":\"finished\"}]},"                                                                         \
    "{\"match\":\"wait for the host\",\"replies\":[{\"tool_call\":{\"name\":\"host_wait\",\"arguments\":{}}}," \
    "{\"text\":\"no\"}]},"                                                                               \
    "{\"match\":\"big output\",\"replies\":[{\"tool_call\":{\"name\":\"bash\",\"arguments\":"             \
    "{\"command\":\"head -c 3000000 /dev/zero | tr '\\\\0' x\"}}},{\"text\":\"big done\"}]},"             \
    COMMON_RULES "]"

/* Both agents load it: an extension command that asks the UI for a name, then notifies; and
 * one that does nothing (no run, no model call). */
#define ASK_EXTENSION                                                                                   \
    "export default function (pi) {\n"                                                                  \
    "  pi.registerCommand(\"ask\", {\n"                                                                 \
    "    description: \"Ask for a name\",\n"                                                            \
    "    handler: async (args, ctx) => {\n"                                                             \
    "      const name = await ctx.ui.input(\"Your name?\", \"type it\");\n"                            \
    "      ctx.ui.notify(`hello ${name}`, \"info\");\n"                                                 \
    "    },\n"                                                                                          \
    "  });\n"                                                                                           \
    "  pi.registerCommand(\"quiet\", { description: \"q\", handler: async () => {} });\n"               \
    "}\n"

#define HOST_ADD_TOOL(load_mode)                                                                        \
    "{\"name\":\"host_add\",\"description\":\"Add two numbers\"" load_mode ",\"parameters\":"             \
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}},"       \
    "\"required\":[\"a\",\"b\"]}}"
#define HOST_ADD(load_mode) "\"host_tools\":[" HOST_ADD_TOOL(load_mode) "]"
/* pi's main client: host_add, and host_wait, which this program never answers (abort). */
#define HOST_ADD_AND_WAIT                                                                               \
    "\"host_tools\":[" HOST_ADD_TOOL("") ",{\"name\":\"host_wait\",\"description\":\"Waits until cancelled\"," \
    "\"parameters\":{\"type\":\"object\",\"properties\":{}}}]"

/* The library decides: pi's bash is blocked with a reason, everything else allowed. */
#define POLICY_RULES                                                                                    \
    "\"tool_policy\":{\"mode\":\"rules\",\"block\":{\"bash\":\"no shell for you\"},\"default\":\"allow\"}"

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

/* The only event of `type` in the turn's events; NULL (and a failure) unless there is one. */
static const jval *one_event(const jval *turn, const char *type) {
    int n = h_count_type(jget(turn, "events"), type);
    if (n != 1) {
        h_fail(__FILE__, __LINE__, "expected one %s in the turn, got %d", type, n);
        return NULL;
    }
    return h_find_type(jget(turn, "events"), type, 0);
}

/* How many requests the fake LLM logged (one JSON line each). */
static int llm_requests(const workspace *w) {
    FILE *f = fopen(w->llm_log, "r");
    int ch, n = 0;
    if (!f) return 0; /* nothing asked yet */
    while ((ch = fgetc(f)) != EOF)
        if (ch == '\n') n++;
    fclose(f);
    return n;
}

/* A file's size, -1 when it does not exist. */
static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Takes every event queued now (the turns before leave theirs in the queue). */
static void drain_events(omprpc_client *c) {
    char *ev = NULL, *err = NULL;
    while (omprpc_client_next_event(c, 0, &ev, &err) == OMPRPC_STATUS_OK) h_strfree(&ev);
    h_strfree(&err);
}

/* The client's first prompt: one run, ended by the agent's last word (pi 0.80.4 on: its
 * agent_settled; before, and omp: the run's agent_end). pi 1.x lists the system prompt first
 * in the session's first run's messages. */
static void text_turn(omprpc_client *c, const agent_facts *f) {
    char *turn = NULL, *err = NULL;
    int64_t t0 = h_now_ms();
    jval *t;
    int system_first = !f->omp && version_at_least(f->version, 1, 0, 0);
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, "say hello", NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    CHECK_STR(jpath_str(t, "assistantText"), "Hello from the fake model");
    CHECK(jbool(jget(t, "agentInvoked")) == 1);
    CHECK_STR(jpath_str(t, "assistantMessage.stopReason"), "stop");
    CHECK_STR(jpath_str(jat(jget(t, "events"), 0), "type"), "agent_start");
    CHECK_STR(jpath_str(jat(jget(t, "events"), jlen(jget(t, "events")) - 1), "type"),
              f->settles ? "agent_settled" : "agent_end");
    CHECK_STR(jpath_str(t, "outcome"), f->settles ? "agent_settled" : "agent_end");
    CHECK(jbool(jget(t, "settled")) == (f->settles ? 1 : 0));
    CHECK(jnum(jget(t, "attempts"), NULL) == 1);
    CHECK(jis(jget(t, "failedAttempts"), J_ARR) && jlen(jget(t, "failedAttempts")) == 0);
    CHECK(jis(jget(t, "compactions"), J_ARR) && jlen(jget(t, "compactions")) == 0);
    CHECK_STR(jpath_str(t, "messages.0.role"), system_first ? "system" : "user");
    if (system_first) CHECK_STR(jpath_str(t, "messages.1.role"), "user");
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
static jval *steer_then_abort(omprpc_client *c, const agent_facts *f) {
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
        CHECK_STR(jpath_str(turn, "outcome"), "aborted");
        CHECK_STR(jpath_str(jat(evs, jlen(evs) - 1), "type"), f->settles ? "agent_settled" : "agent_end");
        if (f->settles) CHECK(jbool(jpath(jat(evs, jlen(evs) - 1), "aborted")) == 1);
    }
    return turn;
}

/* pi: the steer stays parked; the agent is idle, wait_for_idle returns OK. */
static void pi_steer_then_abort(omprpc_client *c, const agent_facts *f) {
    char *err = NULL, *state = NULL;
    int64_t t0 = h_now_ms();
    jval *turn = steer_then_abort(c, f);
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
static void omp_steer_then_abort(omprpc_client *c, const agent_facts *f) {
    char *err = NULL, buf[256];
    int64_t t0 = h_now_ms();
    int ends;
    jval *turn = steer_then_abort(c, f);
    if (!turn) return;
    CHECK_STR(jpath_str(turn, "assistantMessage.errorMessage"), "Interrupted by user");
    json_free(turn);
    if (!CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err)) return;
    last_agent_end_text(c, buf, sizeof buf, &ends);
    CHECKF(ends >= 1 && !strcmp(buf, "steered ok"),
           "queued when wait_for_idle returned: %d agent_end, the last ending \"%s\"", ends, buf);
    printf("  steer then abort (steer run): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* An extension command with no work completes prompt_and_wait without a run (pi acknowledges
 * it after its handler; omp at once, then ends it with prompt_result) and never reaches the
 * model. */
static void quiet_command(omprpc_client *c, const workspace *w) {
    char *turn = NULL, *err = NULL;
    int64_t t0 = h_now_ms();
    int before = llm_requests(w);
    if (CHECK_OK(omprpc_client_prompt_and_wait(c, "/quiet", NULL, REAL_WAIT_MS, &turn, &err), err)) {
        jval *t = PARSE(turn);
        CHECKF(jbool(jget(t, "agentInvoked")) == 0, "/quiet turn: %s", turn);
        CHECK(h_count_type(jget(t, "events"), "agent_start") == 0);
        json_free(t);
        h_strfree(&turn);
    }
    CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    CHECKF(llm_requests(w) == before, "/quiet made %d LLM requests", llm_requests(w) - before);
    printf("  /quiet: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* The host answers its call (pi: bridged, omp: native) after 5 s of silence, longer than
 * turn_idle_timeout_ms (4000): the idle clock stands still while the agent waits on the host,
 * the turn succeeds. */
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

static void silent_host_tool(omprpc_client *c) {
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
    printf("  silent host tool (5 s, idle timeout 4 s): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* --- pi's own scenarios ----------------------------------------------------------------- */

/* pi's native bash tool: one start and one end with the same call id, the command's output as
 * the result, the model's reply quoting it. */
static void pi_bash_tool(omprpc_client *c) {
    static const char *const roles[] = {"user", "assistant", "toolResult", "assistant"};
    char *turn = NULL, *err = NULL, buf[256];
    int64_t t0 = h_now_ms();
    const jval *start, *end, *msgs;
    jval *t;
    size_t i;
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, "please run bash", NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    start = one_event(t, "tool_execution_start");
    end = one_event(t, "tool_execution_end");
    if (start && end) {
        CHECK_STR(jpath_str(start, "toolName"), "bash");
        CHECK(jlen(jget(start, "args")) == 1);
        CHECK_STR(jpath_str(start, "args.command"), "echo hi-from-bash");
        CHECK(jpath_str(start, "toolCallId") != NULL);
        CHECK_STR(jpath_str(end, "toolCallId"), jpath_str(start, "toolCallId"));
        CHECK(jbool(jget(end, "isError")) == 0);
        CHECK_STR(content_text(jpath(end, "result.content"), buf, sizeof buf), "hi-from-bash\n");
    }
    CHECK_STR(jpath_str(t, "assistantText"), "done: hi-from-bash\n");
    msgs = jget(t, "messages");
    CHECKF(jlen(msgs) == 4, "%zu messages in the bash turn", jlen(msgs));
    for (i = 0; i < 4 && i < jlen(msgs); i++) CHECK_STR(jpath_str(jat(msgs, i), "role"), roles[i]);
    json_free(t);
    h_strfree(&turn);
    printf("  native bash tool: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* prompt (only the acknowledgement) on a thread of its own: pi acknowledges "/ask" only once
 * the command's handler is done, i.e. after this program answered its UI request. */
typedef struct {
    omprpc_client *c;
    const char *message;
    omprpc_status st;
    char *id, *err;
    int done;
    pthread_mutex_t lock;
    pthread_t th;
} acked_prompt;

static void *acked_prompt_thread(void *arg) {
    acked_prompt *p = (acked_prompt *)arg;
    omprpc_status st = omprpc_client_prompt(p->c, p->message, NULL, REAL_WAIT_MS, &p->id, &p->err);
    pthread_mutex_lock(&p->lock);
    p->st = st;
    p->done = 1;
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void acked_prompt_start(acked_prompt *p, omprpc_client *c, const char *message) {
    memset(p, 0, sizeof *p);
    p->c = c;
    p->message = message;
    p->st = OMPRPC_STATUS_PANIC;
    pthread_mutex_init(&p->lock, NULL);
    pthread_create(&p->th, NULL, acked_prompt_thread, p);
}

static int acked_prompt_done(acked_prompt *p) {
    int done;
    pthread_mutex_lock(&p->lock);
    done = p->done;
    pthread_mutex_unlock(&p->lock);
    return done;
}

/* Joins the thread; 1 when the prompt was acknowledged (a failure otherwise). */
static int acked_prompt_join(acked_prompt *p) {
    int ok;
    pthread_join(p->th, NULL);
    pthread_mutex_destroy(&p->lock);
    ok = CHECK_OK(p->st, p->err);
    h_strfree(&p->id);
    return ok;
}

/* Takes events until the extension's fire-and-forget notify (an event, not a UI request to
 * answer); NULL after REAL_WAIT_MS. */
static jval *wait_notify(omprpc_client *c) {
    int64_t deadline = h_now_ms() + REAL_WAIT_MS;
    for (;;) {
        int64_t left = deadline - h_now_ms();
        jval *v = h_wait_event(c, "extension_ui_request", left > 0 ? left : 0);
        if (!v || (jpath_str(v, "method") && !strcmp(jpath_str(v, "method"), "notify"))) return v;
        json_free(v);
    }
}

/* "/ask": the extension asks for a name (an input UI request this program answers), then
 * notifies. A command runs no agent loop and never reaches the model. */
static void pi_ui_dialog(omprpc_client *c, const workspace *w) {
    char *req_text = NULL, *err = NULL;
    int before = llm_requests(w);
    int64_t t0 = h_now_ms();
    acked_prompt p;
    jval *req = NULL, *note;
    drain_events(c);
    acked_prompt_start(&p, c, "/ask");
    if (CHECK_OK(omprpc_client_next_ui_request(c, REAL_WAIT_MS, &req_text, &err), err)) {
        req = PARSE(req_text);
        h_strfree(&req_text);
    }
    if (req) {
        CHECK_STR(jpath_str(req, "method"), "input");
        CHECK_STR(jpath_str(req, "title"), "Your name?");
        CHECK_STR(jpath_str(req, "placeholder"), "type it");
        h_sleep_ms(300); /* the scenario: pi must still be waiting for the answer */
        CHECKF(!acked_prompt_done(&p), "pi acknowledged /ask before its UI request was answered");
        CHECK_OK(omprpc_client_ui_send_value(c, jpath_str(req, "id"), "Alice", &err), err);
        json_free(req);
    }
    if (!acked_prompt_join(&p)) return;
    note = wait_notify(c);
    CHECKF(note != NULL, "no notify from /ask");
    if (note) {
        CHECK_STR(jpath_str(note, "message"), "hello Alice");
        CHECK_STR(jpath_str(note, "notifyType"), "info");
        json_free(note);
    }
    /* The notify is not a request to answer: none is waiting. */
    CHECK_STATUS(omprpc_client_next_ui_request(c, 0, &req_text, &err), OMPRPC_STATUS_TIMEOUT, err);
    h_strfree(&req_text);
    h_strfree(&err);
    CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    CHECKF(llm_requests(w) == before, "/ask reached the model: %d requests, %d before", llm_requests(w), before);
    printf("  UI dialog (/ask): %lld ms\n", (long long)(h_now_ms() - t0));
}

/* The model calls host_wait; this program holds the call and aborts: pi's AbortSignal reaches
 * it as host_tool_cancel, the tool ends "cancelled", the run ends aborted without asking the
 * model again, and the late answer is refused (CANCELLED). */
static void pi_abort_during_host_tool(omprpc_client *c, const workspace *w) {
    char *err = NULL, buf[256];
    int before = llm_requests(w);
    int64_t t0 = h_now_ms();
    waited_turn t;
    jval *call, *cancel = NULL, *turn;
    const char *call_id;
    drain_events(c);
    waited_turn_start(&t, c, "wait for the host");
    call = h_wait_event(c, "host_tool_call", REAL_WAIT_MS);
    call_id = jpath_str(call, "id");
    CHECKF(call_id != NULL, "no host_tool_call for host_wait");
    CHECK_STR(jpath_str(call, "toolName"), "host_wait");
    CHECK_OK(omprpc_client_abort(c, REAL_WAIT_MS, &err), err); /* the call stays unanswered */
    if (call_id) {
        cancel = h_wait_event(c, "host_tool_cancel", REAL_WAIT_MS);
        CHECKF(cancel != NULL, "no host_tool_cancel after the abort");
        CHECK_STR(jpath_str(cancel, "targetId"), call_id);
    }
    turn = waited_turn_join(&t, c);
    if (turn) {
        const jval *end = one_event(turn, "tool_execution_end");
        if (end) {
            CHECK_STR(jpath_str(end, "toolName"), "host_wait");
            CHECK(jbool(jget(end, "isError")) == 1);
            CHECK_STR(content_text(jpath(end, "result.content"), buf, sizeof buf), "cancelled");
        }
        CHECK_STR(jpath_str(turn, "assistantMessage.stopReason"), "aborted");
        json_free(turn);
    }
    CHECKF(llm_requests(w) == before + 1, "the aborted run asked the model %d times", llm_requests(w) - before);
    if (call_id) {
        CHECK_STATUS(omprpc_client_host_tool_result(c, call_id, "\"too late\"", false, &err), OMPRPC_STATUS_CANCELLED,
                     err);
        h_strfree(&err);
    }
    CHECK_OK(omprpc_client_wait_for_idle(c, REAL_WAIT_MS, &err), err);
    json_free(cancel);
    json_free(call);
    printf("  abort during a bridged host tool: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* bash writes 3 MB: pi sends the model (and the event) a cut of it and keeps the whole
 * output in a file under TMPDIR; the library takes the large lines without a protocol error. */
static void pi_big_tool_output(omprpc_client *c, const workspace *w) {
    char *turn = NULL, *err = NULL, *errors = NULL;
    int64_t t0 = h_now_ms();
    const jval *end;
    jval *t;
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, "big output please", NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    end = one_event(t, "tool_execution_end");
    if (end) {
        const jval *content = jpath(end, "result.content");
        const char *text = jpath_str(content, "0.text"), *full = jpath_str(end, "result.details.fullOutputPath");
        size_t i, total = 0, line = text ? strcspn(text, "\n") : 0, xs = text ? strspn(text, "x") : 0;
        int is_num = 0;
        for (i = 0; i < jlen(content); i++)
            if (jstr(jget(jat(content, i), "text"))) total += jget(jat(content, i), "text")->str_len;
        CHECK_STR(jpath_str(end, "toolName"), "bash");
        CHECK(jbool(jget(end, "isError")) == 0);
        CHECKF(line > 0 && xs == line && total > 50000, "the result: %zu bytes, its first line %zu bytes (%zu 'x'): %.80s",
               total, line, xs, text ? text : "(none)");
        CHECK(jbool(jpath(end, "result.details.truncation.truncated")) == 1);
        CHECK(jnum(jpath(end, "result.details.truncation.totalBytes"), &is_num) == 3000000 && is_num);
        CHECKF(full && !strncmp(full, w->tmp, strlen(w->tmp)) && file_size(full) == 3000000,
               "fullOutputPath %s: %lld bytes (TMPDIR %s)", full ? full : "(none)", full ? file_size(full) : -1LL, w->tmp);
    }
    CHECK_STR(jpath_str(t, "assistantText"), "big done");
    json_free(t);
    h_strfree(&turn);
    if (CHECK_OK(omprpc_client_protocol_errors(c, &errors, &err), err)) {
        CHECK_STR(errors, "[]");
        h_strfree(&errors);
    }
    printf("  3 MB of tool output: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* The policy gate by the library's rules (POLICY_RULES): pi's bash is blocked before it runs,
 * the model reads the reason, a tool_blocked event says so. No host round trip. */
static void pi_policy_rules(omprpc_client *c, const workspace *w) {
    char *turn = NULL, *err = NULL, buf[256], path[400];
    int64_t t0 = h_now_ms();
    const jval *end;
    jval *t, *blocked;
    drain_events(c);
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, "run forbidden", NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    end = one_event(t, "tool_execution_end");
    if (end) {
        CHECK_STR(jpath_str(end, "toolName"), "bash");
        CHECK(jbool(jget(end, "isError")) == 1);
        CHECK_STR(content_text(jpath(end, "result.content"), buf, sizeof buf), "no shell for you");
    }
    CHECK_STR(jpath_str(t, "assistantText"), "after: no shell for you");
    json_free(t);
    h_strfree(&turn);
    snprintf(path, sizeof path, "%s/ran-forbidden", w->work);
    CHECKF(file_size(path) < 0, "the blocked command ran: %s exists", path);
    blocked = h_wait_event(c, "tool_blocked", REAL_WAIT_MS);
    CHECKF(blocked != NULL, "no tool_blocked event");
    if (blocked) {
        CHECK_STR(jpath_str(blocked, "toolName"), "bash");
        CHECK_STR(jpath_str(blocked, "reason"), "no shell for you");
        json_free(blocked);
    }
    printf("  policy gate (rules) blocks bash: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* The policy gate asking this program ({"mode":"host"}): each of the model's two bash calls
 * raises policy_eval; `touch ran-first` is blocked with a reason, `echo second-ran` allowed. */
static void pi_policy_host(omprpc_client *c, const workspace *w) {
    char *err = NULL, buf[256], path[400];
    int64_t t0 = h_now_ms();
    int i, blocked = 0, allowed = 0;
    waited_turn t;
    jval *turn;
    drain_events(c);
    waited_turn_start(&t, c, "two calls");
    for (i = 0; i < 2; i++) {
        jval *ev = h_wait_event(c, "policy_eval", REAL_WAIT_MS);
        const char *cmd = jpath_str(ev, "arguments.command"), *id = jpath_str(ev, "id");
        if (!ev) {
            h_fail(__FILE__, __LINE__, "no policy_eval #%d (the gate blocks by itself after its timeout)", i + 1);
            break;
        }
        CHECK_STR(jpath_str(ev, "toolName"), "bash");
        if (cmd && !strcmp(cmd, "echo second-ran")) {
            allowed++;
            CHECK_OK(omprpc_client_policy_verdict(c, id, true, NULL, &err), err);
        } else {
            CHECKF(cmd && !strcmp(cmd, "touch ran-first"), "policy_eval for %s", cmd ? cmd : "(no command)");
            blocked++;
            CHECK_OK(omprpc_client_policy_verdict(c, id, false, "host says no", &err), err);
        }
        json_free(ev);
    }
    CHECKF(blocked == 1 && allowed == 1, "policy_eval: %d blocked, %d allowed", blocked, allowed);
    turn = waited_turn_join(&t, c);
    if (turn) {
        const jval *evs = jget(turn, "events");
        int ends = h_count_type(evs, "tool_execution_end"), no = 0, ran = 0;
        for (i = 0; i < ends; i++) {
            const jval *end = h_find_type(evs, "tool_execution_end", i);
            const char *text = content_text(jpath(end, "result.content"), buf, sizeof buf);
            if (jbool(jget(end, "isError")) == 1 && !strcmp(text, "host says no")) no++;
            if (jbool(jget(end, "isError")) == 0 && !strcmp(text, "second-ran\n")) ran++;
        }
        CHECKF(ends == 2 && no == 1 && ran == 1, "%d tool_execution_end: %d blocked by the host, %d ran", ends, no, ran);
        CHECK_STR(jpath_str(turn, "assistantText"), "finished");
        json_free(turn);
    }
    snprintf(path, sizeof path, "%s/ran-first", w->work);
    CHECKF(file_size(path) < 0, "the blocked command ran: %s exists", path);
    printf("  policy gate (host verdicts): %lld ms\n", (long long)(h_now_ms() - t0));
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

/* --- recovery: retries, overflow, abort in a retry's delay (issue 21) ------------------ */

/* A borrowed omprpc_str as a NUL-terminated copy, parsed (NULL when absent). */
static jval *parse_str(omprpc_str s) {
    char *copy;
    jval *v;
    if (!s.data) return NULL;
    copy = (char *)malloc(s.len + 1);
    if (!copy) return NULL;
    memcpy(copy, s.data, s.len);
    copy[s.len] = '\0';
    v = PARSE(copy);
    free(copy);
    return v;
}

/* The first of the turn's events with `type` whose `key` is the number `value` (key NULL: any),
 * parsed; NULL when none. */
static jval *turn_event(const omprpc_turn *t, const char *type, const char *key, double value) {
    const omprpc_event_view *evs = NULL;
    size_t n = 0, i;
    char *err = NULL;
    if (!CHECK_OK(omprpc_turn_events(t, &evs, &n, &err), err)) return NULL;
    for (i = 0; i < n; i++) {
        jval *v;
        if (!h_str_is(evs[i].event_type, type)) continue;
        v = parse_str(evs[i].json);
        if (!key || jnum(jget(v, key), NULL) == value) return v;
        json_free(v);
    }
    return NULL;
}

/* get_state says the agent is not streaming (nor retrying, where it says). */
static void check_idle_state(omprpc_client *c, const char *when) {
    char *state = NULL, *err = NULL;
    if (CHECK_OK(omprpc_client_get_state(c, REAL_WAIT_MS, &state, &err), err)) {
        jval *s = PARSE(state);
        CHECKF(jbool(jget(s, "isStreaming")) == 0 && jbool(jget(s, "isRetrying")) != 1, "%s: state %s", when, state);
        json_free(s);
        h_strfree(&state);
    }
}

/* The second prompt, sent right after the first returned: accepted, one attempt, answered. */
static void second_prompt(omprpc_client *c, const agent_facts *f) {
    omprpc_turn *t = NULL;
    omprpc_turn_info info;
    char *err = NULL;
    if (!CHECK_OK(omprpc_client_prompt_and_wait_turn(c, "say hello", NULL, REAL_WAIT_MS, &t, &err), err)) return;
    if (CHECK_OK(omprpc_turn_get_info(t, &info, &err), err)) {
        CHECK_OSTR(info.assistant_text, "Hello from the fake model");
        CHECKF(info.outcome == (f->settles ? OMPRPC_TURN_OUTCOME_AGENT_SETTLED : OMPRPC_TURN_OUTCOME_AGENT_END),
               "the second prompt's outcome: %s", h_outcome_name(info.outcome));
        CHECKF(info.attempts == 1, "the second prompt made %u attempts", (unsigned)info.attempts);
        CHECK_OSTR(info.failed_attempts_json, "[]");
    }
    omprpc_turn_free(t);
}

/* After a recovering prompt returned: get_state at once says idle; a second prompt is accepted
 * and costs exactly one LLM request; nothing more is asked a moment later. */
static void after_return(omprpc_client *c, const workspace *w, const agent_facts *f, int requests_at_return) {
    check_idle_state(c, "right after the call returned");
    second_prompt(c, f);
    CHECKF(llm_requests(w) == requests_at_return + 1, "after the call returned the agent made %d LLM requests (1 expected: the second prompt)",
           llm_requests(w) - requests_at_return);
    h_sleep_ms(300);
    CHECKF(llm_requests(w) == requests_at_return + 1, "a moment later: %d LLM requests since the call returned",
           llm_requests(w) - requests_at_return);
    check_idle_state(c, "a moment later");
}

typedef struct {
    const char *name;
    const char *prompt;
    const char *answer;  /* the last run's text; NULL: the failed run is the last one */
    const char *error;   /* a substring of the failed attempt's error */
    const char *then;    /* what the agent did after the failed attempt */
    uint32_t attempts;
    int compaction;      /* an overflow compaction that retried */
} recovery_case;

/* One prompt that fails once and (usually) recovers, through prompt_and_wait_turn: the call
 * returns after the agent's last run, with that run's outcome and the record of the attempts;
 * then after_return. */
static void recovery_turn(omprpc_client *c, const workspace *w, const agent_facts *f, const recovery_case *rc) {
    omprpc_turn *t = NULL;
    omprpc_turn_info info;
    char *err = NULL, last[64];
    int64_t t0 = h_now_ms();
    int before = llm_requests(w), at_return, starts, ends;
    omprpc_turn_outcome want = f->settles ? OMPRPC_TURN_OUTCOME_AGENT_SETTLED : OMPRPC_TURN_OUTCOME_AGENT_END;
    jval *failed, *compactions;
    drain_events(c);
    if (!CHECK_OK(omprpc_client_prompt_and_wait_turn(c, rc->prompt, NULL, REAL_WAIT_MS, &t, &err), err)) return;
    at_return = llm_requests(w);
    if (!CHECK_OK(omprpc_turn_get_info(t, &info, &err), err)) {
        omprpc_turn_free(t);
        return;
    }
    CHECKF(info.outcome == want, "%s: outcome %s, expected %s", rc->name, h_outcome_name(info.outcome), h_outcome_name(want));
    CHECKF(info.attempts == rc->attempts, "%s: %u attempts, expected %u", rc->name, (unsigned)info.attempts,
           (unsigned)rc->attempts);
    CHECKF(info.settled == (f->settles != 0), "%s: settled %d", rc->name, (int)info.settled);
    CHECK(info.agent_invoked);
    if (rc->answer) {
        CHECK_OSTR(info.assistant_text, rc->answer);
        CHECK_OSTR(info.stop_reason, "stop");
    } else {
        CHECK_OSTR(info.stop_reason, "error");
    }
    failed = parse_str(info.failed_attempts_json);
    CHECKF(jlen(failed) == 1, "%s: failedAttempts %.*s", rc->name, (int)info.failed_attempts_json.len,
           info.failed_attempts_json.data ? info.failed_attempts_json.data : "");
    if (jlen(failed) >= 1) {
        const jval *f0 = jat(failed, 0);
        const char *e = jpath_str(f0, "error");
        CHECK(jnum(jget(f0, "attempt"), NULL) == 1);
        CHECKF(e && strstr(e, rc->error), "%s: failed attempt's error %s", rc->name, e ? e : "(none)");
        CHECK_STR(jpath_str(f0, "then"), rc->then);
        if (!strcmp(rc->then, "retry")) CHECKF(jnum(jget(f0, "delayMs"), NULL) > 0, "%s: no delayMs", rc->name);
    }
    json_free(failed);
    compactions = parse_str(info.compactions_json);
    if (rc->compaction) {
        /* omp may try a cheaper method first ("shake", skipped, willRetry false). */
        const jval *lastc = jat(compactions, jlen(compactions) ? jlen(compactions) - 1 : 0);
        CHECKF(jlen(compactions) >= 1 && jpath_str(lastc, "reason") && !strcmp(jpath_str(lastc, "reason"), "overflow") &&
                   jbool(jget(lastc, "willRetry")) == 1 && jbool(jget(lastc, "aborted")) == 0,
               "%s: compactions %.*s", rc->name, (int)info.compactions_json.len,
               info.compactions_json.data ? info.compactions_json.data : "");
    } else {
        CHECK_OSTR(info.compactions_json, "[]");
    }
    json_free(compactions);
    /* The turn holds every run: one agent_start per attempt; pi ends each run (omp holds the
     * failed run's agent_end back), and the last event is the agent's last word. */
    starts = TURN_COUNT_TYPE(t, "agent_start", NULL, 0);
    ends = TURN_COUNT_TYPE(t, "agent_end", last, sizeof last);
    CHECKF(starts == (int)rc->attempts, "%s: %d agent_start in the turn", rc->name, starts);
    if (!f->omp) CHECKF(ends == (int)rc->attempts, "%s: %d agent_end in the turn", rc->name, ends);
    CHECK_STR(last, f->settles ? "agent_settled" : "agent_end");
    if (!strcmp(rc->then, "retry")) {
        jval *end = turn_event(t, "auto_retry_end", NULL, 0);
        CHECKF(end && jbool(jget(end, "success")) == 1, "%s: auto_retry_end {success:true} in the turn", rc->name);
        json_free(end);
    }
    {
        /* The failed attempt's error message: streamed (message_end) in the turn's events, and
         * among the turn's messages (every run's; omp holds the failed run's agent_end back, its
         * messages are the ones it streamed). */
        const omprpc_str *msgs = NULL;
        size_t n = 0, i;
        int errors = 0;
        const omprpc_event_view *evs = NULL;
        size_t nev = 0;
        int streamed_errors = 0;
        if (CHECK_OK(omprpc_turn_events(t, &evs, &nev, &err), err))
            for (i = 0; i < nev; i++) {
                jval *v;
                if (!h_str_is(evs[i].event_type, "message_end")) continue;
                v = parse_str(evs[i].json);
                if (jpath_str(v, "message.stopReason") && !strcmp(jpath_str(v, "message.stopReason"), "error"))
                    streamed_errors++;
                json_free(v);
            }
        CHECKF(streamed_errors >= 1, "%s: no message_end with stopReason error among the turn's events", rc->name);
        if (CHECK_OK(omprpc_turn_messages(t, &msgs, &n, &err), err))
            for (i = 0; i < n; i++) {
                jval *m = parse_str(msgs[i]);
                if (jpath_str(m, "stopReason") && !strcmp(jpath_str(m, "stopReason"), "error")) errors++;
                json_free(m);
            }
        CHECKF(errors >= 1, "%s: no error message among the turn's %zu messages", rc->name, n);
    }
    omprpc_turn_free(t);
    printf("  %s %s: %s after %lld ms, %u attempts, %d LLM requests\n", f->label, rc->name, h_outcome_name(want),
           (long long)(h_now_ms() - t0), (unsigned)rc->attempts, at_return - before);
    after_return(c, w, f, at_return);
}

/* prompt_and_wait_turn on a thread of its own, and when it returned. */
typedef struct {
    omprpc_client *c;
    const char *message;
    omprpc_status st;
    omprpc_turn *turn;
    char *err;
    int64_t returned_ms;
    pthread_t th;
} struct_turn;

static void *struct_turn_thread(void *arg) {
    struct_turn *t = (struct_turn *)arg;
    t->st = omprpc_client_prompt_and_wait_turn(t->c, t->message, NULL, REAL_WAIT_MS, &t->turn, &t->err);
    t->returned_ms = h_now_ms();
    return NULL;
}

/* Abort (omprpc_client_abort, from this thread) during the delay before retry `attempt`, while
 * another thread waits in prompt_and_wait_turn: the turn ends at once, ABORTED, the retry
 * cancelled; the agent asks the model nothing more and takes the next prompt. */
static void abort_in_retry_delay(omprpc_client *c, const workspace *w, const agent_facts *f, const char *prompt,
                                 int attempt) {
    struct_turn st;
    omprpc_turn_info info;
    char *err = NULL;
    int64_t t0 = h_now_ms(), seen = 0, aborted_at = 0, delay = 0;
    int requests = 0;
    jval *retry = NULL, *failed;
    drain_events(c);
    memset(&st, 0, sizeof st);
    st.c = c;
    st.message = prompt;
    st.st = OMPRPC_STATUS_PANIC;
    pthread_create(&st.th, NULL, struct_turn_thread, &st);
    for (;;) {
        int64_t left = t0 + 60000 - h_now_ms(); /* pi's three attempts take ~3 s */
        retry = h_wait_event(c, "auto_retry_start", left > 0 ? left : 0);
        if (!retry || jnum(jget(retry, "attempt"), NULL) == attempt) break;
        json_free(retry);
    }
    seen = h_now_ms();
    CHECKF(retry != NULL, "no auto_retry_start for attempt %d", attempt);
    delay = retry ? (int64_t)jnum(jget(retry, "delayMs"), NULL) : 0;
    requests = llm_requests(w);
    aborted_at = h_now_ms();
    CHECK_OK(omprpc_client_abort(c, REAL_WAIT_MS, &err), err);
    pthread_join(st.th, NULL);
    if (!CHECK_OK(st.st, st.err)) {
        json_free(retry);
        return;
    }
    CHECKF(st.returned_ms - seen < delay, "the turn returned %lld ms after the abort, %lld ms into a %lld ms delay",
           (long long)(st.returned_ms - aborted_at), (long long)(st.returned_ms - seen), (long long)delay);
    if (CHECK_OK(omprpc_turn_get_info(st.turn, &info, &err), err)) {
        jval *end = turn_event(st.turn, "auto_retry_end", NULL, 0);
        const jval *lastf;
        CHECKF(info.outcome == OMPRPC_TURN_OUTCOME_ABORTED, "outcome %s", h_outcome_name(info.outcome));
        CHECKF(info.attempts == (uint32_t)attempt, "%u attempts, expected %d", (unsigned)info.attempts, attempt);
        CHECKF(info.settled == (f->settles != 0), "settled %d", (int)info.settled);
        failed = parse_str(info.failed_attempts_json);
        lastf = jat(failed, jlen(failed) ? jlen(failed) - 1 : 0);
        CHECKF((int)jlen(failed) == attempt && jnum(jget(lastf, "attempt"), NULL) == attempt &&
                   jpath_str(lastf, "then") && !strcmp(jpath_str(lastf, "then"), "cancelled"),
               "failedAttempts %.*s", (int)info.failed_attempts_json.len,
               info.failed_attempts_json.data ? info.failed_attempts_json.data : "");
        json_free(failed);
        CHECKF(end && jbool(jget(end, "success")) == 0 && jpath_str(end, "finalError") &&
                   !strcmp(jpath_str(end, "finalError"), "Retry cancelled"),
               "auto_retry_end {success:false, finalError:\"Retry cancelled\"} in the turn");
        json_free(end);
    }
    omprpc_turn_free(st.turn);
    check_idle_state(c, "right after the aborted turn");
    /* No retry follows: past the end of the cancelled delay (omp's 61 s: a moment), the model
     * was not asked again and no run started. */
    h_sleep_ms(f->omp ? 500 : (long)(seen + delay + 300 - h_now_ms() > 300 ? seen + delay + 300 - h_now_ms() : 300));
    CHECKF(llm_requests(w) == requests, "%d LLM requests after the abort", llm_requests(w) - requests);
    {
        jval *start = h_wait_event(c, "agent_start", 0);
        CHECKF(start == NULL, "a run started after the aborted turn");
        json_free(start);
    }
    check_idle_state(c, "after the cancelled delay");
    printf("  %s abort in the delay before retry %d: ABORTED %lld ms after the abort (delay %lld ms), whole case %lld ms\n",
           f->label, attempt, (long long)(st.returned_ms - aborted_at), (long long)delay, (long long)(h_now_ms() - t0));
    json_free(retry);
    second_prompt(c, f);
}

/* The agent's settings for the recovery cases, in its agent directory before it starts. pi
 * retries after 300 ms, 600 ms, 1200 ms (baseDelayMs 300, maxRetries 3): quick, and the abort
 * lands in the third delay, long enough to hit. omp compacts an overflow only with something to
 * keep (keepRecentTokens 10; without it omp gives up); its retry delays are its own. */
static int write_recovery_settings(const workspace *w, const agent_facts *f) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", w->agent_dir, f->omp ? "config.yml" : "settings.json");
    int ok = write_text(path, f->omp ? "{\"compaction\":{\"keepRecentTokens\":10}}\n"
                                     : "{\"retry\":{\"enabled\":true,\"maxRetries\":3,\"baseDelayMs\":300}}\n");
    CHECKF(ok, "writing %s: %s", path, strerror(errno));
    return ok;
}

/* The recovery cases (the script's PI_/OMP_RECOVERY_RULES, the settings above): a retry after a
 * 500, after a 429, overflow recovery (pi before 0.80.4 and omp compact and answer, later pi
 * gives up and settles; omp needs an earlier prompt), then abort in a retry's delay. */
static void recovery_cases(omprpc_client *c, const workspace *w, const agent_facts *f) {
    recovery_case r500 = {"retry after a 500", "fail with 500", "recovered from 500", "500", "retry", 2, 0};
    recovery_case r429 = {"retry after a 429", "fail with 429", "recovered from 429", "429", "retry", 2, 0};
    recovery_case overflow = {"overflow", "overflow now", "recovered after compaction", "maximum context length",
                              "compaction", 2, 1};
    if (f->settles) {
        /* pi 0.80.4 on gives up on an overflow and settles: the failed run is the last. */
        overflow.answer = NULL;
        overflow.then = "none";
        overflow.attempts = 1;
        overflow.compaction = 0;
    }
    recovery_turn(c, w, f, &r500);
    recovery_turn(c, w, f, &r429);
    recovery_turn(c, w, f, &overflow);
    abort_in_retry_delay(c, w, f, "abort my retry", f->omp ? 1 : 3);
}

static omprpc_client *start_real(const char *opts, const char *agent) {
    omprpc_client *c = NULL;
    char *err = NULL;
    int64_t t0 = h_now_ms();
    if (!opts) return NULL; /* ws_options failed (and said so) */
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

/* The bridge extension is loaded and its hello was answered (pi awaits it before its first
 * command; unanswered, start took 10 s more). */
static void pi_check_bridge(omprpc_client *c) {
    char *text = NULL, *err = NULL;
    if (CHECK_OK(omprpc_client_info(c, &text, &err), err)) {
        jval *v = PARSE(text);
        CHECK(jbool(jget(v, "bridgeLoaded")) == 1);
        json_free(v);
        h_strfree(&text);
    }
    if (CHECK_OK(omprpc_client_stderr(c, &text, &err), err)) {
        CHECKF(!strstr(text, "hello not acknowledged"), "the bridge's hello went unanswered: %s", text);
        h_strfree(&text);
    }
}

/* The program that runs pi: OMPRPC_PI_NODE (Node 22: pi 0.80 on needs it), else `node`. */
static const char *pi_node(void) {
    const char *v = getenv("OMPRPC_PI_NODE");
    return v && *v ? v : "node";
}

static void test_real_pi(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_PI_CLI", &missing);
    workspace w;
    omprpc_client *c;
    agent_facts f;
    char *opts, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM or OMPRPC_PI_CLI is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !facts_of(&f, "pi", cli)) return;
    if (ws_new(&w, "pi", llm, PI_SCRIPT) && write_recovery_settings(&w, &f)) {
        char ext[400], args[600], *q_ext;
        snprintf(ext, sizeof ext, "%s/ask.mjs", w.root);
        CHECK(write_text(ext, ASK_EXTENSION));
        q_ext = json_quote(ext);
        snprintf(args, sizeof args, "\"--extension\",%s", q_ext ? q_ext : "null");
        free(q_ext);
        /* The main client: the extension, host_add and host_wait bridged. */
        opts = ws_options(&w, pi_node(), cli, args, HOST_ADD_AND_WAIT);
        c = start_real(opts, "pi");
        free(opts);
        if (c) {
            check_agent_version(c, &f);
            pi_check_bridge(c);
            text_turn(c, &f);
            pi_bash_tool(c);
            host_tool_turn(c, 1);
            pi_ui_dialog(c, &w);
            quiet_command(c, &w);
            pi_abort_during_host_tool(c, &w);
            pi_big_tool_output(c, &w);
            recovery_cases(c, &w, &f);
            queued_follow_up(c);
            pi_steer_then_abort(c, &f); /* last: the parked steer would join the next prompt */
            close_leaves_no_process(c);
            omprpc_client_free(c);
        }
        /* Start options: a client of its own (same workspace) with the policy gate's rules and
         * turn_idle_timeout_ms. */
        opts = ws_options(&w, pi_node(), cli, NULL, POLICY_RULES ",\"turn_idle_timeout_ms\":4000," HOST_ADD(""));
        c = start_real(opts, "pi (policy rules, turn_idle_timeout_ms 4000)");
        free(opts);
        if (c) {
            pi_policy_rules(c, &w);
            silent_host_tool(c);
            CHECK_OK(omprpc_client_close(c, &err), err);
            omprpc_client_free(c);
        }
        /* The gate in host mode, and no host tools: tool_policy alone loads the bridge. */
        opts = ws_options(&w, pi_node(), cli, NULL, "\"tool_policy\":{\"mode\":\"host\"}");
        c = start_real(opts, "pi (policy host)");
        free(opts);
        if (c) {
            check_agent_version(c, &f);
            pi_check_bridge(c);
            pi_policy_host(c, &w);
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
    agent_facts f;
    char *opts, *info = NULL, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM, OMPRPC_OMP_CLI or OMPRPC_BUN is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !bun || !facts_of(&f, "omp", cli)) return;
    if (ws_new(&w, "omp", llm, OMP_SCRIPT) && write_recovery_settings(&w, &f)) {
        char ext[400], args[600], *q_ext;
        snprintf(ext, sizeof ext, "%s/ask.mjs", w.root);
        CHECK(write_text(ext, ASK_EXTENSION));
        q_ext = json_quote(ext);
        snprintf(args, sizeof args, "\"--extension\",%s", q_ext ? q_ext : "null");
        free(q_ext);
        /* loadMode "essential": omp offers the host tool to the model directly. The idle
         * timeout (4 s) is shorter than the silent host tool's work; no other turn here is
         * that quiet. */
        opts = ws_options(&w, bun, cli, args, "\"turn_idle_timeout_ms\":4000," HOST_ADD(",\"loadMode\":\"essential\""));
        c = start_real(opts, "omp");
        free(opts);
        if (c) {
            if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
                jval *v = PARSE(info);
                const jval *argv = jget(v, "argv");
                size_t i, extensions = 0;
                for (i = 0; i < jlen(argv); i++)
                    if (jstr(jat(argv, i)) && !strcmp(jstr(jat(argv, i)), "--extension")) extensions++;
                /* Only this program's extension: host tools are native on omp, no bridge. */
                CHECKF(extensions == 1 && jbool(jget(v, "bridgeLoaded")) == 0, "no bridge on omp: %s", info);
                json_free(v);
                h_strfree(&info);
            }
            check_agent_version(c, &f);
            text_turn(c, &f);
            host_tool_turn(c, 0);
            silent_host_tool(c);
            quiet_command(c, &w);
            queued_follow_up(c);
            omp_steer_then_abort(c, &f);
            recovery_cases(c, &w, &f);
            omp_compaction_handoff(c);
            close_leaves_no_process(c);
            omprpc_client_free(c);
        }
    }
    ws_free(&w);
}

/* The previous pi (OMPRPC_PI_PREVIOUS_CLI, 0.73.1, run by `node`): the recovery cases only, on
 * a client of its own. */
static void test_recovery_pi_previous(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_PI_PREVIOUS_CLI", &missing);
    agent_facts f;
    workspace w;
    omprpc_client *c;
    char *opts, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM or OMPRPC_PI_PREVIOUS_CLI is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !facts_of(&f, "pi (previous)", cli)) return;
    if (ws_new(&w, "pi", llm, PI_PREVIOUS_SCRIPT) && write_recovery_settings(&w, &f)) {
        opts = ws_options(&w, "node", cli, NULL, NULL);
        c = start_real(opts, "pi (previous)");
        free(opts);
        if (c) {
            check_agent_version(c, &f);
            recovery_cases(c, &w, &f);
            CHECK_OK(omprpc_client_close(c, &err), err);
            omprpc_client_free(c);
        }
    }
    ws_free(&w);
}

/* --- the gate on pi 1.x: MCP tools and codemode's inner calls ------------------------------- */

/* A codemode script (single quotes: it travels inside JSON inside C) that tries bash, then the
 * fake MCP server's `secret`, and returns how each went. */
#define MCP_CODE                                                                                        \
    "const out = []; "                                                                                  \
    "try { await tools.bash({command: 'touch ran-inner'}); out.push('bash ran'); } "                    \
    "catch (e) { out.push('bash rejected: ' + e.message); } "                                           \
    "try { const r = await tools.mcp__fake__secret({}); out.push('secret: ' + r.content[0].text); } "   \
    "catch (e) { out.push('secret rejected: ' + e.message); } "                                         \
    "return out.join(' | ');"
#define PI_MCP_SCRIPT                                                                                   \
    "[{\"match\":\"secret please\",\"replies\":[{\"tool_call\":{\"name\":\"mcp__fake__secret\","         \
    "\"arguments\":{}}},{\"text\":\"after: {{last_tool_result}}\"}]},"                                   \
    "{\"match\":\"script please\",\"replies\":[{\"tool_call\":{\"name\":\"codemode\",\"arguments\":"      \
    "{\"code\":\"" MCP_CODE "\"}}},{\"text\":\"after: {{last_tool_result}}\"}]},"                        \
    "{\"match\":\"run forbidden\",\"replies\":[{\"tool_call\":{\"name\":\"bash\",\"arguments\":"          \
    "{\"command\":\"touch ran-forbidden\"}}},{\"text\":\"after: {{last_tool_result}}\"}]}]"

static int same(const char *a, const char *b) {
    return a && !strcmp(a, b);
}

/* The agent dir's mcp.json names the fake MCP server `fake` (`mcp`, exposure `direct`: its tools
 * are declared to the model and callable from codemode), logging to `log` (<root>/mcp.jsonl). */
static void write_mcp_config(const workspace *w, const char *mcp, char *log, size_t cap) {
    char path[400], config[1400], *q_mcp = json_quote(mcp), *q_log;
    snprintf(log, cap, "%s/mcp.jsonl", w->root);
    q_log = json_quote(log);
    snprintf(config, sizeof config,
             "{\"mcpServers\":{\"fake\":{\"command\":%s,\"args\":[\"--log\",%s],\"exposure\":\"direct\"}}}",
             q_mcp ? q_mcp : "null", q_log ? q_log : "null");
    free(q_mcp);
    free(q_log);
    snprintf(path, sizeof path, "%s/mcp.json", w->agent_dir);
    CHECK(write_text(path, config));
}

/* How many tools/call of `tool` the fake MCP server logged (one JSON line per event). */
static int mcp_calls(const char *log, const char *tool) {
    char *text = read_text(log), *line, *save = NULL;
    int n = 0;
    if (!text) return 0; /* the server never started */
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        jval *v = json_parse(line);
        CHECKF(v != NULL, "the MCP log holds a line that is not JSON: %s", line);
        if (v && same(jpath_str(v, "event"), "call") && same(jpath_str(v, "tool"), tool)) n++;
        json_free(v);
    }
    free(text);
    return n;
}

/* The tool_execution_end of the call named `tool` in the turn's events (the first; NULL and a
 * failure without one). */
static const jval *end_of_tool(const jval *turn, const char *tool) {
    const jval *evs = jget(turn, "events");
    int i, n = h_count_type(evs, "tool_execution_end");
    for (i = 0; i < n; i++) {
        const jval *end = h_find_type(evs, "tool_execution_end", i);
        if (same(jpath_str(end, "toolName"), tool)) return end;
    }
    h_fail(__FILE__, __LINE__, "no tool_execution_end of %s in the turn", tool);
    return NULL;
}

/* A policy_eval verdict by tool name, for pi_mcp_gate. */
typedef struct {
    const char *tool;
    int allow;
    const char *reason;
} mcp_verdict;

/* Prompts `message` and answers its policy_eval questions in order (`verdicts`: the tool each
 * must name, and the answer). The first question's call is the parent of the later ones when
 * `nested`: they carry parentToolCallId naming it. Returns the turn (NULL and a failure). */
static jval *gated_turn(omprpc_client *c, const char *message, const mcp_verdict *verdicts, int n, int nested) {
    char *err = NULL, parent[128] = "";
    waited_turn t;
    int i;
    drain_events(c);
    waited_turn_start(&t, c, message);
    for (i = 0; i < n; i++) {
        jval *ev = h_wait_event(c, "policy_eval", REAL_WAIT_MS);
        const char *id = jpath_str(ev, "id"), *call = jpath_str(ev, "toolCallId"),
                   *parent_of = jpath_str(ev, "parentToolCallId");
        if (!ev) {
            h_fail(__FILE__, __LINE__, "%s: no policy_eval #%d for %s", message, i + 1, verdicts[i].tool);
            break;
        }
        CHECK_STR(jpath_str(ev, "toolName"), verdicts[i].tool);
        if (i == 0 || !nested) {
            CHECKF(jget(ev, "parentToolCallId") == NULL, "a call the model made has no parent: %s", parent_of);
            snprintf(parent, sizeof parent, "%s", call ? call : "");
        } else {
            /* pi numbers a nested call <parent>/<n> and names its parent. */
            CHECK_STR(parent_of, parent);
            CHECKF(call && !strncmp(call, parent, strlen(parent)) && call[strlen(parent)] == '/',
                   "nested toolCallId %s under %s", call ? call : "(none)", parent);
        }
        CHECK_OK(omprpc_client_policy_verdict(c, id, verdicts[i].allow, verdicts[i].reason, &err), err);
        json_free(ev);
    }
    return waited_turn_join(&t, c);
}

/* The gate on pi 0.99+ (MCP and codemode): a direct call to the MCP tool, blocked by this
 * program (the server logs no call) and then allowed (it logs one); a codemode script whose bash
 * and MCP calls this program blocks — each question names the codemode call as its parent, the
 * script sees each rejection with the reason, neither tool runs. */
static void pi_mcp_gate(omprpc_client *c, const workspace *w, const char *mcp_log) {
    static const mcp_verdict deny_secret[] = {{"mcp__fake__secret", 0, "host says no"}};
    static const mcp_verdict allow_secret[] = {{"mcp__fake__secret", 1, NULL}};
    static const mcp_verdict script[] = {
        {"codemode", 1, NULL}, {"bash", 0, "no nested shell"}, {"mcp__fake__secret", 0, "no nested secret"}};
    char buf[1024], path[400];
    int64_t t0 = h_now_ms();
    const jval *end;
    jval *t = gated_turn(c, "secret please", deny_secret, 1, 0);
    if (t && (end = end_of_tool(t, "mcp__fake__secret"))) {
        CHECK(jbool(jget(end, "isError")) == 1);
        CHECK_STR(content_text(jpath(end, "result.content"), buf, sizeof buf), "host says no");
    }
    json_free(t);
    CHECKF(mcp_calls(mcp_log, "secret") == 0, "the blocked MCP call reached the server");

    t = gated_turn(c, "script please", script, 3, 1);
    if (t && (end = end_of_tool(t, "codemode"))) {
        const char *out = content_text(jpath(end, "result.content"), buf, sizeof buf);
        CHECKF(strstr(out, "bash rejected: no nested shell") && strstr(out, "secret rejected: no nested secret"),
               "the script's output: %s", out);
    }
    json_free(t);
    snprintf(path, sizeof path, "%s/ran-inner", w->work);
    CHECKF(file_size(path) < 0, "the blocked inner bash ran: %s exists", path);
    CHECKF(mcp_calls(mcp_log, "secret") == 0, "the blocked inner MCP call reached the server");

    t = gated_turn(c, "secret please", allow_secret, 1, 0);
    if (t && (end = end_of_tool(t, "mcp__fake__secret"))) {
        CHECK(jbool(jget(end, "isError")) == 0);
        CHECK_STR(content_text(jpath(end, "result.content"), buf, sizeof buf), "the secret is 42");
    }
    json_free(t);
    CHECKF(mcp_calls(mcp_log, "secret") == 1, "the allowed MCP call: %d calls logged", mcp_calls(mcp_log, "secret"));
    printf("  policy gate over MCP and codemode: %lld ms\n", (long long)(h_now_ms() - t0));
}

/* `--no-extensions` in argv keeps out the extensions pi finds, not the library's `--extension`:
 * the gate says hello (start fails without it) and blocks bash by its rules. */
static void pi_gate_without_extensions(const workspace *w, const char *node, const char *cli, const char *label) {
    char *opts = ws_options(w, node, cli, "\"--no-extensions\"", POLICY_RULES), *err = NULL;
    omprpc_client *c = start_real(opts, label);
    free(opts);
    if (!c) return;
    pi_check_bridge(c);
    pi_policy_rules(c, w);
    CHECK_OK(omprpc_client_close(c, &err), err);
    omprpc_client_free(c);
}

/* pi 0.99+ (OMPRPC_PI_CLI) with the fake MCP server (OMPRPC_FAKE_MCP) in its agent dir's
 * mcp.json, MCP on (start option mcp) and codemode added to its tools; then the gate with
 * --no-extensions on it and on the previous pi (0.73.1). */
static void test_real_pi_gate_mcp(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_PI_CLI", &missing),
               *mcp = env_file("OMPRPC_FAKE_MCP", &missing), *previous;
    agent_facts f;
    workspace w;
    omprpc_client *c;
    char *opts, *err = NULL;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM, OMPRPC_PI_CLI or OMPRPC_FAKE_MCP is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !mcp || !facts_of(&f, "pi", cli)) return;
    if (ws_new(&w, "pi", llm, PI_MCP_SCRIPT)) {
        char mcp_log[400];
        write_mcp_config(&w, mcp, mcp_log, sizeof mcp_log);
        if (!version_at_least(f.version, 0, 99, 0)) {
            printf("  MCP and codemode skipped: pi %s has them from 0.99.0\n", f.version);
        } else {
            opts = ws_options(&w, pi_node(), cli, "\"--tools\",\"+codemode\"", "\"mcp\":true,\"tool_policy\":{\"mode\":\"host\"}");
            c = start_real(opts, "pi (MCP, codemode, policy host)");
            free(opts);
            if (c) {
                pi_check_bridge(c);
                pi_mcp_gate(c, &w, mcp_log);
                CHECK_OK(omprpc_client_close(c, &err), err);
                omprpc_client_free(c);
            }
        }
        pi_gate_without_extensions(&w, pi_node(), cli, "pi (--no-extensions, policy rules)");
        missing = 0;
        previous = env_file("OMPRPC_PI_PREVIOUS_CLI", &missing);
        if (previous) pi_gate_without_extensions(&w, "node", previous, "pi previous (--no-extensions, policy rules)");
        else if (missing) printf("  previous pi skipped: OMPRPC_PI_PREVIOUS_CLI is unset\n");
    }
    ws_free(&w);
}

/* --- what pi loads and reaches beyond what the host names (protocol::scope) -------------------- */

#define SCOPE_SCRIPT                                                                                    \
    "[{\"match\":\"hello\",\"replies\":[{\"text\":\"hi\"}]},"                                           \
    "{\"match\":\"secret\",\"replies\":[{\"tool_call\":{\"name\":\"mcp__fake__secret\",\"arguments\":{}}}," \
    "{\"text\":\"done\"}]}]"

/* Start options that let the library build pi's argv (`executable`: `launcher`, a script that
 * runs the pi under test), so `tools` and the scope options shape it; `extra`: more members. */
static char *built_options(const workspace *w, const char *launcher, const char *extra) {
    const char *path = getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin";
    char *q_l = json_quote(launcher), *q_home = json_quote(w->home), *q_tmp = json_quote(w->tmp),
         *q_dir = json_quote(w->agent_dir), *q_path = json_quote(path), *q_work = json_quote(w->work), *out = NULL;
    if (q_l && q_home && q_tmp && q_dir && q_path && q_work) {
        size_t n = strlen(q_l) + strlen(q_home) + strlen(q_tmp) + strlen(q_dir) + strlen(q_path) + strlen(q_work) +
                   strlen(extra) + 512;
        out = (char *)malloc(n);
        if (out)
            snprintf(out, n,
                     "{\"executable\":%s,\"flavor\":\"pi\",\"model\":\"fake/fake-model\",\"no_session\":true,\"cwd\":%s,"
                     "\"env\":{\"HOME\":%s,\"TMPDIR\":%s,\"PI_CODING_AGENT_DIR\":%s,\"PATH\":%s,\"PI_OFFLINE\":\"1\"},"
                     "\"inherit_env\":false,\"startup_timeout_ms\":%d,\"request_timeout_ms\":60000,\"stop_grace_ms\":5000,%s}",
                     q_l, q_work, q_home, q_tmp, q_dir, q_path, REAL_WAIT_MS, extra);
    }
    if (!out) h_fail(__FILE__, __LINE__, "out of memory");
    free(q_l);
    free(q_home);
    free(q_tmp);
    free(q_dir);
    free(q_path);
    free(q_work);
    return out;
}

/* A prompt whose answer must be `want`. */
static void expect_answer(omprpc_client *c, const char *message, const char *want) {
    char *turn = NULL, *err = NULL;
    jval *t;
    if (!CHECK_OK(omprpc_client_prompt_and_wait(c, message, NULL, REAL_WAIT_MS, &turn, &err), err)) return;
    t = PARSE(turn);
    CHECK_STR(jpath_str(t, "assistantText"), want);
    json_free(t);
    h_strfree(&turn);
}

/* On the pi `cli` (run by `node`): the working directory's `.pi/extensions/marker.ts` writes a
 * marker when it loads and the agent dir's trust.json trusts the directory; the agent dir's
 * mcp.json names the fake MCP server. Started with tools ["bash"] and nothing else, pi loads
 * neither the extension nor the MCP server, and the model's call to the server's tool finds no
 * tool; with trust_project the extension loads. */
static void pi_scope(const char *llm, const char *mcp, const char *node, const char *cli, const char *label) {
    agent_facts f;
    workspace w;
    char path[400], marker[400], mcp_log[400], text[1600], *q, *opts, *err = NULL, *info;
    omprpc_client *c;
    if (!facts_of(&f, label, cli) || !ws_new(&w, "pi", llm, SCOPE_SCRIPT)) {
        ws_free(&w);
        return;
    }
    snprintf(marker, sizeof marker, "%s/marker-loaded", w.root);
    snprintf(path, sizeof path, "%s/.pi", w.work);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/.pi/extensions", w.work);
    CHECK(mkdir(path, 0700) == 0);
    q = json_quote(marker);
    snprintf(text, sizeof text,
             "import { writeFileSync } from \"node:fs\";\nexport default function () { writeFileSync(%s, \"loaded\"); }\n",
             q ? q : "null");
    free(q);
    snprintf(path, sizeof path, "%s/.pi/extensions/marker.ts", w.work);
    CHECK(write_text(path, text));
    {
        char real[PATH_MAX];
        CHECK(realpath(w.work, real) != NULL);
        q = json_quote(real);
        snprintf(text, sizeof text, "{%s:true}", q ? q : "null");
        free(q);
    }
    snprintf(path, sizeof path, "%s/trust.json", w.agent_dir);
    CHECK(write_text(path, text));
    write_mcp_config(&w, mcp, mcp_log, sizeof mcp_log);
    snprintf(path, sizeof path, "%s/pi.sh", w.root);
    snprintf(text, sizeof text, "#!/bin/sh\nexec '%s' '%s' \"$@\"\n", node, cli);
    CHECK(write_text(path, text) && chmod(path, 0755) == 0);

    opts = built_options(&w, path, "\"tools\":[\"bash\"]");
    c = start_real(opts, label);
    free(opts);
    if (c) {
        info = NULL;
        expect_answer(c, "hello", "hi");
        expect_answer(c, "tell me the secret", "done");
        CHECK_OK(omprpc_client_info(c, &info, &err), err);
        if (info) {
            /* pi 0.79 on: --no-approve; before: discovery off. pi 1.0.4 on: --no-mcp. */
            CHECKF(strstr(info, version_at_least(f.version, 0, 79, 0) ? "\"--no-approve\"" : "\"--no-extensions\""),
                   "argv without the trust flag: %s", info);
            if (version_at_least(f.version, 1, 0, 4)) CHECKF(strstr(info, "\"--no-mcp\"") != NULL, "%s", info);
        }
        h_strfree(&info);
        CHECK_OK(omprpc_client_close(c, &err), err);
        omprpc_client_free(c);
    }
    CHECKF(access(marker, F_OK) != 0, "%s: the repository's extension loaded by default", label);
    CHECKF(access(mcp_log, F_OK) != 0, "%s: pi started the MCP server with tools [\"bash\"]", label);

    opts = built_options(&w, path, "\"trust_project\":true");
    c = start_real(opts, label);
    free(opts);
    if (c) {
        expect_answer(c, "hello", "hi");
        CHECK_OK(omprpc_client_close(c, &err), err);
        omprpc_client_free(c);
    }
    CHECKF(access(marker, F_OK) == 0, "%s: trust_project did not load the repository's extension", label);

    if (!version_at_least(f.version, 0, 99, 0)) {
        opts = built_options(&w, path, "\"mcp\":true");
        c = NULL;
        CHECK(omprpc_client_start(opts, &c, &err) == OMPRPC_STATUS_INVALID_ARGUMENT);
        CHECKF(err && strstr(err, "mcp") && strstr(err, "cannot be honoured") && strstr(err, f.version), "the refusal names the version: %s",
               err ? err : "(none)");
        h_strfree(&err);
        free(opts);
        if (c) omprpc_client_free(c);
    }
    ws_free(&w);
}

static void test_real_pi_scope(void) {
    int missing = 0;
    const char *llm = env_file("OMPRPC_FAKE_LLM", &missing), *cli = env_file("OMPRPC_PI_CLI", &missing),
               *mcp = env_file("OMPRPC_FAKE_MCP", &missing), *previous;
    if (missing) {
        printf("  skipped: OMPRPC_FAKE_LLM, OMPRPC_PI_CLI or OMPRPC_FAKE_MCP is unset (make c-real-agents sets them)\n");
        return;
    }
    if (!llm || !cli || !mcp) return;
    pi_scope(llm, mcp, pi_node(), cli, "pi (scope)");
    previous = env_file("OMPRPC_PI_PREVIOUS_CLI", &missing);
    if (previous) pi_scope(llm, mcp, "node", previous, "pi previous (scope)");
    else if (missing) printf("  previous pi skipped: OMPRPC_PI_PREVIOUS_CLI is unset\n");
}

int main(void) {
    /* h_init wants the fake agent, which this program does not use. */
    setenv("OMPRPC_FAKE_AGENT", "(unused)", 0);
    h_init();
    RUN(test_real_pi);
    RUN(test_real_omp);
    RUN(test_recovery_pi_previous);
    RUN(test_real_pi_gate_mcp);
    RUN(test_real_pi_scope);
    return h_summary();
}

package omprpc

// The throw-away workspace of a real-agent test (real_agents_test.go): HOME, an agent
// directory with the provider file (written by ProviderConfig), a working directory, and a
// running omprpc-fake-llm as the model. Plus a recorder of a client's events.
//
// Environment (the Makefile's REAL_AGENT_ENV, passed to the -race run of `make go-tests`):
// OMPRPC_FAKE_LLM (the fake LLM binary); OMPRPC_PI_CLI (the newest pi, 1.6.0: its cli.js, run
// by OMPRPC_PI_NODE, the Node 22 installed beside it, else by `node`); OMPRPC_PI_PREVIOUS_CLI
// (pi 0.73.1, the newest that does not announce settling, run by `node`); OMPRPC_OMP_CLI +
// OMPRPC_BUN (omp runs as `bun cli.js`). Unset: the tests skip, saying so. Set but unusable:
// the tests fail. Each real-agent test logs the agent's version (Info's agentVersion).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// realWait bounds every wait on a real agent: generous, a loaded 2-core machine is slow.
const realWait = 120 * time.Second

// realCtx is a context with the real-agent hang guard.
func realCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), realWait)
	t.Cleanup(cancel)
	return ctx
}

// realEnvFile is the file an environment variable names: "" (and a skip) when unset, a
// failed test when it names nothing.
func realEnvFile(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is unset: the real-agent tests run under `make go-tests` (REAL_AGENT_ENV)", name)
	}
	if st, err := os.Stat(v); err != nil || st.IsDir() {
		t.Fatalf("%s=%s is not a file: %v", name, v, err)
	}
	return v
}

// The real agents a workspace runs: "pi" is the newest pi (OMPRPC_PI_CLI), "pi-previous"
// pi 0.73.1 (OMPRPC_PI_PREVIOUS_CLI), "omp" omp 18.2.3.
const (
	realPi         = "pi"
	realPiPrevious = "pi-previous"
	realOmp        = "omp"
)

// realFlavor is the flavor of a real agent of the constants above.
func realFlavor(agent string) string {
	if agent == realOmp {
		return "omp"
	}
	return "pi"
}

// realLauncher is the agent's launcher words: pi `<OMPRPC_PI_NODE or node> <cli>`, the
// previous pi `node <cli>`, omp `<bun> <cli>`.
func realLauncher(t testing.TB, agent string) []string {
	t.Helper()
	node := func(env string) string {
		if env != "" && os.Getenv(env) != "" {
			return realEnvFile(t, env)
		}
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatalf("pi is set but node is not on PATH: %v", err)
		}
		return node
	}
	switch agent {
	case realPi:
		cli := realEnvFile(t, "OMPRPC_PI_CLI")
		return []string{node("OMPRPC_PI_NODE"), cli}
	case realPiPrevious:
		cli := realEnvFile(t, "OMPRPC_PI_PREVIOUS_CLI")
		return []string{node(""), cli}
	case realOmp:
		cli := realEnvFile(t, "OMPRPC_OMP_CLI")
		return []string{realEnvFile(t, "OMPRPC_BUN"), cli}
	}
	t.Fatalf("unknown agent %q", agent)
	return nil
}

// realWorkspace is one test's directories, provider file and fake LLM.
type realWorkspace struct {
	agent    string // "pi" or "omp": the flavor
	which    string // realPi, realPiPrevious or realOmp
	launcher []string
	root     string
	home     string
	agentDir string
	work     string
	llmLog   string
	port     int
	env      map[string]string
}

// newRealWorkspace makes the workspace for agent and starts the fake LLM with script (its
// rules, see src/bin/omprpc-fake-llm/main.rs). Everything is removed when the test ends,
// after the clients it started (cleanups run last-in first-out).
func newRealWorkspace(t testing.TB, agent string, script any) *realWorkspace {
	t.Helper()
	llm := realEnvFile(t, "OMPRPC_FAKE_LLM")
	launcher := realLauncher(t, agent)
	which, agent := agent, realFlavor(agent)
	root, err := os.MkdirTemp("", "omprpc-go-real-"+which+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("OMPRPC_KEEP_TMP") == "1" {
			t.Logf("kept %s", root)
			return
		}
		_ = os.RemoveAll(root)
	})
	w := &realWorkspace{agent: agent, which: which, launcher: launcher, root: root, home: filepath.Join(root, "home"),
		agentDir: filepath.Join(root, "agent"), work: filepath.Join(root, "work"), llmLog: filepath.Join(root, "llm-requests.jsonl")}
	for _, d := range []string{w.home, w.agentDir, w.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	scriptJSON, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := w.writeFile(t, "llm-script.json", string(scriptJSON))
	w.port = startFakeLLM(t, llm, scriptPath, w.llmLog)

	flavor := agent
	setup, err := ProviderConfig(ProviderOptions{Flavor: Flavor(flavor), Dir: w.agentDir, Providers: map[string]Provider{"fake": {
		BaseURL: fmt.Sprintf("http://127.0.0.1:%d/v1", w.port), API: "openai-completions", APIKey: "fake-key",
		Compat: map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		Models: []any{map[string]any{"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": []string{"text"},
			"contextWindow": 128000, "maxTokens": 4096}},
	}}})
	if err != nil {
		t.Fatalf("ProviderConfig: %v", err)
	}
	wantFile := map[string]string{"pi": "models.json", "omp": "models.yml"}[agent]
	if setup.Model != "fake/fake-model" || setup.File != filepath.Join(w.agentDir, wantFile) {
		t.Fatalf("ProviderConfig wrote %s for model %q", setup.File, setup.Model)
	}
	w.env = map[string]string{"HOME": w.home, "PATH": os.Getenv("PATH")}
	for k, v := range setup.Env {
		w.env[k] = v
	}
	if w.env["PI_CODING_AGENT_DIR"] != w.agentDir {
		t.Fatalf("ProviderConfig env: %v", setup.Env)
	}
	if agent == "pi" {
		w.env["PI_OFFLINE"] = "1"
	}
	return w
}

// startFakeLLM runs omprpc-fake-llm until the test ends; returns its port.
func startFakeLLM(t testing.TB, llm, script, log string) int {
	t.Helper()
	cmd := exec.Command(llm, "--script", script, "--log", log, "--exit-on-eof")
	stdin, err := cmd.StdinPipe() // held open: the server exits at EOF, so it never outlives us
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the fake LLM %s: %v", llm, err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		var port int
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "LISTENING %d", &port); err != nil || port <= 0 {
			t.Fatalf("the fake LLM said %q instead of LISTENING <port>", s)
		}
		return port
	case <-time.After(30 * time.Second):
		t.Fatal("the fake LLM did not say LISTENING within 30 s")
	}
	return 0
}

// writeFile writes name into the workspace; returns its path.
func (w *realWorkspace) writeFile(t testing.TB, name, text string) string {
	t.Helper()
	p := filepath.Join(w.root, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// options are the start options: pi `node <cli> --mode rpc --no-session --offline --model
// fake/fake-model`, omp `<bun> <cli> --mode rpc --no-session --no-title --model
// fake/fake-model`, then extra; the workspace's environment and working directory.
func (w *realWorkspace) options(extra ...string) Options {
	argv := append([]string{}, w.launcher...)
	argv = append(argv, "--mode", "rpc", "--no-session")
	if w.agent == "pi" {
		argv = append(argv, "--offline")
	} else {
		argv = append(argv, "--no-title")
	}
	argv = append(argv, "--model", "fake/fake-model")
	argv = append(argv, extra...)
	env := make(map[string]string, len(w.env))
	for k, v := range w.env {
		env[k] = v
	}
	return Options{Command: argv, Flavor: Flavor(w.agent), Cwd: w.work, Env: env, InheritEnv: InheritNothing,
		StartupTimeout: realWait, RequestTimeout: 60 * time.Second, StopGrace: 5 * time.Second}
}

// start starts the agent with opts (closed when the test ends).
func (w *realWorkspace) start(t testing.TB, opts Options) *Client {
	t.Helper()
	started := time.Now()
	c, err := Start(realCtx(t), opts)
	if err != nil {
		t.Fatalf("starting the real %s: %v", w.agent, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	info, err := c.Info()
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	t.Logf("%s %s was ready after %.1fs", w.agent, jstr(t, info.Raw, "agentVersion"), time.Since(started).Seconds())
	return c
}

// version is the agent's version, as the client probed it (Info's agentVersion).
func realVersion(t testing.TB, c *Client) string {
	t.Helper()
	info, err := c.Info()
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	return jstr(t, info.Raw, "agentVersion")
}

// llmRequests are the request bodies the fake LLM received so far.
func (w *realWorkspace) llmRequests(t testing.TB) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(w.llmLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, json.RawMessage(l))
		}
	}
	return out
}

// eventLog records every event of a client from its start (one All loop for the client's
// life), so a scenario can wait for an event after a mark without seeing older ones.
type eventLog struct {
	mu      sync.Mutex
	evs     []Event
	changed chan struct{} // closed (and replaced) on every append
}

func recordEvents(t testing.TB, c *Client) *eventLog {
	l := &eventLog{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range c.All(ctx) {
			if err != nil {
				return
			}
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// mark is the number of events recorded so far.
func (l *eventLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// waitFor returns the first event at index from or later that matches, and its index.
func (l *eventLog) waitFor(t testing.TB, from int, what string, match func(Event) bool) (int, Event) {
	t.Helper()
	deadline := time.NewTimer(realWait)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i := from; i < len(l.evs); i++ {
			if match(l.evs[i]) {
				ev := l.evs[i]
				l.mu.Unlock()
				return i, ev
			}
		}
		from = len(l.evs)
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s within %v", what, realWait)
		}
	}
}

package omprpc

// Issue 21 through the Go binding, on the real agents (real_workspace_test.go): a prompt ends
// where the agent says it will not go on. The fake LLM fails a call (its "fail" replies) and
// the agent recovers by itself or gives up:
//   - a retry after a 500 and after a 429: one turn, two attempts, the failure recorded;
//   - overflow recovery (a context-length error): pi 0.73.1 and omp compact and answer, pi
//     1.6.0 gives up and settles;
//   - abort in the retry's delay: the turn ends at once, aborted, and no retry follows.
// Each time the call returns after the agent's last run with that run's outcome, the agent
// starts nothing after the call returned, the prompt_complete event agrees with the turn, and a
// second prompt right after is accepted. The binding only exposes what the core decided: these
// check that the typed Turn carries it (Outcome, Attempts, Settled, FailedAttempts,
// Compactions, the summary's record), on pi 1.6.0 (OMPRPC_PI_CLI), pi 0.73.1
// (OMPRPC_PI_PREVIOUS_CLI) and omp 18.2.3.
//
// One client per agent runs every case in turn (an agent's start costs 1-3 s of CPU, the
// suite's real limit on two cores); the agents run in parallel. pi's first retry waits
// baseDelayMs (settings.json: 300 ms), each next one twice as long, so the abort comes in its
// third retry's delay (1.2 s: time to send it); omp's provider layer retries a failing call 11
// times by itself before its session retries, so omp's failures cover 12 requests
// (retry-after-ms: 1 keeps that fast), and its abort comes in a 61 s delay. The measured
// sequences: docs/agents.md and the agents' NOTES.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// versionAtLeast compares dotted versions ("1.6.0" >= "0.80.4").
func versionAtLeast(t testing.TB, v, min string) bool {
	t.Helper()
	parse := func(s string) [3]int {
		var out [3]int
		parts := strings.SplitN(strings.SplitN(s, "-", 2)[0], ".", 3)
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("version %q: %v", s, err)
			}
			out[i] = n
		}
		return out
	}
	a, b := parse(v), parse(min)
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

// piSettles: pi from 0.80.4 announces settling (agent_settled), which ends its prompts.
func piSettles(t testing.TB, version string) bool { return versionAtLeast(t, version, "0.80.4") }

// recoveryAgent is one real agent under test and what its turns end with.
type recoveryAgent struct {
	w       *realWorkspace
	c       *Client
	log     *eventLog
	version string
	settles bool // it announces settling (pi >= 0.80.4)
}

// endType and endOutcome are the last event of its completed turns and their outcome.
func (a *recoveryAgent) endType() string {
	if a.settles {
		return "agent_settled"
	}
	return "agent_end"
}

func (a *recoveryAgent) endOutcome() TurnOutcome {
	if a.settles {
		return TurnAgentSettled
	}
	return TurnAgentEnd
}

// failSpec is the fake LLM's "fail" for a failing call of kind ("http_500", "http_429") on
// agent which: omp's provider layer makes 12 identical requests of one call, fast with
// retry-after-ms: 1; pi's retry ignores retry-after (pi 0.73.1's SDK retries the call twice
// first, honouring retry-after-ms: 1 ms each).
func failSpec(which, kind string) map[string]any {
	f := map[string]any{"kind": kind, "retry_after_ms": 1}
	if which == realOmp {
		f["times"] = 12
	}
	if kind == "http_429" {
		f["retry_after_s"] = 1
		if which == realOmp {
			f["retry_after_s"] = 0
		}
	}
	return f
}

// recoveryScript: a failing call per case; "say hello" gets the default reply, "pong". The
// overflow rule comes first: the compaction's summary request holds the whole conversation,
// and the first rule whose match it contains answers it (that rule's failure is spent).
func recoveryScript(which string) []any {
	rule := func(match string, fail any) any {
		return map[string]any{"match": match, "replies": []any{map[string]any{"text": "recovered", "fail": fail}}}
	}
	// pi: the first three calls fail; pi waits 300, 600, then 1200 ms to retry (baseDelayMs 300,
	// doubled): the abort comes in the third delay, which leaves time to send it.
	abort := map[string]any{"kind": "http_500", "times": 3, "retry_after_ms": 1}
	if which == realOmp {
		// A retry-after above 60 s: omp's provider gives up at once, its session waits 61 s.
		abort = map[string]any{"kind": "http_429", "times": 12, "retry_after_s": 61}
	}
	return []any{
		rule("too long", "context_length"),
		rule("flaky five hundred", failSpec(which, "http_500")),
		rule("flaky rate limited", failSpec(which, "http_429")),
		rule("abort me", abort),
	}
}

// startRecoveryAgent starts agent (realPi, realPiPrevious, realOmp) with the recovery script,
// pi's first retry delay at retryDelay, prompt_complete events and turn summaries, and a
// recorder of its events.
func startRecoveryAgent(t *testing.T, which string, retryDelay time.Duration) *recoveryAgent {
	t.Helper()
	a := &recoveryAgent{w: newRealWorkspace(t, which, recoveryScript(which))}
	switch realFlavor(which) {
	case "pi":
		settings := fmt.Sprintf(`{"retry":{"enabled":true,"maxRetries":3,"baseDelayMs":%d}}`, retryDelay.Milliseconds())
		if err := os.WriteFile(filepath.Join(a.w.agentDir, "settings.json"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	case "omp":
		// Lets omp's summary cut a short conversation, so the overflow compaction makes room
		// (without it omp gives up).
		if err := os.WriteFile(filepath.Join(a.w.agentDir, "config.yml"), []byte(`{"compaction":{"keepRecentTokens":10}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := a.w.options()
	opts.TurnSummary = true
	opts.PromptCompleteEvents = true
	a.c = a.w.start(t, opts)
	a.log = recordEvents(t, a.c)
	a.version = realVersion(t, a.c)
	a.settles = a.w.agent == "pi" && piSettles(t, a.version)
	return a
}

// recoveryTurn runs PromptAndWait(message) and checks what every turn of these must hold: its
// last event is the agent's end (agent_settled where pi announces settling), Settled says so,
// the library's prompt_complete event for it carries its outcome right after that end, and the
// summary (TurnSummary) has the same record of attempts.
func (a *recoveryAgent) turn(t *testing.T, message string, wantOutcome TurnOutcome) *Turn {
	t.Helper()
	from := a.log.mark()
	tr := realTurn(t, a.c, message)
	a.checkTurn(t, tr, from, wantOutcome)
	return tr
}

func (a *recoveryAgent) checkTurn(t *testing.T, tr *Turn, from int, wantOutcome TurnOutcome) {
	t.Helper()
	if tr.Outcome != wantOutcome {
		t.Errorf("%s %s: outcome %v, want %v (failed attempts %+v)", a.w.which, a.version, tr.Outcome, wantOutcome, tr.FailedAttempts)
	}
	evs := tr.TypedEvents()
	if len(evs) == 0 {
		t.Fatal("the turn has no events")
	}
	last := evs[len(evs)-1].Type
	if last != a.endType() {
		t.Errorf("the turn ends with %s, want %s", last, a.endType())
	}
	if tr.Settled != (last == "agent_settled") {
		t.Errorf("Settled %v, the turn ends with %s", tr.Settled, last)
	}
	// The streaming end: prompt_complete for this request, right after the turn's last event.
	i, done := a.log.waitFor(t, from, "prompt_complete for "+tr.RequestID, func(ev Event) bool {
		return ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == tr.RequestID
	})
	if got := jstr(t, done.Raw, "outcome"); got != tr.Outcome.String() {
		t.Errorf("prompt_complete says %q, the turn %v", got, tr.Outcome)
	}
	a.log.mu.Lock()
	before := a.log.evs[i-1]
	a.log.mu.Unlock()
	if before.Type != last {
		t.Errorf("prompt_complete follows %s, not the turn's last event %s", before.Type, last)
	}
	s, err := tr.ParsedSummary()
	if err != nil || s == nil {
		t.Fatalf("summary: %v", err)
	}
	if !s.Complete || s.Attempts != tr.Attempts || len(s.FailedAttempts) != len(tr.FailedAttempts) || len(s.Compactions) != len(tr.Compactions) {
		t.Errorf("summary complete %v attempts %d failed %+v compactions %+v; turn attempts %d failed %+v compactions %+v",
			s.Complete, s.Attempts, s.FailedAttempts, s.Compactions, tr.Attempts, tr.FailedAttempts, tr.Compactions)
	}
	for i := range s.FailedAttempts {
		if i < len(tr.FailedAttempts) && s.FailedAttempts[i] != tr.FailedAttempts[i] {
			t.Errorf("summary failed attempt %+v, turn %+v", s.FailedAttempts[i], tr.FailedAttempts[i])
		}
	}
}

// nothingAfter: once a turn returned the agent starts nothing (not streaming, now and a moment
// later; no new LLM request), and the next prompt is accepted and answered at once.
func (a *recoveryAgent) nothingAfter(t *testing.T) {
	t.Helper()
	requests := len(a.w.llmRequests(t))
	streaming := func() bool {
		st, err := a.c.GetState(realCtx(t))
		if err != nil {
			t.Fatalf("GetState: %v", err)
		}
		return st.IsStreaming
	}
	if streaming() {
		t.Errorf("%s still streams after the turn returned", a.w.which)
	}
	time.Sleep(500 * time.Millisecond)
	if streaming() {
		t.Errorf("%s streams again 500 ms after the turn returned", a.w.which)
	}
	if n := len(a.w.llmRequests(t)) - requests; n != 0 {
		t.Errorf("%s called the model %d time(s) after the turn returned", a.w.which, n)
	}
	next := a.turn(t, "say hello", a.endOutcome())
	if text(next.AssistantText) != "pong" || next.Attempts != 1 || len(next.FailedAttempts) != 0 {
		t.Errorf("the next prompt: %q, attempts %d, failed %+v", text(next.AssistantText), next.Attempts, next.FailedAttempts)
	}
}

// retryCase: the model fails the first call of message with status; the agent retries once
// and answers "recovered", all in one turn.
func (a *recoveryAgent) retryCase(t *testing.T, message, status string, wantDelay time.Duration) {
	tr := a.turn(t, message, a.endOutcome())
	if text(tr.AssistantText) != "recovered" || text(tr.StopReason) != "stop" {
		t.Errorf("the answer after the retry: %q (%s)", text(tr.AssistantText), text(tr.StopReason))
	}
	if tr.Attempts != 2 || len(tr.FailedAttempts) != 1 {
		t.Fatalf("attempts %d, failed %+v", tr.Attempts, tr.FailedAttempts)
	}
	f := tr.FailedAttempts[0]
	if f.Attempt != 1 || f.Then != AttemptRetry || !strings.Contains(f.Error, status) {
		t.Errorf("failed attempt %+v, want attempt 1, then retry, an error with %s", f, status)
	}
	if f.DelayMs <= 0 || (wantDelay > 0 && f.DelayMs != wantDelay.Milliseconds()) {
		t.Errorf("the retry's delay %d ms, want %v", f.DelayMs, wantDelay)
	}
	if n := countType(t, tr.Events, "agent_start"); n != 2 {
		t.Errorf("%d runs in the turn, want 2", n)
	}
	if n := countType(t, tr.Events, "auto_retry_start"); n != 1 {
		t.Errorf("%d auto_retry_start, want 1", n)
	}
	// Both runs' messages: the failed attempt's error (omp: once, though it re-sent the request
	// twelve times), then the answer.
	if got := stopReasons(t, tr.Messages); got != "error,stop" {
		t.Errorf("the turn's messages stop with %s, want error then stop", got)
	}
	a.nothingAfter(t)
}

// overflowCase: a context-length error after earlier prompts. pi 1.x gives up and settles
// with the failed run; pi 0.73.1 and omp compact for the overflow and answer.
func (a *recoveryAgent) overflowCase(t *testing.T) {
	gives := a.settles
	want := a.endOutcome()
	tr := a.turn(t, "too long", want)
	if len(tr.FailedAttempts) == 0 || !strings.Contains(tr.FailedAttempts[0].Error, "maximum context length") {
		t.Fatalf("failed attempts %+v", tr.FailedAttempts)
	}
	f := tr.FailedAttempts[0]
	if gives {
		if tr.Attempts != 1 || f.Then != AttemptNone || text(tr.StopReason) != "error" || len(tr.Compactions) != 0 {
			t.Errorf("pi %s gives up: attempts %d, failed %+v, stop %s, compactions %+v", a.version, tr.Attempts, f, text(tr.StopReason), tr.Compactions)
		}
	} else {
		if tr.Attempts != 2 || f.Then != AttemptCompaction || text(tr.AssistantText) != "recovered" || len(tr.Compactions) == 0 {
			t.Fatalf("%s %s compacts: attempts %d, failed %+v, text %q, compactions %+v", a.w.which, a.version, tr.Attempts, f, text(tr.AssistantText), tr.Compactions)
		}
		for _, c := range tr.Compactions {
			if c.Reason != "overflow" {
				t.Errorf("compaction %+v, want reason overflow", c)
			}
		}
		if last := tr.Compactions[len(tr.Compactions)-1]; !last.WillRetry || last.Aborted {
			t.Errorf("the last compaction %+v: want willRetry, not aborted", last)
		}
	}
	a.nothingAfter(t)
}

// abortCase: abort while the agent waits to retry (PromptAndWait on another goroutine, Abort
// once auto_retry_start for retry number attempt arrived): the turn ends at once, aborted, the
// retry cancelled, and no retry follows (checked past the retry's delay where it is short).
func (a *recoveryAgent) abortCase(t *testing.T, attempt int) {
	from := a.log.mark()
	done := make(chan hangResult, 1)
	go func() {
		tr, err := a.c.PromptAndWait(realCtx(t), "abort me", nil)
		done <- hangResult{tr, err}
	}()
	_, announced := a.log.waitFor(t, from, fmt.Sprintf("auto_retry_start of retry %d", attempt), func(ev Event) bool {
		return ev.Type == "auto_retry_start" && jget(t, ev.Raw, "attempt") == float64(attempt)
	})
	announcedAt := time.Now()
	if err := a.c.Abort(realCtx(t)); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	r := <-done
	took := time.Since(announcedAt)
	if r.err != nil {
		stderr, _ := a.c.Stderr()
		t.Fatalf("the aborted turn: %v\nstderr: %s", r.err, stderr)
	}
	tr := r.tr
	t.Logf("the aborted turn returned %.2fs after %s", took.Seconds(), announced.Raw)
	if tr.Attempts > attempt {
		t.Fatalf("the abort came after the retry started (the agent's delay was too short here): %+v", tr.FailedAttempts)
	}
	if took > 2*time.Second {
		t.Errorf("the aborted turn came back %v after the retry was announced", took)
	}
	// What ends it: pi 1.x settles {aborted:true}; omp ends the run it held open; pi 0.73.1's
	// failed run had ended before it announced the retry, so the cancelled retry is the end.
	wantEnd := map[bool]string{true: "agent_settled", false: "auto_retry_end"}[a.settles]
	if a.w.which == realOmp {
		wantEnd = "agent_end"
	}
	if evs := tr.TypedEvents(); evs[len(evs)-1].Type != wantEnd {
		t.Errorf("the aborted turn ends with %s, want %s", evs[len(evs)-1].Type, wantEnd)
	}
	var wantThens []AttemptThen
	for i := 1; i < attempt; i++ {
		wantThens = append(wantThens, AttemptRetry)
	}
	wantThens = append(wantThens, AttemptCancelled)
	var thens []AttemptThen
	for _, f := range tr.FailedAttempts {
		thens = append(thens, f.Then)
	}
	if tr.Outcome != TurnAborted || tr.Attempts != attempt || fmt.Sprint(thens) != fmt.Sprint(wantThens) {
		t.Errorf("outcome %v, attempts %d, failed %+v; want aborted, %d, %v", tr.Outcome, tr.Attempts, tr.FailedAttempts, attempt, wantThens)
	}
	if tr.Settled != a.settles {
		t.Errorf("Settled %v", tr.Settled)
	}
	ends := 0
	for _, ev := range tr.TypedEvents() {
		if ev.Type == "auto_retry_end" {
			ends++
			if jget(t, ev.Raw, "success") != false || !strings.Contains(jstr(t, ev.Raw, "finalError"), "cancelled") {
				t.Errorf("auto_retry_end %s", ev.Raw)
			}
		}
	}
	if ends != 1 {
		t.Errorf("%d auto_retry_end, want one", ends)
	}
	i, complete := a.log.waitFor(t, from, "prompt_complete for "+tr.RequestID, func(ev Event) bool {
		return ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == tr.RequestID
	})
	if jstr(t, complete.Raw, "outcome") != "aborted" {
		t.Errorf("prompt_complete %s", complete.Raw)
	}
	requests := len(a.w.llmRequests(t))
	if delay := jget(t, announced.Raw, "delayMs").(float64); delay < 5000 {
		// Past the moment the agent would have retried.
		time.Sleep(time.Until(announcedAt.Add(time.Duration(delay)*time.Millisecond + 500*time.Millisecond)))
		if n := len(a.w.llmRequests(t)) - requests; n != 0 {
			t.Errorf("%s called the model %d time(s) after the abort", a.w.which, n)
		}
	}
	a.log.mu.Lock()
	for _, ev := range a.log.evs[i:] {
		if ev.Type == "agent_start" || ev.Type == "auto_retry_start" {
			t.Errorf("after the aborted turn: %s", ev.Raw)
		}
	}
	a.log.mu.Unlock()
	a.nothingAfter(t)
}

// TestRealRecovery: a retry after a 500 and after a 429, overflow recovery, then abort in the
// retry delay, on one client per agent.
func TestRealRecovery(t *testing.T) {
	t.Parallel() // the agents mostly wait: the tests overlap
	for _, which := range []string{realPi, realPiPrevious, realOmp} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			const delay = 300 * time.Millisecond
			a := startRecoveryAgent(t, which, delay)
			wantDelay := delay
			if which == realOmp {
				wantDelay = 0 // omp's own: measured ≈ 420 ms
			}
			t.Run("RetryAfter500", func(t *testing.T) { a.retryCase(t, "flaky five hundred", "500", wantDelay) })
			t.Run("RetryAfter429", func(t *testing.T) { a.retryCase(t, "flaky rate limited", "429", wantDelay) })
			t.Run("Overflow", func(t *testing.T) { a.overflowCase(t) })
			// pi: in its third retry's delay (1.2 s); omp: in its first (61 s).
			attempt := 3
			if which == realOmp {
				attempt = 1
			}
			t.Run("AbortInRetryDelay", func(t *testing.T) { a.abortCase(t, attempt) })
		})
	}
}

package omprpc

// The typed turn's record of attempts (Outcome, Attempts, Settled, FailedAttempts,
// Compactions) against the fake agent: what the library decided, exposed as it is. The real
// agents' sequences: real_recovery_test.go.

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// promptComplete waits for the prompt_complete event of request id (a client started with
// PromptCompleteEvents) on sub, failing the test after the wait bound.
func promptComplete(t testing.TB, sub <-chan Event, id string) Event {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-sub:
			if !ok {
				t.Fatalf("the subscription ended before prompt_complete for %s", id)
			}
			if ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == id {
				return ev
			}
		case <-deadline:
			t.Fatalf("no prompt_complete for %s", id)
		}
	}
}

// A turn's Outcome names the library's outcome (String is the prompt_complete event's and the
// turn JSON's name), and a plain turn records one attempt that did not fail.
func TestTurnOutcomeAndAttempts(t *testing.T) {
	opts := fakeOptions()
	opts.PromptCompleteEvents = true
	opts.TurnSummary = true
	c := start(t, opts)
	sub := c.Events(ctxFor(t))
	for _, tc := range []struct {
		message  string
		outcome  TurnOutcome
		attempts int
	}{
		{"say hello", TurnAgentEnd, 1},
		{"local", TurnNotInvoked, 0},
		{"prompt result", TurnPromptResult, 0}, // a command that ran no agent loop
	} {
		tr := turn(t, c, tc.message)
		ev := promptComplete(t, sub, tr.RequestID)
		if tr.Outcome != tc.outcome || jstr(t, ev.Raw, "outcome") != tr.Outcome.String() {
			t.Errorf("%q: outcome %v (%d), prompt_complete says %s", tc.message, tr.Outcome, int(tr.Outcome), ev.Raw)
		}
		if tr.Attempts != tc.attempts || tr.Settled || tr.FailedAttempts != nil || tr.Compactions != nil {
			t.Errorf("%q: attempts %d settled %v failed %+v compactions %+v", tc.message, tr.Attempts, tr.Settled, tr.FailedAttempts, tr.Compactions)
		}
	}
	for o, want := range map[TurnOutcome]string{TurnAgentEnd: "agent_end", TurnPromptResult: "prompt_result",
		TurnNotInvoked: "not_invoked", TurnAgentSettled: "agent_settled", TurnAborted: "aborted", TurnOutcome(9): "TurnOutcome(9)"} {
		if o.String() != want {
			t.Errorf("TurnOutcome(%d).String() = %q, want %q", int(o), o.String(), want)
		}
	}
}

// fakeRecoveryAgent is one of the fake agent's reproductions: omp 18, pi 0.73.1 (announces
// nothing), pi 1.6.0 (announces settling, answers with dispositions).
type fakeRecoveryAgent struct {
	name    string
	opts    func() Options
	settles bool
	omp     bool
}

var fakeRecoveryAgents = []fakeRecoveryAgent{
	{name: "omp", opts: func() Options { return fakeOptions() }, omp: true},
	{name: "pi-0.73.1", opts: func() Options {
		o := fakeOptions("--flavor", "pi")
		o.Flavor = "pi"
		return o
	}},
	{name: "pi-1.6.0", opts: func() Options {
		o := fakeOptions("--flavor", "pi")
		o.Flavor = "pi"
		o.Env = map[string]string{"OMPRPC_FAKE_VERSION": "1.6.0"}
		return o
	}, settles: true},
}

// fakeRecovery is a started fake agent with a subscription to its events.
type fakeRecovery struct {
	fakeRecoveryAgent
	c   *Client
	sub <-chan Event
}

func startFakeRecovery(t *testing.T, a fakeRecoveryAgent) *fakeRecovery {
	opts := a.opts()
	opts.PromptCompleteEvents = true
	opts.TurnSummary = true
	c := start(t, opts)
	ctx, cancel := context.WithCancel(context.Background()) // for the client's life
	t.Cleanup(cancel)
	return &fakeRecovery{fakeRecoveryAgent: a, c: c, sub: c.Events(ctx)}
}

// next takes events from the subscription up to the first that matches, and returns it.
func (f *fakeRecovery) next(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-f.sub:
			if !ok {
				t.Fatalf("the subscription ended before %s", what)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within %v", what, waitFor)
		}
	}
}

// endOutcome is how its completed turns end.
func (f *fakeRecovery) endOutcome() TurnOutcome {
	if f.settles {
		return TurnAgentSettled
	}
	return TurnAgentEnd
}

// check holds a turn to what every turn must say: outcome want, Settled where the agent
// settles, the prompt_complete event (taken from the subscription, with the events before it)
// with the same outcome, and the summary's record equal to the turn's. Returns the events up to
// prompt_complete.
func (f *fakeRecovery) check(t *testing.T, tr *Turn, want TurnOutcome) []Event {
	t.Helper()
	if tr.Outcome != want {
		t.Errorf("outcome %v, want %v (attempts %d, failed %+v)", tr.Outcome, want, tr.Attempts, tr.FailedAttempts)
	}
	if tr.Settled != f.settles {
		t.Errorf("Settled %v on %s", tr.Settled, f.name)
	}
	var evs []Event
	f.next(t, "prompt_complete for "+tr.RequestID, func(ev Event) bool {
		evs = append(evs, ev)
		return ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == tr.RequestID
	})
	if got := jstr(t, evs[len(evs)-1].Raw, "outcome"); got != tr.Outcome.String() {
		t.Errorf("prompt_complete says %q, the turn %v", got, tr.Outcome)
	}
	s, err := tr.ParsedSummary()
	if err != nil || s == nil {
		t.Fatalf("summary: %v", err)
	}
	if !s.Complete || s.Attempts != tr.Attempts || !sameList(s.FailedAttempts, tr.FailedAttempts) || !sameList(s.Compactions, tr.Compactions) {
		t.Errorf("summary: complete %v attempts %d failed %+v compactions %+v; turn: attempts %d failed %+v compactions %+v",
			s.Complete, s.Attempts, s.FailedAttempts, s.Compactions, tr.Attempts, tr.FailedAttempts, tr.Compactions)
	}
	return evs
}

// nothingAfter: the agent starts nothing after the turn returned, and answers the next prompt.
func (f *fakeRecovery) nothingAfter(t *testing.T) {
	t.Helper()
	// No wait: a retry or compaction still pending would meet the next prompt, which the fake
	// agents reproduce as the real ones behave — pi 1.x and omp refuse it (an error), pi 0.73.1
	// gives it to the pending run (not a one-attempt "pong" turn).
	for _, ev := range queued(f.sub) {
		if ev.Type == "agent_start" || ev.Type == "auto_retry_start" || ev.Type == "compaction_start" || ev.Type == "auto_compaction_start" {
			t.Errorf("after the turn returned: %s", ev.Raw)
		}
	}
	next := turn(t, f.c, "say hello")
	f.check(t, next, f.endOutcome())
	if text(next.AssistantText) != "pong" || next.Attempts != 1 {
		t.Errorf("the next prompt: %q, %d attempt(s)", text(next.AssistantText), next.Attempts)
	}
}

// thens are the failed attempts' Then, in order.
func thens(fs []FailedAttempt) []AttemptThen {
	var out []AttemptThen
	for _, f := range fs {
		out = append(out, f.Then)
	}
	return out
}

// The fake agent's recovery scenarios, on omp, pi 0.73.1 and pi 1.6.0: each is one turn that
// ends after the agent's last run, with that run's outcome and the record of what happened.
func TestFakeRecovery(t *testing.T) {
	t.Parallel() // mostly waiting on the scenarios' delays
	for _, a := range fakeRecoveryAgents {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := startFakeRecovery(t, a)
			retry := func(message, status string) func(t *testing.T) {
				return func(t *testing.T) {
					tr := turn(t, f.c, message)
					f.check(t, tr, f.endOutcome())
					if text(tr.AssistantText) != "recovered" || tr.Attempts != 2 || countType(t, tr.Events, "agent_start") != 2 {
						t.Errorf("%q: %q after %d attempt(s), %d runs", message, text(tr.AssistantText), tr.Attempts, countType(t, tr.Events, "agent_start"))
					}
					if len(tr.FailedAttempts) != 1 {
						t.Fatalf("failed attempts %+v", tr.FailedAttempts)
					}
					if fa := tr.FailedAttempts[0]; fa.Attempt != 1 || fa.Then != AttemptRetry || fa.DelayMs != 100 || !strings.HasPrefix(fa.Error, status) {
						t.Errorf("failed attempt %+v, want 1, retry after 100 ms, %s…", fa, status)
					}
					// Both runs' messages: the failed attempt's error, then the answer.
					if got := stopReasons(t, tr.Messages); got != "error,stop" {
						t.Errorf("the turn's messages stop with %s, want error then stop", got)
					}
					f.nothingAfter(t)
				}
			}
			t.Run("RetryOnce", retry("retry once", "500"))
			t.Run("RateLimited", retry("rate limited", "429"))
			t.Run("Overflow", func(t *testing.T) {
				tr := turn(t, f.c, "overflow")
				f.check(t, tr, f.endOutcome())
				if len(tr.FailedAttempts) != 1 || !strings.Contains(tr.FailedAttempts[0].Error, "maximum context length") {
					t.Fatalf("failed attempts %+v", tr.FailedAttempts)
				}
				if a.settles { // pi 1.x gives up
					if tr.Attempts != 1 || tr.FailedAttempts[0].Then != AttemptNone || text(tr.StopReason) != "error" || tr.Compactions != nil {
						t.Errorf("gave up: attempts %d, failed %+v, stop %q, compactions %+v", tr.Attempts, tr.FailedAttempts, text(tr.StopReason), tr.Compactions)
					}
				} else { // compacts and answers
					if tr.Attempts != 2 || tr.FailedAttempts[0].Then != AttemptCompaction || text(tr.AssistantText) != "recovered" || len(tr.Compactions) == 0 {
						t.Fatalf("compacted: attempts %d, failed %+v, text %q, compactions %+v", tr.Attempts, tr.FailedAttempts, text(tr.AssistantText), tr.Compactions)
					}
					if last := tr.Compactions[len(tr.Compactions)-1]; last.Reason != "overflow" || !last.WillRetry || last.Aborted {
						t.Errorf("the last compaction %+v", last)
					}
				}
				f.nothingAfter(t)
			})
			t.Run("RetriesExhausted", func(t *testing.T) {
				tr := turn(t, f.c, "retries exhausted")
				f.check(t, tr, f.endOutcome())
				got := thens(tr.FailedAttempts)
				if tr.Attempts != 3 || !reflect.DeepEqual(got, []AttemptThen{AttemptRetry, AttemptRetry, AttemptGaveUp}) || text(tr.StopReason) != "error" {
					t.Errorf("attempts %d, thens %v, stop %q", tr.Attempts, got, text(tr.StopReason))
				}
				if d := []int64{tr.FailedAttempts[0].DelayMs, tr.FailedAttempts[1].DelayMs}; d[0] != 100 || d[1] != 200 {
					t.Errorf("retry delays %v, want 100 then 200 ms", d)
				}
				f.nothingAfter(t)
			})
			t.Run("FailedCall", func(t *testing.T) {
				tr := turn(t, f.c, "failed call")
				f.check(t, tr, f.endOutcome())
				if tr.Attempts != 1 || len(tr.FailedAttempts) != 1 || tr.FailedAttempts[0].Then != AttemptNone ||
					!strings.HasPrefix(tr.FailedAttempts[0].Error, "400") || text(tr.StopReason) != "error" {
					t.Errorf("attempts %d, failed %+v, stop %q", tr.Attempts, tr.FailedAttempts, text(tr.StopReason))
				}
				f.nothingAfter(t)
			})
			t.Run("WaitForIdleWaitsForTheRetry", func(t *testing.T) {
				if _, err := f.c.Prompt(ctxFor(t), "retry once", nil); err != nil {
					t.Fatal(err)
				}
				if err := f.c.WaitForIdle(ctxFor(t)); err != nil {
					t.Fatalf("WaitForIdle: %v", err)
				}
				// Every event before the outcome is on the subscription: the retry's answer too.
				evs := queued(f.sub)
				retryEnd := -1
				for i, ev := range evs {
					if ev.Type == "auto_retry_end" {
						retryEnd = i
					}
				}
				if retryEnd < 0 || countTypeEvents(evs, "agent_start") != 2 {
					t.Errorf("when WaitForIdle returned: auto_retry_end at %d, %d runs", retryEnd, countTypeEvents(evs, "agent_start"))
				}
				f.nothingAfter(t)
			})
			t.Run("CollectEventsWaitsForTheRetry", func(t *testing.T) {
				id, err := f.c.Prompt(ctxFor(t), "rate limited", nil)
				if err != nil {
					t.Fatal(err)
				}
				evs, err := f.c.CollectEvents(ctxFor(t))
				if err != nil {
					t.Fatalf("CollectEvents: %v", err)
				}
				var types []string
				for _, ev := range evs {
					if jget(t, ev.Raw, "omprpc") != true {
						types = append(types, ev.Type)
					}
				}
				want := "agent_end"
				if f.settles {
					want = "agent_settled"
				}
				if len(types) == 0 || types[len(types)-1] != want || !strings.Contains(strings.Join(types, ","), "auto_retry_end") {
					t.Errorf("CollectEvents: %v, want through auto_retry_end to %s", types, want)
				}
				f.next(t, "prompt_complete for "+id, func(ev Event) bool {
					return ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == id
				})
				f.nothingAfter(t)
			})
			t.Run("DeadlineInRetryDelayEndsTheWaitOnly", func(t *testing.T) {
				// A context ends the call's wait, never the agent's work: the retry still
				// pends until Abort. The deadline outlasts the prompt's acknowledgement and the
				// failed attempt, and ends in the retry's 60 s delay.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, err := f.c.PromptAndWait(ctx, "retry until abort", nil)
				if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("PromptAndWait past its deadline: %v", err)
				}
				idle, cancelIdle := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancelIdle()
				if err := f.c.WaitForIdle(idle); err == nil {
					t.Fatal("WaitForIdle returned while the agent waits to retry")
				}
				if err := f.c.Abort(ctxFor(t)); err != nil {
					t.Fatalf("Abort: %v", err)
				}
				at := time.Now()
				if err := f.c.WaitForIdle(ctxFor(t)); err != nil {
					t.Fatalf("WaitForIdle after Abort: %v", err)
				}
				if took := time.Since(at); took > 2*time.Second {
					t.Errorf("idle %v after Abort", took)
				}
				// The prompt the deadline left completed with nobody waiting, at the abort.
				ev := f.next(t, "prompt_complete", func(ev Event) bool { return ev.Type == "prompt_complete" })
				if got := jstr(t, ev.Raw, "outcome"); got != "aborted" {
					t.Errorf("the prompt ended %s", ev.Raw)
				}
				f.nothingAfter(t)
			})
			for _, how := range []string{"Abort", "AbortRetry"} {
				t.Run("RetryUntil"+how, func(t *testing.T) {
					done := make(chan hangResult, 1)
					go func() {
						tr, err := f.c.PromptAndWait(ctxFor(t), "retry until abort", nil)
						done <- hangResult{tr, err}
					}()
					f.next(t, "auto_retry_start", func(ev Event) bool { return ev.Type == "auto_retry_start" })
					at := time.Now()
					var err error
					if how == "Abort" {
						err = f.c.Abort(ctxFor(t))
					} else {
						err = f.c.AbortRetry(ctxFor(t))
					}
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					r := <-done
					if r.err != nil {
						t.Fatalf("the turn: %v", r.err)
					}
					// The retry's delay is 60 s: the turn ended at the abort.
					if took := time.Since(at); took > 2*time.Second {
						t.Errorf("the turn returned %v after %s", took, how)
					}
					tr := r.tr
					// Aborted either way (pi 1.x settles {aborted:false} after abort_retry: the
					// cancelled retry decides).
					evs := f.check(t, tr, TurnAborted)
					if tr.Attempts != 1 || len(tr.FailedAttempts) != 1 || tr.FailedAttempts[0].Then != AttemptCancelled || tr.FailedAttempts[0].DelayMs != 60000 {
						t.Errorf("attempts %d, failed %+v", tr.Attempts, tr.FailedAttempts)
					}
					if countTypeEvents(evs, "agent_start") != 0 {
						t.Errorf("a run started after the retry was announced")
					}
					f.nothingAfter(t)
				})
			}
		})
	}
}

// stopReasons are the stopReasons of the messages that have one, joined with commas.
func stopReasons(t testing.TB, messages []AgentMessageValue) string {
	t.Helper()
	var out []string
	for _, m := range messages {
		if a, ok := m.Value.(*AssistantMessage); ok {
			out = append(out, a.StopReason)
		}
	}
	return strings.Join(out, ",")
}

// sameList: a and b hold equal items (nil and empty alike).
func sameList[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// countTypeEvents counts the events of type typ.
func countTypeEvents(evs []Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

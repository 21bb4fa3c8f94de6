package omprpc

// The typed turn's record of attempts (Outcome, Attempts, Settled, FailedAttempts,
// Compactions) against the fake agent: what the library decided, exposed as it is. The real
// agents' sequences: real_recovery_test.go.

import (
	"testing"
)

// promptComplete waits for the prompt_complete event of request id (a client started with
// PromptCompleteEvents) on sub, failing the test after the wait bound.
func promptComplete(t testing.TB, sub <-chan Event, id string) Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-sub:
			if !ok {
				t.Fatalf("the subscription ended before prompt_complete for %s", id)
			}
			if ev.Type == "prompt_complete" && jstr(t, ev.Raw, "requestId") == id {
				return ev
			}
		case <-ctxFor(t).Done():
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

package omprpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The activity model against the fake agent's reproductions of real agents: a steer that
// outlives an abort (omp runs it by itself, pi parks it), omp's compaction handoff, an
// extension /command that starts no run, and TurnIdleTimeout standing still while a host
// tool runs.

func startPi(t *testing.T) *Client {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	return start(t, o)
}

// messageHasText: a content item of the agent message msg (JSON) has this text.
func messageHasText(msg any, text string) bool {
	m, _ := msg.(map[string]any)
	switch content := m["content"].(type) {
	case string:
		return content == text
	case []any:
		for _, c := range content {
			if item, _ := c.(map[string]any); item != nil && item["text"] == text {
				return true
			}
		}
	}
	return false
}

// queued takes the events already on ch, without waiting.
func queued(ch <-chan Event) []Event {
	var out []Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// steerThenAbort prompts "stream until abort", steers during the live run, aborts it.
func steerThenAbort(t *testing.T, c *Client) {
	t.Helper()
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "stream until abort", nil); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	if err := c.Steer(ctx, "steer me now"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	if err := c.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
}

// agentEnds are the agent_end events among evs, and whether one of them carries "steered ok".
func agentEnds(t *testing.T, evs []Event) (n int, steered bool) {
	t.Helper()
	for _, ev := range evs {
		if ev.Type != "agent_end" {
			continue
		}
		n++
		msgs, _ := jget(t, ev.Raw, "messages").([]any)
		for _, m := range msgs {
			if messageHasText(m, "steered ok") {
				steered = true
			}
		}
	}
	return n, steered
}

func TestActivityOmpSteerAfterAbortRunsBeforeIdle(t *testing.T) {
	c := startFake(t)
	sub, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.Events(sub)
	steerThenAbort(t, c)
	t0 := time.Now()
	if err := c.WaitForIdle(ctxFor(t)); err != nil {
		t.Fatalf("WaitForIdle after the abort: %v", err)
	}
	if d := time.Since(t0); d >= waitFor {
		t.Fatalf("WaitForIdle took %v", d)
	}
	// every event queued before WaitForIdle returned is on the channel by now
	evs := queued(events)
	n, steered := agentEnds(t, evs)
	if !steered || n != 2 {
		t.Fatalf("when WaitForIdle returned: %d agent_end, steered run ended: %v (%d events)", n, steered, len(evs))
	}
	steering := false
	for _, ev := range evs {
		var m struct {
			Message map[string]any `json:"message"`
		}
		if ev.Type == "message_end" && ev.Decode(&m) == nil && m.Message["steering"] == true &&
			messageHasText(m.Message, "steer me now") {
			steering = true
		}
	}
	if !steering {
		t.Fatal("no user message_end with steering:true")
	}
	if err := c.WaitForIdle(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if tr := turn(t, c, "say hello"); text(tr.AssistantText) != "pong" {
		t.Fatalf("the next prompt: %q", text(tr.AssistantText))
	}
}

func TestActivityPiParkedSteerIsIdle(t *testing.T) {
	c := startPi(t)
	sub, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.Events(sub)
	steerThenAbort(t, c)
	t0 := time.Now()
	if err := c.WaitForIdle(ctxFor(t)); err != nil {
		t.Fatalf("WaitForIdle with a parked steer: %v", err)
	}
	if d := time.Since(t0); d >= waitFor {
		t.Fatalf("WaitForIdle took %v", d)
	}
	state, err := c.GetState(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if state.PendingMessageCount != 1 || state.IsStreaming {
		t.Fatalf("state: %s", state.Raw)
	}
	if n, steered := agentEnds(t, queued(events)); n != 1 || steered {
		t.Fatalf("%d agent_end, steered run: %v (want the abort's only)", n, steered)
	}
}

func TestActivityOmpHandoffCompletes(t *testing.T) {
	c := startFake(t)
	tr := turn(t, c, "handoff")
	if countType(t, tr.Events, "auto_compaction_start") == 0 {
		t.Fatal("no auto_compaction_start in the turn")
	}
	end := findType(t, tr.Events, "agent_end", 0)
	if end == nil || jget(t, end, "isTerminal") != false || countType(t, tr.Events, "agent_end") != 1 {
		t.Fatalf("the turn's agent_end: %s", end)
	}
	if text(tr.AssistantText) != "got it" {
		t.Fatalf("assistant text %q", text(tr.AssistantText))
	}
	if err := c.WaitForIdle(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
}

func TestActivityNoopCommand(t *testing.T) {
	for _, flavor := range []string{"omp", "pi"} {
		t.Run(flavor, func(t *testing.T) {
			var c *Client
			if flavor == "pi" {
				c = startPi(t)
			} else {
				c = startFake(t)
			}
			tr := turn(t, c, "/noop")
			if tr.AgentInvoked || countType(t, tr.Events, "agent_start") != 0 {
				t.Fatalf("/noop ran the agent: %+v", tr)
			}
			if err := c.WaitForIdle(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestActivityIdleTimeoutStandsStillForASlowHostTool(t *testing.T) {
	var calls atomic.Int32
	o := fakeOptions()
	o.TurnIdleTimeout = time.Second
	o.HostTools = []HostTool{echoTool(func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		calls.Add(1)
		time.Sleep(1500 * time.Millisecond) // the scenario: the host answers after the idle timeout
		return TextResult("late answer"), nil
	})}
	c := start(t, o)
	tr := turn(t, c, "needs host tool")
	end := findType(t, tr.Events, "tool_execution_end", 0)
	if end == nil || jstr(t, end, "result.content.0.text") != "late answer" {
		t.Fatalf("tool_execution_end: %s", end)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d handler calls", calls.Load())
	}
}

func TestActivityIdleTimeoutStillFailsAHang(t *testing.T) {
	o := fakeOptions()
	o.TurnIdleTimeout = 300 * time.Millisecond
	c := start(t, o)
	t0 := time.Now()
	_, err := c.PromptAndWait(ctxFor(t), "hang", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("hang: %v, want ErrTimeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || time.Since(t0) >= waitFor {
		t.Fatalf("the idle timeout did not fire: the test's own deadline ended the wait (%v)", err)
	}
}

// A follow_up queued while the model streams runs in the same run, after the answer: the
// agent is busy until that run's terminal agent_end, and WaitForIdle waits for it.
func TestActivityQueuedFollowUpRunsBeforeIdle(t *testing.T) {
	for _, flavor := range []string{"omp", "pi"} {
		t.Run(flavor, func(t *testing.T) {
			var c *Client
			if flavor == "pi" {
				c = startPi(t)
			} else {
				c = startFake(t)
			}
			sub, cancel := context.WithCancel(context.Background())
			defer cancel()
			events := c.Events(sub)
			ctx := ctxFor(t)
			if _, err := c.Prompt(ctx, "stream until abort", nil); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			for delta := false; !delta; {
				select {
				case ev, ok := <-events:
					if !ok {
						t.Fatal("the events ended before a text_delta")
					}
					delta = ev.Type == "message_update" && jstr(t, ev.Raw, "assistantMessageEvent.type") == "text_delta"
				case <-ctx.Done():
					t.Fatal("no text_delta from the streaming run")
				}
			}
			if err := c.FollowUp(ctx, "follow me"); err != nil {
				t.Fatalf("FollowUp: %v", err)
			}
			if err := c.WaitForIdle(ctxFor(t)); err != nil {
				t.Fatalf("WaitForIdle: %v", err)
			}
			// every event queued before WaitForIdle returned is on the channel by now
			var ends []Event
			for _, ev := range queued(events) {
				if ev.Type == "agent_end" {
					ends = append(ends, ev)
				}
			}
			if len(ends) != 1 {
				t.Fatalf("%d agent_end events before WaitForIdle returned, want 1", len(ends))
			}
			msgs, _ := jget(t, ends[0].Raw, "messages").([]any)
			if len(msgs) < 2 || !messageHasText(msgs[1], "followed ok") {
				t.Fatalf("the agent_end before idle: %s", ends[0].Raw)
			}
		})
	}
}

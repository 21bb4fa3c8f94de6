package omprpc

// The real-agent scenarios of tests/real_pi.rs and tests/real_omp.rs through the Go binding:
// the real pi (the newest, 1.6.0: OMPRPC_PI_CLI) and omp 18.2.3, offline, with
// omprpc-fake-llm as the model (workspace: real_workspace_test.go; retries, overflow and
// abort in the retry delay on pi 1.6.0, pi 0.73.1 and omp: real_recovery_test.go). One pi client serves every scenario that does not change its
// options; the policy gate and the idle timeout (start options) share their own; omp is one
// client (it is slow to start), plus one for the idle timeout and one for the compaction
// handoff (its huge prompt stays in the session).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realTurnText joins the text parts of a result's or message's content.
func realContentText(t testing.TB, raw []byte, path string) string {
	t.Helper()
	parts, _ := jget(t, raw, path).([]any)
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// realOne is the only event of type typ in the turn (the test fails otherwise).
func realOne(t testing.TB, tr *Turn, typ string) json.RawMessage {
	t.Helper()
	if n := countType(t, tr.Events, typ); n != 1 {
		t.Fatalf("expected one %s event, got %d", typ, n)
	}
	return findType(t, tr.Events, typ, 0)
}

// realTurn runs PromptAndWait with the hang guard.
func realTurn(t testing.TB, c *Client, message string) *Turn {
	t.Helper()
	started := time.Now()
	tr, err := c.PromptAndWait(realCtx(t), message, nil)
	if err != nil {
		stderr, _ := c.Stderr()
		t.Fatalf("PromptAndWait(%q): %v\nstderr: %s", message, err, stderr)
	}
	t.Logf("turn %q took %.1fs", message, time.Since(started).Seconds())
	return tr
}

// realCloseLeavesNoProcess closes c and checks that the agent and its process group are gone.
func realCloseLeavesNoProcess(t testing.TB, c *Client) {
	t.Helper()
	info, err := c.Info()
	if err != nil || info.PID <= 0 {
		t.Fatalf("Info: %+v, %v", info, err)
	}
	if exists, err := processExists(info.PID); !exists {
		t.Fatalf("the agent (pid %d) is not running before Close: %v", info.PID, err)
	}
	started := time.Now()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %.1fs", time.Since(started).Seconds())
	// Close returns once the agent is gone and reaped: no process, no zombie, no group.
	if exists, err := processExists(info.PID); exists || err != nil {
		t.Errorf("the agent (pid %d) is still there after Close: %v", info.PID, err)
	}
	if exists, err := processGroupExists(info.PID); exists || (err != nil && !errors.Is(err, errors.ErrUnsupported)) {
		t.Errorf("the agent's process group %d still has members after Close: %v", info.PID, err)
	}
	if after, err := c.Info(); err != nil || !after.Closed {
		t.Errorf("Info after Close: %+v, %v", after, err)
	}
}

// realHelloAcknowledged: the bridge extension's hello got its answer (pi awaits it before
// it answers its first command; unanswered, start took 10 s more).
func realHelloAcknowledged(t testing.TB, c *Client) {
	t.Helper()
	if stderr, _ := c.Stderr(); strings.Contains(stderr, "hello not acknowledged") {
		t.Errorf("the bridge's hello went unanswered: %s", stderr)
	}
}

// textDelta matches the assistant's streamed text deltas.
func textDelta(t testing.TB) func(Event) bool {
	return func(ev Event) bool {
		return ev.Type == "message_update" && jstr(t, ev.Raw, "assistantMessageEvent.type") == "text_delta"
	}
}

const realAskExtension = `
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask for a name",
    handler: async (args, ctx) => {
      const name = await ctx.ui.input("Your name?", "type it");
      ctx.ui.notify("hello " + name, "info");
    },
  });
  pi.registerCommand("quiet", { description: "Does nothing", handler: async () => {} });
}
`

var realAddParams = map[string]any{"type": "object", "properties": map[string]any{
	"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "required": []string{"a", "b"}}

// addHandler serves host_add: an update, then the sum.
func addHandler(calls chan<- HostToolCall) HostToolHandler {
	return func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
		calls <- call
		var args struct{ A, B float64 }
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return ToolResult{}, err
		}
		if err := update("adding…"); err != nil {
			return ToolResult{}, err
		}
		return TextResult(strconv.FormatFloat(args.A+args.B, 'f', -1, 64)), nil
	}
}

// realQueuedFollowUp: a follow_up queued during a slow stream runs in the same run, after the
// answer; WaitForIdle returns after that run's agent_end, which ends with "followed ok".
// hangResult is what PromptAndWait returned for realHangThenSteer's prompt.
type hangResult struct {
	tr  *Turn
	err error
}

// realHangThenSteer prompts "hang please" (the model streams one delta, then hangs) on a
// goroutine, waits for that delta and steers: the caller aborts and reads the turn from done.
// from is the event log's mark before the prompt.
func realHangThenSteer(t *testing.T, c *Client, log *eventLog) (from int, done <-chan hangResult) {
	t.Helper()
	from = log.mark()
	ch := make(chan hangResult, 1)
	go func() {
		tr, err := c.PromptAndWait(realCtx(t), "hang please", nil)
		ch <- hangResult{tr, err}
	}()
	log.waitFor(t, from, "the first text delta", textDelta(t))
	if err := c.Steer(realCtx(t), "steer me now"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	return from, ch
}

func realQueuedFollowUp(t *testing.T, c *Client, log *eventLog) {
	// A subscription of its own: what WaitForIdle guarantees is on it when it returns.
	subCtx, cancelSub := context.WithCancel(context.Background())
	defer cancelSub()
	sub := c.Events(subCtx)
	from := log.mark()
	started := time.Now()
	if _, err := c.Prompt(realCtx(t), "slow please", nil); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	log.waitFor(t, from, "the first text delta", textDelta(t))
	if err := c.FollowUp(realCtx(t), "follow me"); err != nil {
		t.Fatalf("FollowUp: %v", err)
	}
	if err := c.WaitForIdle(realCtx(t)); err != nil {
		stderr, _ := c.Stderr()
		t.Fatalf("WaitForIdle: %v\nstderr: %s", err, stderr)
	}
	t.Logf("the follow-up run ended %.1fs after the prompt", time.Since(started).Seconds())
	var lastEnd json.RawMessage
	for _, ev := range queued(sub) {
		if ev.Type == "agent_end" {
			lastEnd = ev.Raw
		}
	}
	if lastEnd == nil {
		t.Fatal("no agent_end queued when WaitForIdle returned")
	}
	msgs, _ := jget(t, lastEnd, "messages").([]any)
	last, _ := json.Marshal(msgs[len(msgs)-1])
	if got := realContentText(t, last, "content"); got != "followed ok" {
		t.Errorf("the last agent_end before WaitForIdle returned ends with %q, not the follow-up's reply", got)
	}
}

// TestRealPi: the scenarios on one real pi client (bridged host tools, the /ask extension).
// realQuietCommand: an extension command with no work (pi: acknowledged after its handler,
// no run; omp: acknowledged at once, ended by prompt_result) completes PromptAndWait with
// AgentInvoked false, leaves the agent idle and never reaches the model.
func realQuietCommand(t *testing.T, c *Client, w *realWorkspace) {
	t.Helper()
	before := len(w.llmRequests(t))
	tr, err := c.PromptAndWait(realCtx(t), "/quiet", nil)
	if err != nil {
		t.Fatalf("PromptAndWait(/quiet): %v", err)
	}
	if tr.AgentInvoked || tr.AssistantText != nil || countType(t, tr.Events, "agent_start") != 0 {
		t.Errorf("/quiet turn: agentInvoked=%v text=%q events=%d", tr.AgentInvoked, text(tr.AssistantText), len(tr.Events))
	}
	if err := c.WaitForIdle(realCtx(t)); err != nil {
		t.Errorf("WaitForIdle after /quiet: %v", err)
	}
	if n := len(w.llmRequests(t)) - before; n != 0 {
		t.Errorf("/quiet made %d LLM calls", n)
	}
}

// realIncrementalRefused: AddHostTools / RemoveHostTools are refused with want (pi: the core,
// its tools being fixed at start; a stock omp: the agent, which lacks the commands), and the
// registered host_add still reaches its first handler (addCalls), never the refused one.
func realIncrementalRefused(t *testing.T, c *Client, addCalls <-chan HostToolCall, want error) {
	t.Helper()
	refusedCalls := make(chan HostToolCall, 1)
	_, err := c.AddHostTools(realCtx(t), HostTool{Name: "host_add", Description: "Add two numbers", Parameters: realAddParams, Handler: addHandler(refusedCalls)})
	wantErr(t, err, want, "AddHostTools")
	_, err = c.RemoveHostTools(realCtx(t), "host_add")
	wantErr(t, err, want, "RemoveHostTools")
	tr := realTurn(t, c, "add numbers")
	if end := realOne(t, tr, "tool_execution_end"); jget(t, end, "isError") != false || realContentText(t, end, "result.content") != "5" {
		t.Errorf("host_add after the refusals: %s", end)
	}
	select {
	case <-addCalls:
	default:
		t.Error("the registered host_add handler was not called")
	}
	if len(refusedCalls) != 0 {
		t.Error("the refused handler was called")
	}
}

func TestRealPi(t *testing.T) {
	t.Parallel() // the agents mostly wait (start-up): the tests overlap
	script := []any{
		map[string]any{"match": "say hello", "replies": []any{map[string]any{"text": "Hello from the fake model"}}},
		map[string]any{"match": "run bash", "replies": []any{
			map[string]any{"text": "Running it. ", "tool_call": map[string]any{"name": "bash", "arguments": map[string]any{"command": "echo hi-from-bash && pwd"}}},
			map[string]any{"text": "done: {{last_tool_result}}"}}},
		map[string]any{"match": "add numbers", "replies": []any{
			map[string]any{"tool_call": map[string]any{"name": "host_add", "arguments": map[string]any{"a": 2, "b": 3}}},
			map[string]any{"text": "sum is {{last_tool_result}}"}}},
		map[string]any{"match": "hold the tool", "replies": []any{
			map[string]any{"tool_call": map[string]any{"name": "host_hold", "arguments": map[string]any{}}},
			map[string]any{"text": "not reached"}}},
		map[string]any{"match": "big output", "replies": []any{
			map[string]any{"tool_call": map[string]any{"name": "bash", "arguments": map[string]any{"command": "head -c 3000000 /dev/zero | tr '\\0' x"}}},
			map[string]any{"text": "big done"}}},
		map[string]any{"match": "hang", "replies": []any{map[string]any{"text": "thinking about it", "hang": true}}},
		map[string]any{"match": "steer me", "replies": []any{map[string]any{"text": "steered ok"}}},
		map[string]any{"match": "slow", "replies": []any{map[string]any{"text": "one two three four", "chunk_delay_ms": 250}}},
		map[string]any{"match": "follow me", "replies": []any{map[string]any{"text": "followed ok"}}},
	}
	w := newRealWorkspace(t, "pi", script)
	ext := w.writeFile(t, "ask.mjs", realAskExtension)

	addCalls := make(chan HostToolCall, 4)
	held := make(chan HostToolCall, 1)
	released := make(chan error, 1)
	opts := w.options("--extension", ext)
	opts.HostTools = []HostTool{
		{Name: "host_add", Description: "Add two numbers", Parameters: realAddParams, Handler: addHandler(addCalls)},
		{Name: "host_hold", Description: "Holds until cancelled", Parameters: map[string]any{"type": "object", "properties": map[string]any{}},
			Handler: func(ctx context.Context, call HostToolCall, _ func(any) error) (ToolResult, error) {
				held <- call
				<-ctx.Done()
				released <- ctx.Err()
				return ToolResult{}, ctx.Err()
			}},
	}
	c := w.start(t, opts)
	log := recordEvents(t, c)
	realHelloAcknowledged(t, c)
	info, err := c.Info()
	if err != nil || info.Flavor != "pi" || jget(t, info.Raw, "bridgeLoaded") != true || jstr(t, info.Raw, "agentVersion") == "" {
		t.Fatalf("Info: %s, %v", info.Raw, err)
	}

	t.Run("TextTurn", func(t *testing.T) {
		before := len(w.llmRequests(t))
		tr := realTurn(t, c, "say hello")
		if text(tr.AssistantText) != "Hello from the fake model" || !tr.AgentInvoked {
			t.Fatalf("turn: %q agentInvoked=%v", text(tr.AssistantText), tr.AgentInvoked)
		}
		if s := jstr(t, tr.AssistantMessage, "stopReason"); s != "stop" {
			t.Errorf("stopReason %q", s)
		}
		var deltas []string
		for _, ev := range tr.TypedEvents() {
			if textDelta(t)(ev) {
				deltas = append(deltas, jstr(t, ev.Raw, "assistantMessageEvent.delta"))
			}
		}
		if strings.Join(deltas, "|") != "Hello |from |the |fake |model" {
			t.Errorf("deltas %q", deltas)
		}
		// The turn ends with pi's word: agent_settled where pi announces settling.
		wantEnd, wantOutcome := "agent_end", TurnAgentEnd
		if piSettles(t, realVersion(t, c)) {
			wantEnd, wantOutcome = "agent_settled", TurnAgentSettled
		}
		evs := tr.TypedEvents()
		if evs[0].Type != "agent_start" || evs[len(evs)-1].Type != wantEnd {
			t.Errorf("turn runs from %s to %s, want to %s", evs[0].Type, evs[len(evs)-1].Type, wantEnd)
		}
		if tr.Outcome != wantOutcome || tr.Settled != (wantOutcome == TurnAgentSettled) || tr.Attempts != 1 ||
			len(tr.FailedAttempts) != 0 || len(tr.Compactions) != 0 {
			t.Errorf("outcome %v settled %v attempts %d failed %+v compactions %+v", tr.Outcome, tr.Settled, tr.Attempts, tr.FailedAttempts, tr.Compactions)
		}
		reqs := w.llmRequests(t)
		if len(reqs)-before != 1 || jstr(t, reqs[len(reqs)-1], "model") != "fake-model" {
			t.Errorf("LLM requests: %d new", len(reqs)-before)
		}
	})

	t.Run("NativeBashTool", func(t *testing.T) {
		tr := realTurn(t, c, "please run bash")
		start := realOne(t, tr, "tool_execution_start")
		end := realOne(t, tr, "tool_execution_end")
		if jstr(t, start, "toolName") != "bash" || jstr(t, end, "toolCallId") != jstr(t, start, "toolCallId") || jget(t, end, "isError") != false {
			t.Fatalf("start %s\nend %s", start, end)
		}
		want := "hi-from-bash\n" + w.work + "\n"
		if got := realContentText(t, end, "result.content"); got != want {
			t.Errorf("bash result %q, want %q", got, want)
		}
		if text(tr.AssistantText) != "done: "+want {
			t.Errorf("assistant text %q", text(tr.AssistantText))
		}
		if n := len(tr.Messages); n != 4 {
			t.Errorf("%d messages (want user, assistant, toolResult, assistant)", n)
		}
	})

	t.Run("BridgedHostTool", func(t *testing.T) {
		tr := realTurn(t, c, "add numbers")
		select {
		case call := <-addCalls:
			if call.ToolName != "host_add" || !strings.HasPrefix(call.ID, "bridge") || jget(t, call.Arguments, "a") != 2.0 || jget(t, call.Arguments, "b") != 3.0 {
				t.Errorf("handler got %+v (%s)", call, call.Arguments)
			}
		default:
			t.Fatal("the host_add handler was not called")
		}
		upd := realOne(t, tr, "tool_execution_update")
		if got := realContentText(t, upd, "partialResult.content"); got != "adding…" {
			t.Errorf("update %q", got)
		}
		end := realOne(t, tr, "tool_execution_end")
		if jstr(t, end, "toolName") != "host_add" || jget(t, end, "isError") != false || realContentText(t, end, "result.content") != "5" {
			t.Errorf("end %s", end)
		}
		if text(tr.AssistantText) != "sum is 5" {
			t.Errorf("assistant text %q", text(tr.AssistantText))
		}
		var names []string
		for _, tool := range jget(t, w.llmRequests(t)[0], "tools").([]any) {
			names = append(names, tool.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		if !strings.Contains(strings.Join(names, ","), "host_add") {
			t.Errorf("tools offered: %v", names)
		}
	})

	t.Run("IncrementalHostToolsRefused", func(t *testing.T) {
		realIncrementalRefused(t, c, addCalls, ErrInvalidArgument)
	})

	t.Run("UIRoundTrip", func(t *testing.T) {
		from := log.mark()
		done := make(chan error, 1)
		go func() {
			_, err := c.Prompt(realCtx(t), "/ask", nil)
			done <- err
		}()
		req, err := c.NextUIRequest(realCtx(t))
		if err != nil {
			t.Fatalf("NextUIRequest: %v", err)
		}
		if req.Method != "input" || req.Title != "Your name?" || req.Placeholder != "type it" {
			t.Errorf("UI request %s", req.Raw)
		}
		// pi acknowledges /ask only once its handler is done, so after the answer.
		select {
		case err := <-done:
			t.Fatalf("pi acknowledged /ask before its UI request was answered (%v)", err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := c.UISendValue(req.ID, "Alice"); err != nil {
			t.Fatalf("UISendValue: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Prompt(/ask): %v", err)
			}
		case <-time.After(realWait):
			t.Fatal("Prompt(/ask) did not return after the answer")
		}
		_, note := log.waitFor(t, from, "notify", func(ev Event) bool {
			return ev.Type == "extension_ui_request" && jstr(t, ev.Raw, "method") == "notify"
		})
		if jstr(t, note.Raw, "message") != "hello Alice" {
			t.Errorf("notify %s", note.Raw)
		}
		if err := c.WaitForIdle(realCtx(t)); err != nil {
			t.Errorf("WaitForIdle after /ask: %v", err)
		}
	})

	t.Run("QuietCommand", func(t *testing.T) {
		realQuietCommand(t, c, w)
	})

	t.Run("Stream", func(t *testing.T) { realStream(t, c) })

	t.Run("AbortDuringHostTool", func(t *testing.T) {
		before := len(w.llmRequests(t))
		type result struct {
			tr  *Turn
			err error
		}
		done := make(chan result, 1)
		go func() {
			tr, err := c.PromptAndWait(realCtx(t), "hold the tool", nil)
			done <- result{tr, err}
		}()
		select {
		case call := <-held:
			if call.ToolName != "host_hold" {
				t.Errorf("held call %+v", call)
			}
		case <-time.After(realWait):
			t.Fatal("the host_hold handler was never called")
		}
		if err := c.Abort(realCtx(t)); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		select {
		case err := <-released:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the handler's ctx ended with %v", err)
			}
		case <-time.After(realWait):
			t.Fatal("the abort never cancelled the handler's ctx")
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(realWait):
			t.Fatal("the aborted turn never ended")
		}
		if r.err != nil {
			t.Fatalf("aborted turn: %v", r.err)
		}
		if s := jstr(t, r.tr.AssistantMessage, "stopReason"); s != "aborted" {
			t.Errorf("stopReason %q", s)
		}
		end := realOne(t, r.tr, "tool_execution_end")
		if jget(t, end, "isError") != true || jstr(t, end, "toolName") != "host_hold" || realContentText(t, end, "result.content") != "cancelled" {
			t.Errorf("end %s", end)
		}
		if n := len(w.llmRequests(t)) - before; n != 1 {
			t.Errorf("%d LLM calls (the aborted run makes no second one)", n)
		}
	})

	t.Run("BigToolOutput", func(t *testing.T) {
		tr := realTurn(t, c, "big output")
		end := realOne(t, tr, "tool_execution_end")
		if jstr(t, end, "toolName") != "bash" || jget(t, end, "isError") != false {
			t.Errorf("end %.500s", end)
		}
		if text(tr.AssistantText) != "big done" {
			t.Errorf("assistant text %q", text(tr.AssistantText))
		}
		size := 0
		for _, e := range tr.Events {
			size += len(e)
		}
		t.Logf("3 MB of bash output: %d events, %d bytes, result %d bytes", len(tr.Events), size, len(realContentText(t, end, "result.content")))
	})

	t.Run("QueuedFollowUp", func(t *testing.T) {
		realQueuedFollowUp(t, c, log)
	})

	t.Run("SteerAbortParked", func(t *testing.T) {
		from, done := realHangThenSteer(t, c, log)
		_, q := log.waitFor(t, from, "queue_update", func(ev Event) bool { return ev.Type == "queue_update" })
		if s, _ := jget(t, q.Raw, "steering").([]any); len(s) != 1 || s[0] != "steer me now" {
			t.Errorf("queue_update %s", q.Raw)
		}
		if err := c.Abort(realCtx(t)); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("aborted turn: %v", r.err)
		}
		if jstr(t, r.tr.AssistantMessage, "stopReason") != "aborted" || jstr(t, r.tr.AssistantMessage, "errorMessage") != "Request was aborted" || text(r.tr.AssistantText) != "thinking " {
			t.Errorf("aborted turn: %s", r.tr.AssistantMessage)
		}
		// pi parks the steer (pendingMessageCount) and is idle: WaitForIdle returns.
		started := time.Now()
		if err := c.WaitForIdle(realCtx(t)); err != nil {
			t.Fatalf("WaitForIdle with a parked steer: %v", err)
		}
		t.Logf("WaitForIdle returned after %.1fs", time.Since(started).Seconds())
		state, err := c.GetState(realCtx(t))
		if err != nil || state.IsStreaming || state.PendingMessageCount != 1 {
			t.Errorf("state: %+v (%v)", state, err)
		}
		// The next prompt delivers the steer: the model answers it.
		tr := realTurn(t, c, "say hi")
		if text(tr.AssistantText) != "steered ok" {
			t.Errorf("after the parked steer: %q", text(tr.AssistantText))
		}
	})

	t.Run("CloseLeavesNoProcess", func(t *testing.T) {
		realCloseLeavesNoProcess(t, c)
	})
}

// TestRealPiPolicyGate: tool_policy rules block pi's own bash tool; then a bridged host tool
// answered after 5 s of silence outlasts TurnIdleTimeout 4 s (its own client: the gate and
// the idle timeout are start options).
func TestRealPiPolicyGate(t *testing.T) {
	t.Parallel() // the agents mostly wait (start-up): the tests overlap
	script := []any{map[string]any{"match": "run forbidden", "replies": []any{
		map[string]any{"tool_call": map[string]any{"name": "bash", "arguments": map[string]any{"command": "touch ran-forbidden"}}},
		map[string]any{"text": "after: {{last_tool_result}}"}}}, silentAddScript}
	w := newRealWorkspace(t, "pi", script)
	calls := make(chan HostToolCall, 1)
	opts := w.options()
	opts.ToolPolicy = &ToolPolicy{Mode: "rules", Block: map[string]string{"bash": "no shell for you"}, Default: "allow"}
	opts.TurnIdleTimeout = 4 * time.Second
	opts.HostTools = []HostTool{{Name: "host_add", Description: "Add two numbers", Parameters: realAddParams, Handler: silentAddHandler(calls)}}
	c := w.start(t, opts)
	realHelloAcknowledged(t, c)
	tr := realTurn(t, c, "run forbidden")
	end := realOne(t, tr, "tool_execution_end")
	if jstr(t, end, "toolName") != "bash" || jget(t, end, "isError") != true || realContentText(t, end, "result.content") != "no shell for you" {
		t.Errorf("end %s", end)
	}
	if text(tr.AssistantText) != "after: no shell for you" {
		t.Errorf("assistant text %q", text(tr.AssistantText))
	}
	if _, err := os.Stat(w.work + "/ran-forbidden"); err == nil {
		t.Error("the blocked command ran")
	}
	ctx, cancel := context.WithTimeout(context.Background(), realWait)
	defer cancel()
	var blocked json.RawMessage
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatalf("waiting for tool_blocked: %v", err)
		}
		if ev.Type == "tool_blocked" {
			blocked = ev.Raw
			break
		}
	}
	if jstr(t, blocked, "toolName") != "bash" || jstr(t, blocked, "reason") != "no shell for you" {
		t.Errorf("tool_blocked %s", blocked)
	}
	t.Run("SilentBridgedHostTool", func(t *testing.T) {
		realSilentHostTool(t, c, calls, true)
	})
	realCloseLeavesNoProcess(t, c)
}

// TestRealOmp: omp in one client (it takes 3-5 s to start): a text turn, a native host tool
// (loadMode essential, so the model is offered it), steer then abort, close.
func TestRealOmp(t *testing.T) {
	t.Parallel() // the agents mostly wait (start-up): the tests overlap
	script := []any{
		map[string]any{"match": "say hello", "replies": []any{map[string]any{"text": "Hello from the fake model"}}},
		map[string]any{"match": "add numbers", "replies": []any{
			map[string]any{"tool_call": map[string]any{"name": "host_add", "arguments": map[string]any{"a": 2, "b": 3}}},
			map[string]any{"text": "sum is {{last_tool_result}}"}}},
		map[string]any{"match": "hang", "replies": []any{map[string]any{"text": "thinking about it", "hang": true}}},
		map[string]any{"match": "steer me", "replies": []any{map[string]any{"text": "steered ok"}}},
		map[string]any{"match": "slow", "replies": []any{map[string]any{"text": "one two three four", "chunk_delay_ms": 250}}},
		map[string]any{"match": "follow me", "replies": []any{map[string]any{"text": "followed ok"}}},
	}
	w := newRealWorkspace(t, "omp", script)
	ext := w.writeFile(t, "ask.mjs", realAskExtension)
	addCalls := make(chan HostToolCall, 4)
	opts := w.options("--extension", ext)
	opts.HostTools = []HostTool{{Name: "host_add", Description: "Add two numbers", Parameters: realAddParams, LoadMode: "essential", Handler: addHandler(addCalls)}}
	c := w.start(t, opts)
	log := recordEvents(t, c)
	t.Run("Start", func(t *testing.T) {
		info, err := c.Info()
		if err != nil || info.Flavor != "omp" || jstr(t, info.Raw, "agentVersion") != "18.2.3" || info.ProtocolVersion != 2 {
			t.Fatalf("Info: %s, %v", info.Raw, err)
		}
		// Only this test's extension: host tools are native on omp, no bridge.
		if n := strings.Count(strings.Join(info.Argv, " "), "--extension"); n != 1 || jget(t, info.Raw, "bridgeLoaded") != false {
			t.Errorf("no bridge on omp: %v %s", info.Argv, info.Raw)
		}
	})

	t.Run("TextTurn", func(t *testing.T) {
		tr := realTurn(t, c, "say hello")
		if text(tr.AssistantText) != "Hello from the fake model" || !tr.AgentInvoked || jstr(t, tr.AssistantMessage, "stopReason") != "stop" {
			t.Fatalf("turn: %q %s", text(tr.AssistantText), tr.AssistantMessage)
		}
		// omp does not announce settling: its terminal agent_end ends the turn.
		evs := tr.TypedEvents()
		if evs[0].Type != "agent_start" || evs[len(evs)-1].Type != "agent_end" {
			t.Errorf("turn runs from %s to %s", evs[0].Type, evs[len(evs)-1].Type)
		}
		if tr.Outcome != TurnAgentEnd || tr.Settled || tr.Attempts != 1 || len(tr.FailedAttempts) != 0 || len(tr.Compactions) != 0 {
			t.Errorf("outcome %v settled %v attempts %d failed %+v compactions %+v", tr.Outcome, tr.Settled, tr.Attempts, tr.FailedAttempts, tr.Compactions)
		}
	})

	t.Run("Stream", func(t *testing.T) { realStream(t, c) })

	t.Run("NativeHostTool", func(t *testing.T) {
		tr := realTurn(t, c, "add numbers")
		select {
		case call := <-addCalls:
			if call.ToolName != "host_add" || strings.HasPrefix(call.ID, "bridge") || jget(t, call.Arguments, "a") != 2.0 {
				t.Errorf("handler got %+v (%s)", call, call.Arguments)
			}
			if jget(t, call.Raw, "bridged") != nil {
				t.Errorf("a native call is not bridged: %s", call.Raw)
			}
		default:
			t.Fatal("the host_add handler was not called")
		}
		end := realOne(t, tr, "tool_execution_end")
		if jstr(t, end, "toolName") != "host_add" || jget(t, end, "isError") != false || realContentText(t, end, "result.content") != "5" {
			t.Errorf("end %s", end)
		}
		if upd := findType(t, tr.Events, "tool_execution_update", 0); upd == nil || realContentText(t, upd, "partialResult.content") != "adding…" {
			t.Errorf("update %s", upd)
		}
		if text(tr.AssistantText) != "sum is 5" {
			t.Errorf("assistant text %q", text(tr.AssistantText))
		}
	})

	t.Run("IncrementalHostToolsRefused", func(t *testing.T) {
		// 18.2.3 has no add_host_tools / remove_host_tools (tests/support/OMP-NOTES.md)
		realIncrementalRefused(t, c, addCalls, ErrCommandFailed)
	})

	t.Run("QuietCommand", func(t *testing.T) {
		// omp acknowledges a command at once and ends it with prompt_result {agentInvoked:false}.
		realQuietCommand(t, c, w)
	})

	t.Run("QueuedFollowUp", func(t *testing.T) {
		realQueuedFollowUp(t, c, log)
	})

	t.Run("SteerAbortWaitsForSteerRun", func(t *testing.T) {
		// A subscription of its own from here: what WaitForIdle guarantees is on it when it returns.
		subCtx, cancelSub := context.WithCancel(context.Background())
		defer cancelSub()
		sub := c.Events(subCtx)
		_, done := realHangThenSteer(t, c, log)
		if err := c.Abort(realCtx(t)); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("aborted turn: %v", r.err)
		}
		if jstr(t, r.tr.AssistantMessage, "stopReason") != "aborted" || jstr(t, r.tr.AssistantMessage, "errorMessage") != "Interrupted by user" {
			t.Errorf("aborted turn: %s", r.tr.AssistantMessage)
		}
		// omp runs the steer in a run of its own: WaitForIdle returns once that run ended.
		started := time.Now()
		if err := c.WaitForIdle(realCtx(t)); err != nil {
			t.Fatalf("WaitForIdle: %v", err)
		}
		t.Logf("WaitForIdle returned %.1fs after the aborted turn", time.Since(started).Seconds())
		var before []Event
	drain:
		for {
			select {
			case ev := <-sub:
				before = append(before, ev)
			default:
				break drain
			}
		}
		var lastEnd json.RawMessage
		steered := false
		for _, ev := range before {
			switch {
			case ev.Type == "agent_end":
				lastEnd = ev.Raw
			case ev.Type == "message_end" && jstr(t, ev.Raw, "message.role") == "user" && jget(t, ev.Raw, "message.steering") == true:
				steered = true
			}
		}
		if !steered || lastEnd == nil {
			t.Fatalf("before WaitForIdle returned: steer message %v, agent_end %v (%d events)", steered, lastEnd != nil, len(before))
		}
		msgs, _ := jget(t, lastEnd, "messages").([]any)
		last, _ := json.Marshal(msgs[len(msgs)-1])
		if got := realContentText(t, last, "content"); got != "steered ok" {
			t.Errorf("the last agent_end before WaitForIdle returned ends with %q, not the steered reply", got)
		}
		state, err := c.GetState(realCtx(t))
		if err != nil || state.IsStreaming {
			t.Errorf("state after WaitForIdle: %+v (%v)", state, err)
		}
	})

	t.Run("CloseLeavesNoProcess", func(t *testing.T) {
		realCloseLeavesNoProcess(t, c)
	})
}

// silentAddHandler serves host_add after 5 s of silence (no update): longer than the
// TurnIdleTimeout of the clients below.
func silentAddHandler(calls chan<- HostToolCall) HostToolHandler {
	return func(ctx context.Context, call HostToolCall, _ func(any) error) (ToolResult, error) {
		calls <- call
		select {
		case <-time.After(5 * time.Second): // the scenario: the host works silently
		case <-ctx.Done():
			return ToolResult{}, ctx.Err()
		}
		return TextResult("5"), nil
	}
}

// silentAddScript is the model's side of a host_add call.
var silentAddScript = map[string]any{"match": "add numbers", "replies": []any{
	map[string]any{"tool_call": map[string]any{"name": "host_add", "arguments": map[string]any{"a": 2, "b": 3}}},
	map[string]any{"text": "sum is {{last_tool_result}}"}}}

// realSilentHostTool: with TurnIdleTimeout 4 s, the turn outlasts the host's 5 s of silent
// work, because the idle clock stands still while the agent waits on the host.
func realSilentHostTool(t *testing.T, c *Client, calls <-chan HostToolCall, bridged bool) {
	tr := realTurn(t, c, "add numbers")
	select {
	case call := <-calls:
		if strings.HasPrefix(call.ID, "bridge") != bridged {
			t.Errorf("call %+v (bridged: want %v)", call, bridged)
		}
	default:
		t.Fatal("the host_add handler was not called")
	}
	end := realOne(t, tr, "tool_execution_end")
	if jget(t, end, "isError") != false || realContentText(t, end, "result.content") != "5" {
		t.Errorf("end %s", end)
	}
	if text(tr.AssistantText) != "sum is 5" {
		t.Errorf("assistant text %q", text(tr.AssistantText))
	}
}

// TestRealOmpSilentNativeHostTool: a host tool through omp's own host tools (loadMode
// essential) answered after 5 s of silence, with TurnIdleTimeout 4 s.
func TestRealOmpSilentNativeHostTool(t *testing.T) {
	t.Parallel()
	w := newRealWorkspace(t, "omp", []any{silentAddScript})
	calls := make(chan HostToolCall, 1)
	opts := w.options()
	opts.TurnIdleTimeout = 4 * time.Second
	opts.HostTools = []HostTool{{Name: "host_add", Description: "Add two numbers", Parameters: realAddParams, LoadMode: "essential", Handler: silentAddHandler(calls)}}
	realSilentHostTool(t, w.start(t, opts), calls, false)
}

// TestRealOmpCompactionHandoff: a prompt over the compaction threshold makes omp schedule a
// "handoff" compaction; the run ends with a non-terminal agent_end and nothing follows. The
// library notices the silence, probes, and ends the turn there.
func TestRealOmpCompactionHandoff(t *testing.T) {
	t.Parallel()
	w := newRealWorkspace(t, "omp", []any{map[string]any{"match": "big", "replies": []any{map[string]any{"text": "got it"}}}})
	c := w.start(t, w.options())
	big := "big " + strings.Repeat("x", 600*1024) // ~150k tokens by omp's estimate > the 128k window
	tr := realTurn(t, c, big)
	if countType(t, tr.Events, "auto_compaction_start") == 0 {
		t.Errorf("no auto_compaction_start in the turn (%d events)", len(tr.Events))
	}
	evs := tr.TypedEvents()
	if last := evs[len(evs)-1]; last.Type != "agent_end" || jget(t, last.Raw, "isTerminal") != false {
		t.Errorf("the turn ends with %s %s, not the non-terminal agent_end", last.Type, last.Raw)
	}
	if text(tr.AssistantText) != "got it" {
		t.Errorf("assistant text %q", text(tr.AssistantText))
	}
	if err := c.WaitForIdle(realCtx(t)); err != nil {
		t.Errorf("WaitForIdle after the handoff: %v", err)
	}
}

// realStream streams "say hello" (the text as the model sends it, then TurnComplete), then
// "hang" (the model stops mid-answer) cancelled at its first text: the abort reaches the
// agent, the stream ends with context.Canceled, and the next turn runs.
func realStream(t *testing.T, c *Client) {
	var chunks []string
	var done *TurnComplete
	for item, err := range c.Stream(realCtx(t), "say hello") {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch x := item.(type) {
		case *TextChunk:
			chunks = append(chunks, x.Text)
		case *TurnComplete:
			done = x
		}
	}
	if strings.Join(chunks, "") != "Hello from the fake model" || len(chunks) < 2 || done == nil ||
		done.Text == nil || *done.Text != "Hello from the fake model" || done.Usage == nil || done.Outcome == TurnAborted ||
		done.Settled != (done.Outcome == TurnAgentSettled) || !done.AgentInvoked {
		t.Fatalf("streamed %q, then %+v", chunks, done)
	}
	ctx, cancel := context.WithCancel(realCtx(t))
	defer cancel()
	var last error
	for item, err := range c.Stream(ctx, "hang") {
		if err != nil {
			last = err
			continue
		}
		if _, ok := item.(*TextChunk); ok {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("a cancelled stream ended with %v", last)
	}
	if tr := realTurn(t, c, "say hello"); text(tr.AssistantText) != "Hello from the fake model" {
		t.Fatalf("the turn after a cancelled stream: %q", text(tr.AssistantText))
	}
}

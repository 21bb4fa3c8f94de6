package omprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	omprpc "github.com/omprpc/omprpc/bindings/go"
)

// fakeAgent is the repository's fake agent (cargo build), standing in for `omp --mode rpc`.
func fakeAgent() string {
	if p := os.Getenv("OMPRPC_FAKE_AGENT"); p != "" {
		return p
	}
	p, _ := filepath.Abs(filepath.Join("..", "..", "target", "debug", "omprpc-fake-agent"))
	return p
}

// Stream a turn: text as it arrives, tool calls, usage at the end. Ctrl-C cancels ctx, which
// aborts the turn and ends the loop. With a real agent the options would be
// omprpc.Options{Executable: "omp", Model: "…", InheritEnv: omprpc.InheritAllowlist}.
func ExampleClient_Stream() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	for item, err := range c.Stream(ctx, `gated bash {"command":"echo hi"}`) {
		if err != nil {
			fmt.Println("\nstream:", err) // a refused prompt, the agent's exit, Ctrl-C …
			return
		}
		switch it := item.(type) {
		case *omprpc.TextChunk:
			fmt.Print(it.Text)
		case *omprpc.ToolCallRequest:
			fmt.Printf("[%s %s]\n", it.ToolName, it.Args)
		case *omprpc.ToolCallComplete:
			fmt.Printf("[%s: %s]\n", it.ToolName, it.Outcome)
		case *omprpc.TurnComplete:
			if it.Usage != nil {
				fmt.Printf("\n(%s, %d tokens)\n", it.Outcome, it.Usage.TotalTokens)
			}
		}
	}
	// Output:
	// [bash {"command":"echo hi"}]
	// [bash: success]
	// after: hi
	//
	// (agent_end, 4 tokens)
}

// Start an agent, prompt it, read the turn. With a real agent the options would be
// omprpc.Options{Executable: "omp", Model: "…", InheritEnv: omprpc.InheritAllowlist}.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	turn, err := c.PromptAndWait(ctx, "say hello", nil)
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	fmt.Println(turn.Text(), len(turn.Messages), "message(s)")

	// Every command of the protocol table is a typed method; its data comes back decoded,
	// with the agent's JSON kept in Raw.
	state, err := c.GetState(ctx)
	if err != nil {
		fmt.Println("get_state:", err)
		return
	}
	fmt.Println(state.SessionID)
	// Output:
	// pong 1 message(s)
	// fake-session
}

// Stream a prompt's events with the iterator, up to the library's prompt_complete event for
// that prompt: the agent may go on after an agent_end (a retry after a failed LLM call, an
// overflow compaction, pi's agent_settled), and the library says when it will not.
func ExampleClient_All() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}, PromptCompleteEvents: true})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	id, err := c.Prompt(ctx, "say hello", nil)
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	for ev, err := range c.All(ctx) {
		if err != nil {
			fmt.Println("events:", err)
			return
		}
		switch ev.Type {
		case "message_update":
			var u omprpc.MessageUpdateEvent
			_ = ev.Decode(&u)
			if delta, ok := u.AssistantMessageEvent.TextDelta(); ok {
				fmt.Println("delta:", delta)
			}
		case "prompt_complete":
			var done struct {
				RequestID string `json:"requestId"`
				Outcome   string `json:"outcome"`
			}
			_ = ev.Decode(&done)
			if done.RequestID == id {
				fmt.Println("prompt_complete:", done.Outcome)
				return
			}
		default:
			fmt.Println(ev.Type)
		}
	}
	// Output:
	// ready
	// agent_start
	// turn_start
	// message_start
	// delta: pong
	// message_end
	// turn_end
	// agent_end
	// prompt_complete: agent_end
}

// Read what happened in a turn: the fake agent's model fails the first call with a 500 and
// the agent retries 100 ms later. The turn ends after the retry's answer, and says so.
func ExampleTurn() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	turn, err := c.PromptAndWait(ctx, "retry once", nil)
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	fmt.Println(turn.Outcome, turn.Attempts, "attempts:", turn.Text())
	for _, f := range turn.FailedAttempts {
		fmt.Printf("attempt %d failed (%.3s…), then %s after %d ms\n", f.Attempt, f.Error, f.Then, f.DelayMs)
	}
	// Output:
	// agent_end 2 attempts: recovered
	// attempt 1 failed (500…), then retry after 100 ms
}

// Serve a host tool: the handler runs on its own goroutine for every call.
func ExampleHostTool() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	echo := omprpc.HostTool{
		Name:        "echo_host",
		Description: "Echoes its message",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
		Handler: func(ctx context.Context, call omprpc.HostToolCall, update func(any) error) (omprpc.ToolResult, error) {
			var args struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(call.Arguments, &args); err != nil {
				return omprpc.ToolResult{}, err // sent as an error result
			}
			_ = update("working on " + args.Message)
			return omprpc.TextResult("echo: " + args.Message), nil
		},
	}
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}, HostTools: []omprpc.HostTool{echo}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	turn, err := c.PromptAndWait(ctx, "needs host tool", nil) // the fake agent calls echo_host
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	// The text of a tool result's content blocks (ImageContent and the rest left out).
	text := func(r omprpc.AgentToolResult) string {
		var out string
		for _, block := range r.Content {
			if t, ok := block.Value.(*omprpc.TextContent); ok {
				out += t.Text
			}
		}
		return out
	}
	for _, raw := range turn.Events {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &head)
		typed, err := omprpc.Event{Type: head.Type, Raw: raw}.Typed()
		if err != nil {
			fmt.Println("event:", err)
			return
		}
		switch ev := typed.(type) {
		case *omprpc.ToolExecutionUpdateEvent:
			fmt.Println("update:", text(ev.PartialResult))
		case *omprpc.ToolExecutionEndEvent:
			fmt.Println("result:", text(ev.Result))
		}
	}
	// Output:
	// update: working on hello
	// result: echo: hello
}

// Answer the agent's UI requests: by hand, or headlessly with a policy.
// Serve a host URI scheme: the handler runs on its own goroutine for every read or write.
func ExampleHostURIScheme() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	notes := map[string]string{"memo://notes/today": "buy milk"}
	memo := omprpc.HostURIScheme{
		Scheme:      "memo",
		Description: "The host's notes",
		Handler: func(ctx context.Context, req omprpc.HostURIRequest) (omprpc.HostURIContent, error) {
			text, ok := notes[req.URL]
			if !ok {
				return omprpc.HostURIContent{}, fmt.Errorf("no note at %s", req.URL) // sent as the error
			}
			return omprpc.HostURIContent{Content: text, ContentType: "text/plain"}, nil
		},
	}
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}, HostURISchemes: []omprpc.HostURIScheme{memo}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	turn, err := c.PromptAndWait(ctx, "needs host uri", nil) // the fake agent reads memo://notes/today
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	for _, ev := range turn.TypedEvents() {
		if ev.Type == "host_uri_result_seen" { // the fake agent's echo of the reply
			var seen struct {
				Frame struct {
					Content string `json:"content"`
				} `json:"frame"`
			}
			_ = ev.Decode(&seen)
			fmt.Println("the agent read:", seen.Frame.Content)
		}
	}
	// Output:
	// the agent read: buy milk
}

func ExampleClient_NextUIRequest() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent()}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	if _, err := c.Prompt(ctx, "needs ui", nil); err != nil {
		fmt.Println("prompt:", err)
		return
	}
	req, err := c.NextUIRequest(ctx)
	if err != nil {
		fmt.Println("ui:", err)
		return
	}
	fmt.Println(req.Method, req.Title)
	if err := c.UISendValue(req.ID, "approved"); err != nil {
		fmt.Println("answer:", err)
		return
	}
	if err := c.WaitForIdle(ctx); err != nil {
		fmt.Println("idle:", err)
		return
	}

	// From now on the library answers by itself: confirms with true, the rest cancelled.
	_ = c.SetUIPolicy(&omprpc.UIPolicy{Confirm: omprpc.Ptr(true)})
	turn, err := c.PromptAndWait(ctx, "needs confirm", nil)
	if err != nil {
		fmt.Println("prompt:", err)
		return
	}
	fmt.Println(turn.Text())
	// Output:
	// input Need input
	// ui acknowledged
}

// Register host tools one at a time and take one back (omp protocol 1.1; here the fake agent
// speaking it). The agent answers with every tool registered after the change.
func ExampleClient_AddHostTools() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{fakeAgent(), "--protocol", "1.1"}})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer c.Close()

	object := map[string]any{"type": "object"}
	for _, name := range []string{"lookup", "notify"} {
		answer, err := c.AddHostTools(ctx, omprpc.HostTool{Name: name, Description: "a host tool", Parameters: object,
			Handler: func(ctx context.Context, call omprpc.HostToolCall, update func(any) error) (omprpc.ToolResult, error) {
				return omprpc.TextResult("done"), nil
			}})
		if err != nil {
			fmt.Println("add_host_tools:", err)
			return
		}
		fmt.Println(string(answer))
	}
	answer, err := c.RemoveHostTools(ctx, "lookup")
	if err != nil {
		fmt.Println("remove_host_tools:", err)
		return
	}
	fmt.Println(string(answer))
	// Output:
	// {"toolNames":["lookup"]}
	// {"toolNames":["lookup","notify"]}
	// {"toolNames":["notify"]}
}

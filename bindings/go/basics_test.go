package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestVersionAndABI(t *testing.T) {
	if Version() == "" || Version() == "?" {
		t.Fatalf("Version() = %q", Version())
	}
	if ABIVersion() != HeaderABIVersion || HeaderABIVersion < 1 {
		t.Fatalf("ABIVersion() = %d, header OMPRPC_ABI_VERSION = %d", ABIVersion(), HeaderABIVersion)
	}
	if err := checkABI(); err != nil {
		t.Fatal(err)
	}
	if timeoutInfinite != -1 || timeoutDefault != -2 {
		t.Fatalf("timeouts %d %d", timeoutInfinite, timeoutDefault)
	}
	// a mismatch is refused with a message that says what to do
	err := abiMismatch(HeaderABIVersion, HeaderABIVersion+1)
	wantErr(t, err, ErrInvalidArgument, "abi mismatch")
	if !strings.Contains(err.Error(), "ABI mismatch") || !strings.Contains(err.Error(), fmt.Sprint(HeaderABIVersion+1)) {
		t.Fatalf("mismatch message: %v", err)
	}
}

func TestStatusNamesAndSentinels(t *testing.T) {
	names := []string{"OK", "INVALID_ARGUMENT", "INVALID_JSON", "INVALID_UTF8", "TIMEOUT", "COMMAND_FAILED",
		"PROCESS_EXITED", "CLOSED", "CONCURRENCY", "PROTOCOL", "IO", "NOT_FOUND", "CANCELLED", "LIMIT_EXCEEDED", "PANIC"}
	for i, name := range names {
		if got := Status(i).String(); got != name {
			t.Errorf("Status(%d) = %q, want %q", i, got, name)
		}
	}
	if Status(15).String() != "UNKNOWN" || Status(-1).String() != "UNKNOWN" {
		t.Errorf("unknown statuses: %q %q", Status(15), Status(-1))
	}
	// every failure status maps to its own sentinel, through *Error
	seen := map[error]bool{}
	for s := StatusInvalidArgument; s <= StatusPanic; s++ {
		js := fmt.Sprintf(`{"code":%q,"status":%d,"message":"m"}`, s.String(), int(s))
		err := errorFromJSON("op", s, []byte(js))
		if !errors.Is(err, s.Sentinel()) || seen[s.Sentinel()] {
			t.Errorf("status %s: %v does not match its own sentinel", s, err)
		}
		seen[s.Sentinel()] = true
		var e *Error
		if !errors.As(err, &e) || e.Status != s || e.Code != s.String() || e.Message != "m" || e.Op != "op" {
			t.Errorf("status %s: *Error = %+v", s, e)
		}
		if errors.Is(err, ErrTimeout) != (s == StatusTimeout) {
			t.Errorf("status %s matches ErrTimeout", s)
		}
	}
	if !errors.Is(Status(99).Sentinel(), ErrUnknownStatus) {
		t.Error("unknown status sentinel")
	}
	// COMMAND_FAILED with the agent's details
	err := errorFromJSON("request", StatusCommandFailed,
		[]byte(`{"code":"COMMAND_FAILED","status":5,"message":"set_model: nope","command":"set_model","error":"nope","errorCode":"E1"}`))
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "set_model" || ce.Message != "nope" || ce.Code != "E1" {
		t.Fatalf("CommandError: %#v", err)
	}
	var e *Error
	if !errors.Is(err, ErrCommandFailed) || !errors.As(err, &e) || e.Status != StatusCommandFailed {
		t.Fatalf("CommandError does not unwrap to *Error / ErrCommandFailed: %v", err)
	}
	// no detail at all (out_error is optional)
	err = errorFromJSON("x", StatusTimeout, nil)
	wantErr(t, err, ErrTimeout, "no detail")
	// a context deadline is kept next to the status
	err = withContext(newError("x", StatusTimeout, "late"), context.DeadlineExceeded)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("withContext: %v", err)
	}
	if got := withContext(newError("x", StatusClosed, "c"), context.DeadlineExceeded); errors.Is(got, context.DeadlineExceeded) {
		t.Fatal("withContext marked a non-timeout")
	}
}

func TestOptionsJSON(t *testing.T) {
	js, err := Options{
		Command:         []string{"/bin/agent"},
		Tools:           []string{},
		NoTitle:         Ptr(false),
		StartupTimeout:  1500 * time.Microsecond, // rounded up
		RequestTimeout:  -1,
		TurnTimeout:     2 * time.Second,
		MaxEventHistory: Unlimited(),
		MaxStderrLines:  Ptr(3),
		Env:             map[string]string{"A": "b"},
		UIPolicy:        &UIPolicy{Input: Ptr("typed")},
		HostTools:       []HostTool{{Name: "t", Description: "d", Parameters: map[string]any{"type": "object"}, Handler: echoHandler}},
		Extra:           map[string]any{"stop_grace_ms": 7, "max_frame_bytes": nil},
	}.startJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"command":            []any{"/bin/agent"},
		"tools":              []any{},
		"no_title":           false,
		"startup_timeout_ms": 2.0,
		"request_timeout_ms": -1.0,
		"turn_timeout_ms":    2000.0,
		"max_event_history":  nil,
		"max_stderr_lines":   3.0,
		"env":                map[string]any{"A": "b"},
		"ui_policy":          map[string]any{"confirm": nil, "select": nil, "input": "typed", "editor": nil},
		"host_tools":         []any{map[string]any{"name": "t", "description": "d", "parameters": map[string]any{"type": "object"}}},
		"stop_grace_ms":      7.0,
		"max_frame_bytes":    nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("options JSON\n got %s\nwant %v", js, want)
	}
	// the newer options
	js, err = Options{InheritEnv: InheritAllowlist, EnvPassthrough: []string{"K"}, TurnSummary: true,
		TurnIdleTimeout: time.Second, HostToolTimeout: 2 * time.Second, Bridge: "never",
		ToolPolicy: &ToolPolicy{Mode: "rules", Allow: []string{"read"}, Block: map[string]string{"bash": "no"}, Timeout: time.Second}}.startJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	_ = json.Unmarshal(js, &got)
	want = map[string]any{"inherit_env": "allowlist", "env_passthrough": []any{"K"}, "turn_summary": true,
		"turn_idle_timeout_ms": 1000.0, "host_tool_timeout_ms": 2000.0, "bridge": "never",
		"tool_policy": map[string]any{"mode": "rules", "allow": []any{"read"}, "block": map[string]any{"bash": "no"}, "timeout_ms": 1000.0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("options JSON\n got %s\nwant %v", js, want)
	}
	if js, _ := (Options{InheritEnv: InheritAll}).startJSON(nil); string(js) != `{"inherit_env":true}` {
		t.Fatalf("InheritAll: %s", js)
	}
	// zero values send nothing
	js, _ = Options{}.startJSON(nil)
	if string(js) != "{}" {
		t.Fatalf("empty options: %s", js)
	}
	// a ctx deadline lowers startup_timeout_ms, never raises it
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	js, _ = Options{}.startJSON(ctx)
	if v := jget(t, js, "startup_timeout_ms").(float64); v < 1 || v > 300 {
		t.Fatalf("startup_timeout_ms from ctx: %s", js)
	}
	js, _ = Options{StartupTimeout: 50 * time.Millisecond}.startJSON(ctx)
	if v := jget(t, js, "startup_timeout_ms").(float64); v != 50 {
		t.Fatalf("startup_timeout_ms kept: %s", js)
	}
}

func TestBuildArgv(t *testing.T) {
	check := func(o Options, want ...string) {
		t.Helper()
		got, err := BuildArgv(o)
		if err != nil {
			t.Fatalf("BuildArgv: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("BuildArgv\n got %q\nwant %q", got, want)
		}
	}
	check(Options{Executable: "omp", Model: "openrouter/anthropic/claude-sonnet-4.6", Cwd: "/tmp/workspace",
		Thinking: "high", AppendSystemPrompt: "extra instructions", ProviderSessionID: "provider-session-1",
		Tools: []string{"read", "edit", "write"}, NoSession: true, NoSkills: true, NoRules: true,
		ExtraArgs: []string{"--foo", "bar"}},
		"omp", "--mode", "rpc", "--model", "openrouter/anthropic/claude-sonnet-4.6", "--thinking", "high",
		"--append-system-prompt", "extra instructions", "--provider-session-id", "provider-session-1",
		"--tools", "read,edit,write", "--no-session", "--no-skills", "--no-rules", "--no-title", "--foo", "bar")
	check(Options{Provider: "anthropic", Model: "m", SessionDir: "/s", Tools: []string{}},
		"omp", "--mode", "rpc", "--provider", "anthropic", "--model", "m", "--session-dir", "/s", "--no-tools", "--no-title")
	check(Options{}, "omp", "--mode", "rpc", "--no-title")
	check(Options{NoTitle: Ptr(false)}, "omp", "--mode", "rpc")
	check(Options{RPCDefaults: Ptr(false)}, "omp", "--mode", "rpc")
	check(Options{Command: []string{"/bin/agent", "--x"}, Model: "ignored"}, "/bin/agent", "--x")
	// pi (version unknown here: the newest) gets no project trust and no MCP unless asked.
	check(Options{Extra: map[string]any{"executable": "pi"}}, "pi", "--mode", "rpc", "--no-approve", "--no-mcp")
	check(Options{Executable: "pi", TrustProject: Ptr(true), MCP: Ptr(true), ContextFiles: Ptr(false), ExcludeTools: []string{"write"}},
		"pi", "--mode", "rpc", "--approve", "--no-context-files", "--exclude-tools", "write")
	// the library names what is wrong
	_, err := BuildArgv(Options{Flavor: "bogus"})
	wantErr(t, err, ErrInvalidArgument, "bad flavor")
	_, err = BuildArgv(Options{Extra: map[string]any{"no_such_option": 1}})
	wantErr(t, err, ErrInvalidArgument, "unknown option")
	if !strings.Contains(err.Error(), "no_such_option") {
		t.Fatalf("the error does not name the option: %v", err)
	}
	_, err = BuildArgv(Options{Extra: map[string]any{"bad": make(chan int)}})
	wantErr(t, err, ErrInvalidJSON, "unmarshallable Extra")
}

func TestStartGetStateBashInfo(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	state, err := c.GetState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state.SessionID != "fake-session" || jstr(t, state.Model, "id") != "claude-sonnet-4-5" || jstr(t, state.Raw, "model.id") != "claude-sonnet-4-5" {
		t.Fatalf("state: %s", state.Raw)
	}
	// no deadline: the client's default (request_timeout_ms)
	if _, err := c.GetState(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := c.Bash(ctx, "echo hello")
	if err != nil {
		t.Fatal(err)
	}
	if jstr(t, res, "output") != "hello\n" || jget(t, res, "exitCode") != 0.0 {
		t.Fatalf("bash: %s", res)
	}
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.PID <= 0 || len(info.Argv) != 1 || info.Argv[0] != fakeAgentPath || info.Flavor != "omp" ||
		info.ProtocolVersion != 1 || info.Closed || info.CloseReason != nil || len(info.Ready) == 0 {
		t.Fatalf("info: %+v (%s)", info, info.Raw)
	}
	// the first event is the agent's ready frame, verbatim
	ev, ok := waitEvent(t, c, "ready", waitFor)
	if !ok || string(ev.Raw) != `{"type":"ready"}` {
		t.Fatalf("first event: %q %s", ev.Type, ev.Raw)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEveryCommandThroughRequest(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	req := func(typ string, params any) json.RawMessage {
		t.Helper()
		data, err := c.Request(ctx, typ, params)
		if err != nil {
			t.Fatalf("Request(%s): %v", typ, err)
		}
		return data
	}
	reqStr := func(typ string, params any, path, want string) {
		t.Helper()
		if got := jstr(t, req(typ, params), path); got != want {
			t.Fatalf("%s: data.%s = %q, want %q", typ, path, got, want)
		}
	}
	reqStr("get_state", nil, "sessionId", "fake-session")
	reqStr("get_state", json.RawMessage(`{}`), "sessionId", "fake-session")
	reqStr("set_model", map[string]string{"provider": "anthropic", "modelId": "claude-sonnet-4-6"}, "id", "claude-sonnet-4-6")
	reqStr("cycle_model", nil, "model.id", "claude-sonnet-4-5")
	models := req("get_available_models", nil)
	if jstr(t, models, "models.0.id") != "claude-sonnet-4-5" || jstr(t, models, "models.1.id") != "claude-sonnet-4-6" {
		t.Fatalf("models: %s", models)
	}
	req("set_thinking_level", map[string]string{"level": "high"})
	reqStr("get_state", nil, "thinkingLevel", "high")
	reqStr("cycle_thinking_level", nil, "level", "low")
	req("set_steering_mode", map[string]string{"mode": "all"})
	req("set_follow_up_mode", []byte(`{"mode":"all"}`))
	req("set_interrupt_mode", map[string]string{"mode": "wait"})
	req("set_auto_compaction", map[string]bool{"enabled": false})
	req("set_auto_retry", map[string]bool{"enabled": false})
	req("set_session_name", struct {
		Name string `json:"name"`
	}{"Renamed"})
	state := req("get_state", nil)
	if jstr(t, state, "steeringMode") != "all" || jstr(t, state, "followUpMode") != "all" ||
		jstr(t, state, "interruptMode") != "wait" || jget(t, state, "autoCompactionEnabled") != false ||
		jstr(t, state, "sessionName") != "Renamed" {
		t.Fatalf("state after the setters: %s", state)
	}
	reqStr("compact", nil, "summary", "trimmed")
	stats := req("get_session_stats", nil)
	if jstr(t, stats, "sessionId") != "fake-session" || jget(t, stats, "tokens.total") != 15.0 {
		t.Fatalf("stats: %s", stats)
	}
	reqStr("export_html", map[string]string{"outputPath": "/tmp/custom.html"}, "path", "/tmp/custom.html")
	if jget(t, req("new_session", nil), "cancelled") != false {
		t.Fatal("new_session")
	}
	if jget(t, req("switch_session", map[string]string{"sessionPath": "/tmp/session.jsonl"}), "cancelled") != false {
		t.Fatal("switch_session")
	}
	reqStr("branch", map[string]string{"entryId": "entry-9"}, "text", "branch created")
	reqStr("get_branch_messages", nil, "messages.0.entryId", "entry-9")
	todos := req("set_todos", json.RawMessage(`{"phases":[{"id":"phase-1","name":"Todos","tasks":[{"id":"task-1","content":"Map tools","status":"pending"}]}]}`))
	if jstr(t, todos, "todoPhases.0.tasks.0.content") != "Map tools" {
		t.Fatalf("set_todos: %s", todos)
	}
	reqStr("get_state", nil, "todoPhases.0.name", "Todos")
	for _, typ := range []string{"get_messages", "get_last_assistant_text", "abort_retry", "abort_bash", "abort"} {
		req(typ, nil)
	}
	req("steer", map[string]string{"message": "nudge"})
	req("follow_up", map[string]string{"message": "later"})
	if got := req("handoff", nil); string(got) != "null" {
		t.Fatalf("a response without data gives JSON null, got %s", got)
	}
	// the dedicated wrappers
	if err := c.Steer(ctx, "nudge"); err != nil {
		t.Fatal(err)
	}
	if err := c.FollowUp(ctx, "later", ImageContent{Data: "aGk=", MimeType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	// a fire-and-forget frame: no id, no response awaited; the agent echoes it as an event
	frame := map[string]any{"type": "widget_layout", "widgetKey": "w", "visible": true, "availableWidth": 80,
		"visibleRows": 3, "hiddenBlocks": []string{"b"}}
	if err := c.SendFrame(frame); err != nil {
		t.Fatal(err)
	}
	ev, ok := waitEvent(t, c, "widget_layout_seen", waitFor)
	if !ok || jstr(t, ev.Raw, "frame.widgetKey") != "w" {
		t.Fatalf("widget_layout_seen: %s", ev.Raw)
	}
	// an agent-side failure: a *CommandError naming the command, with the agent's text
	_, err := c.Request(ctx, "no_such_command", nil)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "no_such_command" || ce.Message == "" || !errors.Is(err, ErrCommandFailed) {
		t.Fatalf("unknown command: %#v", err)
	}
	reqStr("get_state", nil, "sessionId", "fake-session")
}

// Bad input is refused with the right sentinel, never a crash, and the client carries on.
func TestBadInput(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	bad := func(err error, sentinel error, what string) {
		t.Helper()
		wantErr(t, err, sentinel, what)
	}
	_, err := c.Request(ctx, "get_state", json.RawMessage(`{`))
	bad(err, ErrInvalidJSON, "params not JSON")
	_, err = c.Request(ctx, "get_state", json.RawMessage(`[1,2]`))
	bad(err, ErrInvalidJSON, "params not an object")
	_, err = c.Request(ctx, "get_state", "a string")
	bad(err, ErrInvalidJSON, "params a JSON string")
	_, err = c.Request(ctx, "get_state", map[string]any{"f": func() {}})
	bad(err, ErrInvalidJSON, "params that do not marshal")
	_, err = c.Request(ctx, "x", map[string]string{"id": "mine"})
	bad(err, ErrInvalidArgument, "params setting id")
	_, err = c.Request(ctx, "", nil)
	bad(err, ErrInvalidArgument, "empty command type")
	_, err = c.Request(ctx, "get\x00state", nil)
	bad(err, ErrInvalidArgument, "NUL in the command type")
	_, err = c.Request(ctx, "get_\xc3", nil)
	bad(err, ErrInvalidUTF8, "invalid UTF-8 command type")
	_, err = c.Bash(ctx, "echo \xff\xfe")
	bad(err, ErrInvalidUTF8, "invalid UTF-8 bash command")
	err = c.SendFrame(json.RawMessage("nope"))
	bad(err, ErrInvalidJSON, "frame not JSON")
	err = c.SendFrame(map[string]int{"n": 1})
	bad(err, ErrInvalidArgument, "frame without a type")
	_, err = c.Prompt(ctx, "hi", &PromptOptions{StreamingBehavior: "sideways"})
	bad(err, ErrInvalidArgument, "bad streamingBehavior")
	_, err = c.SetHostTools(ctx, []HostTool{{Name: "x", Description: "d", Parameters: json.RawMessage(`{`)}})
	bad(err, ErrInvalidJSON, "tool parameters not JSON")
	_, err = c.SetHostTools(ctx, []HostTool{{Name: "", Description: "d", Parameters: map[string]any{}}})
	bad(err, ErrInvalidArgument, "tool without a name")
	_, err = c.SetHostTools(ctx, []HostTool{{Name: "x", Description: "d"}})
	bad(err, ErrInvalidArgument, "tool without parameters")
	_, err = c.SetHostURISchemes(ctx, []HostURIScheme{{Scheme: "not a scheme!"}})
	bad(err, ErrInvalidArgument, "bad scheme")
	err = c.HostToolResult("h-1", json.RawMessage("{bad"), false)
	bad(err, ErrInvalidJSON, "result not JSON")
	err = c.HostToolResult("h-1", 5, false)
	bad(err, ErrInvalidArgument, "result of the wrong shape")
	err = c.HostToolResult("h-1", nil, false)
	bad(err, ErrInvalidArgument, "nil result")
	err = c.HostURIResult("u-1", nil)
	bad(err, ErrInvalidArgument, "nil URI result")
	// ids that name nothing open, empty ids included
	for _, id := range []string{"no-such-id", ""} {
		bad(c.HostToolResult(id, "x", false), ErrNotFound, "unknown host call")
		bad(c.HostToolUpdate(id, "x"), ErrNotFound, "unknown host call update")
		bad(c.HostURIResult(id, map[string]any{}), ErrNotFound, "unknown host URI request")
		bad(c.UISendValue(id, "x"), ErrNotFound, "unknown UI request")
		bad(c.UISendConfirmation(id, true), ErrNotFound, "unknown UI request (confirm)")
		bad(c.UICancel(id, false), ErrNotFound, "unknown UI request (cancel)")
	}
	bad(c.PolicyVerdict("no-such-id", true, ""), ErrNotFound, "unknown policy_eval")
	bad(c.PolicyVerdict("no-such-id", false, "because"), ErrNotFound, "unknown policy_eval (block)")
	bad(c.UISendValue("ui\x001", "x"), ErrInvalidArgument, "NUL in an id")
	// the client is fine
	if _, err := c.GetState(ctx); err != nil {
		t.Fatal(err)
	}
	// bad start options
	_, err = Start(ctx, Options{Extra: map[string]any{"no_such_option": true}})
	bad(err, ErrInvalidArgument, "unknown start option")
	_, err = Start(ctx, Options{Command: []string{fakeAgentPath}, Extra: map[string]any{"startup_timeout_ms": "5"}})
	bad(err, ErrInvalidArgument, "wrongly typed start option")
	_, err = Start(ctx, Options{Command: []string{"/nonexistent/omprpc-agent"}})
	bad(err, ErrIO, "spawning a missing program")
}

func TestCloseIsIdempotentAndCallsFailFast(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	for i := 0; i < 3; i++ {
		if err := c.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	t0 := time.Now()
	_, err := c.GetState(ctx)
	wantErr(t, err, ErrClosed, "GetState after Close")
	_, err = c.PromptAndWait(ctx, "say hello", nil)
	wantErr(t, err, ErrClosed, "PromptAndWait after Close")
	_, err = c.Prompt(ctx, "say hello", nil)
	wantErr(t, err, ErrClosed, "Prompt after Close")
	_, err = c.NextUIRequest(context.Background())
	wantErr(t, err, ErrClosed, "NextUIRequest after Close")
	wantErr(t, c.WaitForIdle(ctx), ErrClosed, "WaitForIdle after Close")
	wantErr(t, c.UISendValue("ui-1", "x"), ErrClosed, "UISendValue after Close")
	wantErr(t, c.HostToolResult("h", "x", false), ErrClosed, "HostToolResult after Close")
	_, err = c.SetHostTools(ctx, nil)
	wantErr(t, err, ErrClosed, "SetHostTools after Close")
	for _, err := range c.All(ctx) {
		wantErr(t, err, ErrClosed, "All after Close")
	}
	if _, ok := <-c.Events(ctx); ok {
		t.Fatal("Events after Close delivered an event")
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("calls on a closed client took %v", d)
	}
	// the records keep their last state
	info, err := c.Info()
	if err != nil || !info.Closed || !errors.Is(info.CloseReason, ErrClosed) {
		t.Fatalf("Info after Close: %+v, %v", info, err)
	}
	if _, err := c.Stderr(); err != nil {
		t.Fatal(err)
	}
	if pe, err := c.ProtocolErrors(); err != nil || len(pe) != 0 {
		t.Fatalf("ProtocolErrors after Close: %s %v", pe, err)
	}
}

func TestStderrRingIsBounded(t *testing.T) {
	o := fakeOptions("--scenario", "stderr")
	o.MaxStderrLines = Ptr(1)
	c := start(t, o)
	// closing joins the stderr reader, so everything the agent wrote has been seen
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Stderr(); err != nil || s != "second\n" {
		t.Fatalf("Stderr = %q, %v", s, err)
	}
}

func TestManyGoroutinesShareOneClient(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	const goroutines, calls = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				s, err := c.GetState(ctx)
				if err == nil && s.SessionID == "fake-session" {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ok != goroutines*calls {
		t.Fatalf("%d of %d concurrent GetState calls answered", ok, goroutines*calls)
	}
}

// Calls racing Close from many goroutines: each returns (a result or ErrClosed), nothing
// touches the freed handle (run with -race, and GOGC=1).
func TestCallsRacingClose(t *testing.T) {
	for round := 0; round < 3; round++ {
		c := startFake(t)
		ctx := ctxFor(t)
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					var err error
					switch (g + i) % 4 {
					case 0:
						_, err = c.GetState(ctx)
					case 1:
						_, err = c.Info()
					case 2:
						_, err = c.NextUIRequest(ctx)
						if errors.Is(err, ErrTimeout) {
							err = nil
						}
					case 3:
						err = c.UISendValue("nope", "x")
						if errors.Is(err, ErrNotFound) {
							err = nil
						}
					}
					if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("call during close: %v", err)
						return
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(round*20) * time.Millisecond)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

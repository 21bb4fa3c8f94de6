package omprpc

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The capabilities that need no client, and the tool bridge as pi's extension sees it.

var png1x1, _ = base64.StdEncoding.DecodeString(
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func TestSummarizeAndSummarizer(t *testing.T) {
	o := fakeOptions()
	o.TurnSummary = true
	c := start(t, o)
	tr := turn(t, c, "thinking")
	want, err := tr.ParsedSummary()
	if err != nil || want == nil {
		t.Fatalf("ParsedSummary: %v %v", want, err)
	}
	if !want.Complete || text(want.FinalText) != "visible" || want.Reasoning != "hmm" || want.Usage == nil || want.Usage.Calls != 1 {
		t.Fatalf("summary: %+v", want)
	}
	if len(want.Chunks) != 2 || want.Chunks[0].Kind != "reasoning" || want.Chunks[1].Text != "visible" {
		t.Fatalf("chunks: %+v", want.Chunks)
	}
	// The same from the turn's events, the typed events, and a JSON array.
	for name, events := range map[string]any{"Events": tr.Events, "TypedEvents": tr.TypedEvents()} {
		got, err := Summarize(events, "")
		if err != nil {
			t.Fatalf("Summarize(%s): %v", name, err)
		}
		if string(got.Raw) != string(want.Raw) {
			t.Fatalf("Summarize(%s) = %s, want %s", name, got.Raw, want.Raw)
		}
	}
	s, err := Summarize(json.RawMessage(`[{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{}},`+
		`{"type":"tool_blocked","toolCallId":"t2","toolName":"rm","reason":"nope"},`+
		`{"type":"tool_execution_end","toolCallId":"t2","toolName":"rm","result":{},"isError":true},`+
		`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"length","usage":{"input":3,"output":4}}}]`),
		"configured/model")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ToolCalls) != 2 || s.ToolCalls[0].Outcome != "pending" || s.ToolCalls[1].Outcome != "blocked" || text(s.ToolCalls[1].Reason) != "nope" {
		t.Fatalf("tool calls: %+v", s.ToolCalls)
	}
	if s.Usage == nil || text(s.Usage.Model) != "configured/model" || s.Usage.TotalTokens != 7 || len(s.StopReasons) != 1 {
		t.Fatalf("usage / stops: %+v %+v", s.Usage, s.StopReasons)
	}
	if _, err := Summarize(json.RawMessage(`{}`), ""); !strings.Contains(err.Error(), "array") {
		t.Fatalf("Summarize(object): %v", err)
	}
	wantErr(t, func() error { _, err := Summarize(json.RawMessage(`{}`), ""); return err }(), ErrInvalidJSON, "not an array")

	// Streaming, from the event iterator while the turn runs.
	sm, err := NewSummarizer("m")
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	ctx := ctxFor(t)
	if _, err := c.Prompt(ctx, "thinking", nil); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for ev, err := range c.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		items, err := sm.Feed(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			kinds = append(kinds, it.Kind)
		}
		if ev.Type == "agent_end" {
			break
		}
	}
	if strings.Join(kinds, ",") != "reasoning,text,message_end,turn_end" {
		t.Fatalf("derived kinds: %v", kinds)
	}
	got, err := sm.Summary()
	if err != nil || text(got.FinalText) != "visible" {
		t.Fatalf("Summary: %+v %v", got, err)
	}
	sm.Close()
	sm.Close() // idempotent
	wantErr(t, func() error { _, err := sm.Feed(json.RawMessage(`{}`)); return err }(), ErrInvalidArgument, "closed summarizer")
}

func TestEnvAllowlisted(t *testing.T) {
	t.Setenv("OMPRPC_GO_SECRET", "s3cret")
	env, err := EnvAllowlisted()
	if err != nil {
		t.Fatal(err)
	}
	if env["PATH"] != os.Getenv("PATH") || env["OMPRPC_GO_SECRET"] != "" {
		t.Fatalf("allow-list: PATH=%q secret=%q", env["PATH"], env["OMPRPC_GO_SECRET"])
	}
	env, err = EnvAllowlisted("OMPRPC_GO_SECRET")
	if err != nil || env["OMPRPC_GO_SECRET"] != "s3cret" {
		t.Fatalf("passthrough: %v %v", env["OMPRPC_GO_SECRET"], err)
	}
}

func TestPromptFromContent(t *testing.T) {
	dir := tempDir(t)
	png := filepath.Join(dir, "dot.png")
	if err := os.WriteFile(png, png1x1, 0o600); err != nil {
		t.Fatal(err)
	}
	pc, err := PromptFromContent([]any{
		map[string]string{"type": "text", "text": "Look:"},
		map[string]string{"type": "image", "path": png},
		map[string]string{"type": "file", "text": "line one", "name": "notes.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pc.Message, "Look:") || !strings.Contains(pc.Message, "line one") {
		t.Fatalf("message: %q", pc.Message)
	}
	if len(pc.Images) != 1 || pc.Images[0].MimeType != "image/png" || pc.Images[0].Type() != "image" ||
		pc.Images[0].Data != base64.StdEncoding.EncodeToString(png1x1) {
		t.Fatalf("images: %+v", pc.Images)
	}
	_, err = PromptFromContent([]any{map[string]string{"type": "video"}})
	wantErr(t, err, ErrInvalidArgument, "unknown block type")
	pc, err = PromptFromContent(nil)
	if err != nil || pc.Message != "" || len(pc.Images) != 0 {
		t.Fatalf("no blocks: %+v %v", pc, err)
	}
}

func TestProviderConfig(t *testing.T) {
	ps, err := ProviderConfig(ProviderOptions{Providers: map[string]Provider{"local": {
		BaseURL: "http://127.0.0.1:9/v1", API: "openai-completions", APIKeyEnv: "LOCAL_KEY",
		Models: []any{map[string]any{"id": "tiny", "contextWindow": 8192}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Remove()
	if ps.Model != "local/tiny" || filepath.Base(ps.File) != "models.json" || filepath.Dir(ps.File) != ps.Dir ||
		len(ps.EnvPassthrough) != 1 || ps.EnvPassthrough[0] != "LOCAL_KEY" {
		t.Fatalf("setup: %+v", ps)
	}
	checkPrivate(t, ps.Dir, 0o700)
	written, err := os.ReadFile(ps.File)
	if err != nil || jstr(t, written, "providers.local.apiKey") != "LOCAL_KEY" {
		t.Fatalf("written: %s %v", written, err)
	}
	o := Options{Env: map[string]string{"A": "1"}, EnvPassthrough: []string{"OTHER", "LOCAL_KEY"}}
	ps.Apply(&o)
	if o.Model != "local/tiny" || o.Env["A"] != "1" || o.Env["PI_CODING_AGENT_DIR"] != ps.Dir ||
		strings.Join(o.EnvPassthrough, ",") != "OTHER,LOCAL_KEY" {
		t.Fatalf("applied: %+v", o)
	}
	remove := ps.Remove
	if underWine() {
		// Remove is os.RemoveAll, which fails under Wine 8.0 (removeTree says why); Windows 10
		// and later have what it needs.
		remove = func() error { return removeTree(ps.Dir) }
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ps.Dir); !os.IsNotExist(err) {
		t.Fatalf("not removed: %v", err)
	}
	omp, err := ProviderConfig(ProviderOptions{Flavor: "omp", Dir: tempDir(t), Model: "p/m",
		Providers: map[string]Provider{"p": {BaseURL: "u", API: "a", Models: []any{map[string]string{"id": "m"}}}}})
	if err != nil || filepath.Base(omp.File) != "models.yml" || omp.Model != "p/m" {
		t.Fatalf("omp: %+v %v", omp, err)
	}
	_, err = ProviderConfig(ProviderOptions{Providers: map[string]Provider{"p": {API: "a"}}})
	wantErr(t, err, ErrInvalidArgument, "no baseUrl, no models")
}

func TestTurnTypedEventsAndMetadata(t *testing.T) {
	c := startFake(t)
	tr := turn(t, c, "all events")
	evs := tr.TypedEvents()
	if len(evs) != len(tr.Events) || evs[0].Type != "agent_start" || evs[len(evs)-1].Type != "agent_end" {
		t.Fatalf("typed events: %d of %d, %q … %q", len(evs), len(tr.Events), evs[0].Type, evs[len(evs)-1].Type)
	}
	for i, ev := range evs {
		if ev.Type != jstr(t, ev.Raw, "type") || &ev.Raw[0] != &tr.Events[i][0] {
			t.Fatalf("event %d: %q, aliasing", i, ev.Type)
		}
	}
	// The turn's metadata, as the library located it.
	if tr.Outcome != TurnAgentEnd || !tr.AgentInvoked || tr.AssistantText == nil || *tr.AssistantText != "pong" {
		t.Fatalf("turn: outcome %v invoked %v text %v", tr.Outcome, tr.AgentInvoked, tr.AssistantText)
	}
	if want, ok := jget(t, tr.AssistantMessage, "stopReason").(string); ok != (tr.StopReason != nil) || (ok && *tr.StopReason != want) {
		t.Fatalf("stop reason %v, the message says %q", tr.StopReason, want)
	}
	if u := jget(t, tr.AssistantMessage, "usage"); (u != nil) != (tr.Usage != nil) ||
		(u != nil && (float64(tr.Usage.Input) != jget(t, tr.AssistantMessage, "usage.input") || float64(tr.Usage.TotalTokens) != jget(t, tr.AssistantMessage, "usage.totalTokens"))) {
		t.Fatalf("usage %+v, the message has %v", tr.Usage, u)
	}
	local := turn(t, c, "local")
	if local.Outcome != TurnNotInvoked || local.AgentInvoked || local.AssistantText != nil || len(local.Messages) != 0 {
		t.Fatalf("a local prompt: %+v", local)
	}
	if pr := turn(t, c, "prompt result"); pr.Outcome != TurnPromptResult || jstr(t, pr.PromptResult, "type") != "prompt_result" {
		t.Fatalf("a prompt_result prompt: %+v", pr)
	}
}

// bridgeExt acts as the generated pi extension: it connects to the client's bridge with the
// token from the extension file the library wrote.
type bridgeExt struct {
	conn   net.Conn
	r      *bufio.Reader
	config map[string]any
}

func connectBridge(t *testing.T, c *Client) *bridgeExt {
	t.Helper()
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	path := ""
	for i, a := range info.Argv {
		if a == "--extension" && i+1 < len(info.Argv) {
			path = info.Argv[i+1]
		}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("extension %q: %v", path, err)
	}
	m := regexp.MustCompile(`(?m)^const CONFIG = (.*);$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no CONFIG in the extension")
	}
	e := &bridgeExt{}
	if err := json.Unmarshal(m[1], &e.config); err != nil {
		t.Fatal(err)
	}
	if sock, ok := e.config["socket"].(string); ok {
		e.conn, err = net.Dial("unix", sock)
	} else {
		e.conn, err = net.Dial("tcp", net.JoinHostPort(e.config["host"].(string), fmt.Sprint(e.config["port"])))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.conn.Close() })
	e.r = bufio.NewReader(e.conn)
	return e
}

func (e *bridgeExt) send(t *testing.T, frame map[string]any) {
	t.Helper()
	frame["token"], frame["client"] = e.config["token"], e.config["client"]
	js, _ := json.Marshal(frame)
	if _, err := e.conn.Write(append(js, '\n')); err != nil {
		t.Fatal(err)
	}
}

func (e *bridgeExt) recv(t *testing.T) []byte {
	t.Helper()
	_ = e.conn.SetReadDeadline(time.Now().Add(waitFor))
	line, err := e.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("bridge reply: %v", err)
	}
	return line
}

// An agent in another network namespace or on another host dials the bridge at an address
// of its own: bound on every interface, advertised as 127.0.0.2 (which the bind covers).
func TestBridgeListensOnOneAddressAndAdvertisesAnother(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	o.StopGrace = 300 * time.Millisecond
	o.BridgeListen, o.BridgeAdvertise = "0.0.0.0:0", "127.0.0.2:0"
	o.HostTools = []HostTool{{Name: "echo_host", Description: "Echo", Parameters: map[string]any{"type": "object"},
		Handler: func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
			return TextResult("echo: " + jstr(t, call.Arguments, "message")), nil
		}}}
	c := start(t, o)
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	var endpoint struct{ Transport, Listen, Advertise string }
	if err := json.Unmarshal(info.BridgeEndpoint, &endpoint); err != nil {
		t.Fatalf("bridgeEndpoint %s: %v", info.BridgeEndpoint, err)
	}
	_, port, _ := net.SplitHostPort(endpoint.Listen)
	if endpoint.Transport != "tcp" || endpoint.Listen != "0.0.0.0:"+port || endpoint.Advertise != "127.0.0.2:"+port {
		t.Fatalf("bridgeEndpoint %s", info.BridgeEndpoint)
	}
	ext := connectBridge(t, c)
	if ext.config["host"] != "127.0.0.2" || fmt.Sprint(ext.config["port"]) != port {
		t.Fatalf("the extension dials %v:%v", ext.config["host"], ext.config["port"])
	}
	ext.send(t, map[string]any{"id": "call-1", "kind": "tool", "tool": "echo_host", "toolCallId": "tc", "args": map[string]any{"message": "far"}})
	if res := ext.recv(t); jstr(t, res, "result.content.0.text") != "echo: far" {
		t.Fatalf("result: %s", res)
	}
	// 0.0.0.0 is nobody's address to dial: refused without bridge_advertise.
	o.BridgeAdvertise = ""
	if _, err := Start(ctxFor(t), o); err == nil || !strings.Contains(err.Error(), "bridge_advertise") {
		t.Fatalf("bind 0.0.0.0 without an advertised address: %v", err)
	}
}

func TestBridgedHostToolsAndPolicyOnPi(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	o.StopGrace = 300 * time.Millisecond
	o.ToolPolicy = &ToolPolicy{Mode: "host", Timeout: 5 * time.Second}
	ids := make(chan string, 1)
	o.HostTools = []HostTool{{Name: "echo_host", Description: "Echo", Parameters: map[string]any{"type": "object"},
		Handler: func(ctx context.Context, call HostToolCall, update func(any) error) (ToolResult, error) {
			ids <- call.ID
			if err := update("working"); err != nil {
				return ToolResult{}, err
			}
			return TextResult("echo: " + jstr(t, call.Arguments, "message")), nil
		}}}
	c := start(t, o)
	ext := connectBridge(t, c)
	ext.send(t, map[string]any{"id": "call-1", "kind": "tool", "tool": "echo_host", "toolCallId": "tc", "args": map[string]any{"message": "hi"}})
	if id := <-ids; !regexp.MustCompile(`^bridge\d+:call-1$`).MatchString(id) {
		t.Fatalf("host call id %q", id)
	}
	if up := ext.recv(t); jstr(t, up, "update.content.0.text") != "working" {
		t.Fatalf("update: %s", up)
	}
	if res := ext.recv(t); jstr(t, res, "result.content.0.text") != "echo: hi" || jget(t, res, "isError") != false {
		t.Fatalf("result: %s", res)
	}
	// The gate: a policy_eval event, answered with PolicyVerdict. Events subscribes at
	// once (All only when its iteration starts), and the pump — running for the host tool —
	// drops events nobody subscribes to, so the subscription comes before the send.
	ctx := ctxFor(t)
	events := c.Events(ctx)
	next := func() (Event, error, bool) {
		ev, ok := <-events
		return ev, ctx.Err(), ok
	}
	ext.send(t, map[string]any{"id": "p-1", "kind": "policy_eval", "tool": "bash", "toolCallId": "tc-2", "args": map[string]any{}})
	var q Event
	for q.Type != "policy_eval" {
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("no policy_eval: %v", err)
		}
		q = ev
	}
	if jstr(t, q.Raw, "toolName") != "bash" || jstr(t, q.Raw, "toolCallId") != "tc-2" {
		t.Fatalf("policy_eval: %s", q.Raw)
	}
	if err := c.PolicyVerdict(jstr(t, q.Raw, "id"), false, "not here"); err != nil {
		t.Fatal(err)
	}
	if v := ext.recv(t); jget(t, v, "verdict.block") != true || jstr(t, v, "verdict.reason") != "not here" {
		t.Fatalf("verdict: %s", v)
	}
	// The block's note waits for its call's tool_execution_end; no agent plays that call
	// here (this test speaks for the extension), so it comes when the client closes.
	go func() { _ = c.Close() }()
	for {
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("no tool_blocked: %v", err)
		}
		if ev.Type == "tool_blocked" {
			if jstr(t, ev.Raw, "reason") != "not here" || jget(t, ev.Raw, "omprpc") != true {
				t.Fatalf("tool_blocked: %s", ev.Raw)
			}
			break
		}
	}
}

// The fake agent plays pi's gated call: the tool_blocked note sits right before its end.
func TestABlockedCallIsNotedRightBeforeItsEnd(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	o.ToolPolicy = &ToolPolicy{Mode: "rules", Block: map[string]string{"bash": "no shell"}}
	c := start(t, o)
	tr := turn(t, c, `gated bash {"command":"ls"}`)
	evs := tr.TypedEvents()
	for i, ev := range evs {
		if ev.Type == "tool_blocked" {
			if i == 0 || i+1 >= len(evs) || evs[i-1].Type != "tool_execution_start" || evs[i+1].Type != "tool_execution_end" {
				t.Fatalf("tool_blocked at %d of %v", i, evs)
			}
			return
		}
	}
	t.Fatalf("no tool_blocked among %d events", len(evs))
}

func TestPolicyHandlerAnswersTheGate(t *testing.T) {
	o := fakeOptions("--flavor", "pi")
	o.Flavor = "pi"
	o.StopGrace = 300 * time.Millisecond
	o.ToolPolicy = &ToolPolicy{Mode: "host", Timeout: 5 * time.Second,
		Handler: func(ctx context.Context, q PolicyEval) (bool, string, error) {
			switch q.ToolName {
			case "read":
				// A call another tool made (pi 0.99+: a codemode script's) names its parent.
				if q.ParentToolCallID != "tc-parent" {
					return false, "parent: " + q.ParentToolCallID, nil
				}
				return true, "", nil
			case "bash":
				return false, "no shell: " + jstr(t, q.Arguments, "command"), nil
			case "write":
				return false, "", errors.New("policy store down")
			}
			panic("unexpected tool " + q.ToolName)
		}}
	c := start(t, o)
	ext := connectBridge(t, c)
	cases := []struct {
		tool  string
		block bool
		why   string
	}{
		{"read", false, ""},
		{"bash", true, "no shell: ls"},
		{"write", true, "policy store down"},
		{"edit", true, "policy handler panicked on edit: unexpected tool edit"},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("p-%d", i)
		frame := map[string]any{"id": id, "kind": "policy_eval", "tool": tc.tool, "toolCallId": "tc-" + id, "args": map[string]any{"command": "ls"}}
		if tc.tool == "read" {
			frame["parentToolCallId"] = "tc-parent"
		}
		ext.send(t, frame)
		v := ext.recv(t)
		if jstr(t, v, "id") != id || jget(t, v, "verdict.block") != tc.block {
			t.Fatalf("%s: verdict %s", tc.tool, v)
		}
		if tc.block && jstr(t, v, "verdict.reason") != tc.why {
			t.Fatalf("%s: reason %s", tc.tool, v)
		}
	}
}

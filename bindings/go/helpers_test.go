package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitFor is the longest any single wait in a test may take (as in the C tests).
const waitFor = 10 * time.Second

var fakeAgentPath string

func TestMain(m *testing.M) {
	p := os.Getenv("OMPRPC_FAKE_AGENT")
	if p == "" {
		p = filepath.Join("..", "..", "target", "debug", "omprpc-fake-agent")
	}
	abs, err := filepath.Abs(p)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "the fake agent is missing (%v): run `cargo build` at the repository root, or set OMPRPC_FAKE_AGENT\n", err)
		os.Exit(2)
	}
	fakeAgentPath = abs
	os.Exit(m.Run())
}

// fakeOptions runs the fake agent with args.
func fakeOptions(args ...string) Options {
	return Options{Command: append([]string{fakeAgentPath}, args...)}
}

// ctxFor is a context with the test's wait bound.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// start starts a client on the fake agent (closed when the test ends).
func start(t testing.TB, opts Options) *Client {
	t.Helper()
	c, err := Start(ctxFor(t), opts)
	if err != nil {
		t.Fatalf("Start(%v): %v", opts.Command, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slowToStopOptions runs a fake agent that outlives its stdin's end and SIGTERM, so stopping it
// takes StopGrace (3 s): a waiter woken well before that was woken by Close itself, not by the
// agent's end.
func slowToStopOptions() Options {
	o := fakeOptions("--scenario", "ignore-term")
	o.StopGrace = 3 * time.Second
	o.KillGrace = 100 * time.Millisecond
	return o
}

func startFake(t testing.TB, args ...string) *Client {
	t.Helper()
	return start(t, fakeOptions(args...))
}

// turn runs PromptAndWait and fails the test on an error.
func turn(t testing.TB, c *Client, message string) *Turn {
	t.Helper()
	tr, err := c.PromptAndWait(ctxFor(t), message, nil)
	if err != nil {
		t.Fatalf("PromptAndWait(%q): %v", message, err)
	}
	return tr
}

// waitEvent iterates the client's events until one of type typ (others are skipped).
func waitEvent(t testing.TB, c *Client, typ string, timeout time.Duration) (Event, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for ev, err := range c.All(ctx) {
		if err != nil {
			return Event{}, false
		}
		if ev.Type == typ {
			return ev, true
		}
	}
	return Event{}, false
}

// jget walks a dotted path ("a.0.b") through JSON.
func jget(t testing.TB, raw []byte, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, raw)
	}
	if path == "" {
		return v
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func jstr(t testing.TB, raw []byte, path string) string {
	t.Helper()
	s, _ := jget(t, raw, path).(string)
	return s
}

// countType counts the events of type typ.
func countType(t testing.TB, events []json.RawMessage, typ string) int {
	t.Helper()
	n := 0
	for _, e := range events {
		if jstr(t, e, "type") == typ {
			n++
		}
	}
	return n
}

// findType is the nth (0-based) event of type typ, or nil.
func findType(t testing.TB, events []json.RawMessage, typ string, nth int) json.RawMessage {
	t.Helper()
	for _, e := range events {
		if jstr(t, e, "type") == typ {
			if nth == 0 {
				return e
			}
			nth--
		}
	}
	return nil
}

// wantErr checks that err matches sentinel.
func wantErr(t testing.TB, err error, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got %v, want %v", what, err, sentinel)
	}
}

func text(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// waitSubscribers waits until the client's event pump has n subscribers.
func waitSubscribers(t testing.TB, c *Client, n int) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		c.h.ev.mu.Lock()
		got := len(c.h.ev.subs)
		c.h.ev.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the pump never had %d subscribers", n)
}

package omprpc

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCountersFollowTheSession(t *testing.T) {
	c := startFake(t)
	k, err := c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if k.FramesIn != 1 || k.TimeToFirstEventMs == nil || k.LastPromptFirstEventMs != nil {
		t.Fatalf("after start: %s", k.Raw)
	}
	if _, err := c.GetState(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	turn(t, c, "say hello")
	k, err = c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if k.RequestsSent != 2 || k.FramesOut != 2 || k.Responses != 2 || k.RequestsPending != 0 ||
		k.BytesIn <= k.FramesIn || k.FramesIn < 5 || k.EventsDropped != 0 || k.LastPromptFirstEventMs == nil || k.Closed {
		t.Fatalf("after a turn: %s", k.Raw)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	k, err = c.Counters()
	if err != nil || !k.Closed || k.RequestsSent != 2 {
		t.Fatalf("after Close: %v %+v", err, k)
	}
}

func TestLogsPollAndForwardWithoutSecrets(t *testing.T) {
	const secret = "go-secret-system-prompt-8080"
	const key = "sk-go-test-key-0123456789"
	c := start(t, Options{Executable: fakeAgentPath, SystemPrompt: secret, Env: map[string]string{"OPENAI_API_KEY": key},
		LogLevel: "debug", StopGrace: 500 * time.Millisecond})
	recs, err := c.Logs(ctxFor(t), 1)
	if err != nil || len(recs) != 1 || recs[0].Message != "agent spawned" || recs[0].Level != "info" ||
		recs[0].Target != "omprpc::spawn" || recs[0].Time().Year() < 2020 {
		t.Fatalf("first record: %v %+v", err, recs)
	}
	if !strings.Contains(string(recs[0].Raw), "<redacted>") {
		t.Fatalf("argv not redacted: %s", recs[0].Raw)
	}
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&buf, &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	done := make(chan error, 1)
	go func() { done <- c.ForwardLogs(context.Background(), logger) }()
	if _, err := c.Bash(ctxFor(t), "echo go-private-words"); err != nil {
		t.Fatal(err)
	}
	// Forwarding ends by itself once the client closes.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitFor):
		t.Fatal("ForwardLogs did not return after Close")
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{`"msg":"handshake done"`, `"msg":"request sent"`, `"type":"bash"`, `"latency_ms"`,
		`"msg":"agent stopped"`, `"msg":"teardown complete"`} {
		if !strings.Contains(out, want) {
			t.Errorf("forwarded logs lack %s:\n%s", want, out)
		}
	}
	for _, leak := range []string{secret, key, "go-private-words"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q leaked into the logs:\n%s", leak, out)
		}
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestLogsNeedALogLevelAndTimeOut(t *testing.T) {
	c := startFake(t)
	if _, err := c.Logs(ctxFor(t), 10); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "log_level") {
		t.Fatalf("Logs without log_level: %v", err)
	}
	o := fakeOptions()
	o.LogLevel = "warn"
	c = start(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Logs(ctx, 10); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Logs with nothing at warn: %v", err)
	}
	o.LogLevel = "chatty"
	if _, err := Start(ctxFor(t), o); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "log_level") {
		t.Fatalf("Start with a bad level: %v", err)
	}
}

// make dist-test: a Go program outside the checkout, built with -tags omprpc_system against the
// release archive, streams a turn from the fake agent (OMPRPC_AGENT). Prints one PASS line;
// any failure exits non-zero.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	omprpc "github.com/omprpc/omprpc/bindings/go"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dist-test: go: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if want := os.Getenv("EXPECTED_VERSION"); omprpc.Version() != want || omprpc.BindingVersion != want {
		fail("versions: binding %s, library %s, expected %s", omprpc.BindingVersion, omprpc.Version(), want)
	}
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{os.Getenv("OMPRPC_AGENT")}})
	if err != nil {
		fail("start: %v", err)
	}
	defer c.Close()
	if _, err := c.Prompt(ctx, "ping", nil); err != nil {
		fail("prompt: %v", err)
	}
	var deltas []string
	ended := false
	for ev, err := range c.All(ctx) {
		if err != nil {
			fail("events: %v", err)
		}
		if ev.Type == "message_update" {
			var u struct {
				AssistantMessageEvent struct {
					Type  string `json:"type"`
					Delta string `json:"delta"`
				} `json:"assistantMessageEvent"`
			}
			if err := ev.Decode(&u); err != nil {
				fail("decode: %v", err)
			}
			if u.AssistantMessageEvent.Type == "text_delta" {
				deltas = append(deltas, u.AssistantMessageEvent.Delta)
			}
		}
		if ev.Type == "agent_end" {
			ended = true
			break
		}
	}
	if !ended || strings.Join(deltas, "") != "pong" {
		fail("streamed %q (agent_end seen: %v)", deltas, ended)
	}
	if err := c.Close(); err != nil {
		fail("close: %v", err)
	}
	fmt.Printf("dist-test: PASS go (omprpc %s, -tags omprpc_system, streamed %q)\n", omprpc.Version(), deltas)
}

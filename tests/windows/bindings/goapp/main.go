// make windows-bindings-test: the Go binding cross-built for Windows (cgo with mingw-w64, linked
// against the checkout's import library, link_debug_windows.go) and run under Wine with
// omprpc.dll beside the .exe, through its public API (tests/windows/bindings/run.sh builds and
// runs it): the library's version, a call with an owned string out and back, an option error
// as its typed error, then the fake agent (OMPRPC_AGENT): a streamed turn; EventHandle in a
// wait of the program's own (blocked when the turn's events arrive, woken by Close); a
// context cancelled during a turn and during a read of events. EXPECTED_VERSION: the
// version. Prints PASS lines; any failure exits non-zero. (make windows-go-tests runs the
// binding's own tests under Wine.)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	omprpc "github.com/omprpc/omprpc/bindings/go"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "windows-bindings-test: go: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if runtime.GOOS != "windows" {
		fail("GOOS %s", runtime.GOOS)
	}
	if want := os.Getenv("EXPECTED_VERSION"); omprpc.Version() != want || omprpc.BindingVersion != want {
		fail("versions: binding %s, library %s, expected %s", omprpc.BindingVersion, omprpc.Version(), want)
	}
	if omprpc.ABIVersion() != 2 {
		fail("ABI %d", omprpc.ABIVersion())
	}
	fmt.Printf("windows-bindings-test: PASS go %s on %s/%s: omprpc %s (omprpc.dll beside the .exe)\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, omprpc.Version())

	// An owned string out of the library and freed by it, UTF-8 both ways.
	content, err := omprpc.PromptFromContent([]any{
		map[string]any{"type": "text", "text": "h\u00e9llo"},
		map[string]any{"type": "text", "text": "w\u00f6rld"},
	})
	if err != nil || content.Message != "h\u00e9llo\n\nw\u00f6rld" || len(content.Images) != 0 {
		fail("PromptFromContent: %+v, %v", content, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// An option the core refuses before anything starts: its status and message, typed.
	if _, err := omprpc.Start(ctx, omprpc.Options{Command: []string{"unused.exe"}, Flavor: "bogus"}); !errors.Is(err, omprpc.ErrInvalidArgument) || !strings.Contains(err.Error(), "flavor") {
		fail("flavor bogus: %v", err)
	}
	fmt.Println("windows-bindings-test: PASS go: PromptFromContent round trip; a bad option is ErrInvalidArgument")

	agent := os.Getenv("OMPRPC_AGENT")
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{agent}})
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
	fmt.Printf("windows-bindings-test: PASS go: a turn from the fake agent, streamed %q\n", deltas)

	checkEventHandle(ctx, agent)
	checkCancel(ctx, agent)
}

// waitOn waits on h in a goroutine (up to 30 s); the channel says whether h was signalled. It
// fails unless the wait is still blocked a moment later.
func waitOn(h syscall.Handle) <-chan bool {
	woke := make(chan bool, 1)
	go func() {
		ev, _ := syscall.WaitForSingleObject(h, 30_000)
		woke <- ev == syscall.WAIT_OBJECT_0
	}()
	select {
	case <-woke:
		fail("a wait on the event handle returned with nothing queued")
	case <-time.After(300 * time.Millisecond):
	}
	return woke
}

// checkEventHandle: EventHandle in a wait of the program's own. EventFD is Unix's: refused.
func checkEventHandle(ctx context.Context, agent string) {
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{agent}, PromptCompleteEvents: true})
	if err != nil {
		fail("start: %v", err)
	}
	defer c.Close()
	if _, err := c.EventFD(); !errors.Is(err, omprpc.ErrInvalidArgument) {
		fail("EventFD on Windows: %v", err)
	}
	h, err := c.EventHandle()
	if err != nil {
		fail("EventHandle: %v", err)
	}
	if ev, err := syscall.WaitForSingleObject(h, 10_000); ev != syscall.WAIT_OBJECT_0 {
		fail("not signalled with the ready event queued: %#x %v", ev, err)
	}
	for ev, err := range c.All(ctx) { // take it: the queue is empty then
		if err != nil || ev.Type == "ready" {
			break
		}
	}
	woke := waitOn(h)
	if _, err := c.Prompt(ctx, "say hello", nil); err != nil {
		fail("prompt: %v", err)
	}
	if !<-woke {
		fail("a blocked wait on the event handle did not wake for the turn's events")
	}
	for ev, err := range c.All(ctx) {
		if err != nil {
			fail("events: %v", err)
		}
		if ev.Type == "prompt_complete" {
			break
		}
	}
	// A wait that may outlive the client waits on a duplicate of its own: Close frees the
	// client, which closes the client's handle.
	self, _ := syscall.GetCurrentProcess()
	var own syscall.Handle
	if err := syscall.DuplicateHandle(self, h, self, &own, 0, false, syscall.DUPLICATE_SAME_ACCESS); err != nil {
		fail("DuplicateHandle: %v", err)
	}
	defer syscall.CloseHandle(own)
	woke = waitOn(own)
	if err := c.Close(); err != nil {
		fail("close: %v", err)
	}
	if !<-woke {
		fail("Close did not wake a blocked wait on the event handle")
	}
	fmt.Println("windows-bindings-test: PASS go: EventHandle in a wait of its own: woken by a turn's events, and by Close; EventFD is ErrInvalidArgument")
}

// checkCancel: a context cancelled during a turn aborts it (the next turn is clean), and one
// cancelled during a read of events ends the read, not the client.
func checkCancel(ctx context.Context, agent string) {
	c, err := omprpc.Start(ctx, omprpc.Options{Command: []string{agent}})
	if err != nil {
		fail("start: %v", err)
	}
	defer c.Close()
	turnCtx, cancelTurn := context.WithCancel(ctx)
	go func() {
		time.Sleep(300 * time.Millisecond) // the run is live: it streams until aborted
		cancelTurn()
	}()
	if _, err := c.PromptAndWait(turnCtx, "stream until abort", nil); !errors.Is(err, context.Canceled) {
		fail("PromptAndWait, cancelled: %v", err)
	}
	if tr, err := c.PromptAndWait(ctx, "ping", nil); err != nil || tr.AssistantText == nil || *tr.AssistantText != "pong" {
		fail("the turn after the cancelled one: %v", err)
	}
	readCtx, cancelRead := context.WithCancel(ctx)
	go func() {
		time.Sleep(300 * time.Millisecond) // the read waits: nothing is queued
		cancelRead()
	}()
	var end error
	for _, err := range c.All(readCtx) {
		if err != nil {
			end = err
		}
	}
	if !errors.Is(end, context.Canceled) {
		fail("a read of events, cancelled: %v", end)
	}
	if _, err := c.GetState(ctx); err != nil {
		fail("the client after a cancelled read: %v", err)
	}
	fmt.Println("windows-bindings-test: PASS go: a cancelled context aborts a turn (the next is clean) and ends a blocked read")
}

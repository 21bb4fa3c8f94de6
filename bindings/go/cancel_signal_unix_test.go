//go:build unix

package omprpc

// TestCancelBySignal sends itself SIGUSR1, which Windows does not have: its cancellation
// through a context is what cancel_test.go tests on every platform.

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// Ctrl-C through signal.NotifyContext stops PromptAndWait and CollectEvents the same way.
func TestCancelBySignal(t *testing.T) {
	c := startFake(t)
	for _, call := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"PromptAndWait", func(ctx context.Context) error {
			_, err := c.PromptAndWait(ctx, "stream until abort", nil)
			return err
		}},
		{"CollectEvents", func(ctx context.Context) error {
			if _, err := c.Prompt(ctxFor(t), "stream until abort", nil); err != nil {
				return err
			}
			_, err := c.CollectEvents(ctx)
			return err
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGUSR1)
			defer stop()
			events := c.Events(ctxFor(t))
			waitSubscribers(t, c, 1)
			// Ctrl-C once the call waits in the library for the live run.
			go func() {
				waitActive(t, c, call.name)
				_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
			}()
			err := call.run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s after the signal: %v", call.name, err)
			}
			if !abortedRun(t, events) {
				t.Fatal("no aborted message_end: the abort did not reach the agent")
			}
			if _, err := c.PromptAndWait(ctxFor(t), "say hello", nil); err != nil {
				t.Fatalf("the next prompt: %v", err)
			}
		})
	}
}

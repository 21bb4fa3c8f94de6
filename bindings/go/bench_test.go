package omprpc

import (
	"context"
	"testing"
	"time"
)

// The fake agent's "burst N" prompt: agent_start, turn_start, message_start, N
// message_updates of 640 bytes, message_end, turn_end, agent_end.
const burstN = 100000

// BenchmarkPromptAndWaitBurst measures events/s through PromptAndWait (the core assembles
// the turn; Go decodes it). Run: go test -run '^$' -bench Burst -benchtime 5x
func BenchmarkPromptAndWaitBurst(b *testing.B) {
	opts := fakeOptions()
	opts.MaxEventHistory = Unlimited()
	c := start(b, opts)
	var events int
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		tr, err := c.PromptAndWait(context.Background(), "burst 100000", nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(tr.Events) != burstN+6 {
			b.Fatalf("%d events, want %d", len(tr.Events), burstN+6)
		}
		events += len(tr.Events)
	}
	b.ReportMetric(float64(events)/time.Since(t0).Seconds(), "events/s")
}

// BenchmarkIteratorBurst measures events/s through the event iterator (All): a prompt,
// then every event up to its prompt_complete (the library's end of the prompt).
func BenchmarkIteratorBurst(b *testing.B) {
	opts := fakeOptions()
	opts.MaxEventHistory = Unlimited()
	opts.EventQueueCapacity = Unlimited()
	opts.PromptCompleteEvents = true
	c := start(b, opts)
	ctx := context.Background()
	var events int
	b.ResetTimer()
	t0 := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := c.Prompt(ctx, "burst 100000", nil); err != nil {
			b.Fatal(err)
		}
		n := 0
		for ev, err := range c.All(ctx) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == "ready" {
				continue
			}
			if ev.Type == "prompt_complete" { // the library's end of the prompt (not counted)
				break
			}
			n++
		}
		if n != burstN+6 {
			b.Fatalf("%d events, want %d", n, burstN+6)
		}
		events += n
	}
	b.ReportMetric(float64(events)/time.Since(t0).Seconds(), "events/s")
}

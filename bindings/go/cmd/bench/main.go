// Command bench measures the Go binding over the fake agent's "burst N" prompt (N
// message_update events of 640 bytes, plus 6 others).
//
// Without flags (how `make bench` runs it, bench/README.md) it makes ONE measurement and
// prints one line:
//
//	events_per_sec=<n> rss_mib=<n> …
//
// A client is started on $OMPRPC_FAKE_AGENT with MaxEventHistory unlimited and warmed up with
// "burst 100"; the timed part is PromptAndWait("burst $OMPRPC_BENCH_EVENTS") (default 100000)
// and reading the turn's events as a host does: Turn.TypedEvents() (each event's type, read
// without decoding it), a count by type, and the final agent_end decoded. events/s = events
// of the turn / the timed seconds; rss_mib = the process's peak RSS (VmHWM).
//
// The library is linked at build time (go build -tags omprpc_release: target/release);
// $OMPRPC_LIBRARY is not read. Richer modes:
//
//	go run -tags omprpc_release ./cmd/bench -runs 5 -mode turn|decode|iterator
//
// decode: every event unmarshalled with encoding/json (type and assistantMessageEvent);
// iterator: Prompt, then the event iterator (All) up to its prompt_complete, no turn. -cpuprofile FILE
// writes a CPU profile of the whole run (go tool pprof go-bench FILE).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	omprpc "github.com/omprpc/omprpc/bindings/go"
)

func fakeAgent() (string, error) {
	if p := os.Getenv("OMPRPC_FAKE_AGENT"); p != "" {
		return p, nil
	}
	for _, profile := range []string{"release", "debug"} {
		p := filepath.Join("..", "..", "target", profile, "omprpc-fake-agent")
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("no fake agent: set OMPRPC_FAKE_AGENT or run cargo build")
}

// peakRSSMiB is VmHWM of this process.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kib, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kib / 1024
		}
	}
	return 0
}

// consume reads the turn as a host does and checks it.
func consume(tr *omprpc.Turn, mode string, n int) error {
	updates := 0
	var end omprpc.Event
	switch mode {
	case "decode":
		for _, raw := range tr.Events {
			var ev struct {
				Type                  string          `json:"type"`
				AssistantMessageEvent json.RawMessage `json:"assistantMessageEvent"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				return err
			}
			if ev.Type == "message_update" {
				updates++
			}
			end = omprpc.Event{Type: ev.Type, Raw: raw}
		}
	default:
		for _, ev := range tr.TypedEvents() {
			if ev.Type == "message_update" {
				updates++
			}
			end = ev
		}
	}
	var agentEnd struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := end.Decode(&agentEnd); err != nil || end.Type != "agent_end" || len(agentEnd.Messages) == 0 {
		return fmt.Errorf("the turn does not end with agent_end and its messages (%q, %v)", end.Type, err)
	}
	if updates != n || len(tr.Events) != n+6 {
		return fmt.Errorf("%d message_update of %d events, want %d of %d", updates, len(tr.Events), n, n+6)
	}
	if tr.AssistantText == nil || *tr.AssistantText != "pong" {
		return fmt.Errorf("assistant text %v", tr.AssistantText)
	}
	return nil
}

func iterate(ctx context.Context, c *omprpc.Client, n int) error {
	if _, err := c.Prompt(ctx, fmt.Sprintf("burst %d", n), nil); err != nil {
		return err
	}
	got := 0
	for ev, err := range c.All(ctx) {
		if err != nil {
			return err
		}
		if ev.Type == "ready" {
			continue
		}
		if ev.Type == "prompt_complete" { // the library's end of the prompt (not counted)
			break
		}
		got++
	}
	if got != n+6 {
		return fmt.Errorf("%d events, want %d", got, n+6)
	}
	return nil
}

func run(mode string, n, runs int) ([]float64, error) {
	agent, err := fakeAgent()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	opts := omprpc.Options{Command: []string{agent}, MaxEventHistory: omprpc.Unlimited()}
	if mode == "iterator" {
		opts.EventQueueCapacity = omprpc.Unlimited()
		opts.EventQueueMaxBytes = omprpc.Unlimited()
		opts.PromptCompleteEvents = true
	}
	c, err := omprpc.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if mode == "iterator" {
		if err := iterate(ctx, c, 100); err != nil {
			return nil, err
		}
	} else if tr, err := c.PromptAndWait(ctx, "burst 100", nil); err != nil {
		return nil, err
	} else if err := consume(tr, mode, 100); err != nil {
		return nil, err
	}
	var secs []float64
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		if mode == "iterator" {
			err = iterate(ctx, c, n)
		} else {
			var tr *omprpc.Turn
			if tr, err = c.PromptAndWait(ctx, fmt.Sprintf("burst %d", n), nil); err == nil {
				err = consume(tr, mode, n)
			}
		}
		if err != nil {
			return nil, err
		}
		secs = append(secs, time.Since(t0).Seconds())
	}
	return secs, nil
}

func main() {
	mode := flag.String("mode", "turn", "turn (PromptAndWait + TypedEvents), decode (every event unmarshalled) or iterator")
	runs := flag.Int("runs", 1, "measurements (the median is printed)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -cpuprofile: %v\n", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	n := 100000
	if v := os.Getenv("OMPRPC_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: OMPRPC_BENCH_EVENTS=%q is not a positive number\n", v)
			os.Exit(2)
		}
	}
	secs, err := run(*mode, n, max(*runs, 1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	sort.Float64s(secs)
	med := secs[len(secs)/2]
	fmt.Printf("events_per_sec=%.0f rss_mib=%.1f secs=%.6f events=%d runs=%d mode=%s\n",
		float64(n+6)/med, peakRSSMiB(), med, n+6, len(secs), *mode)
}

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
// of the turn / the timed seconds; rss_mib = the process's peak RSS (VmHWM). The turn has N+6
// events, N+7 when the agent speaks pi 1.x (make bench runs the fake agent so, with
// OMPRPC_FAKE_FLAVOR=pi OMPRPC_FAKE_VERSION=1.6.0): its turn ends with agent_settled, right
// after the last agent_end.
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

// turnEvents is the number of events of a "burst n" turn: pi 1.x's ends with agent_settled.
func turnEvents(n int, settled bool) int {
	if settled {
		return n + 7
	}
	return n + 6
}

// consume reads the turn as a host does and checks it: the last agent_end (followed by
// agent_settled when the turn's outcome says so) and the count of events.
func consume(tr *omprpc.Turn, mode string, n int) error {
	updates := 0
	var end, last omprpc.Event
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
			end, last = last, omprpc.Event{Type: ev.Type, Raw: raw}
		}
	default:
		for _, ev := range tr.TypedEvents() {
			if ev.Type == "message_update" {
				updates++
			}
			end, last = last, ev
		}
	}
	settled := tr.Outcome == omprpc.TurnAgentSettled
	if settled != (last.Type == "agent_settled") {
		return fmt.Errorf("the turn's outcome is %v and its last event %q", tr.Outcome, last.Type)
	}
	if !settled {
		end = last
	}
	var agentEnd struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := end.Decode(&agentEnd); err != nil || end.Type != "agent_end" || len(agentEnd.Messages) == 0 {
		return fmt.Errorf("the turn does not end with agent_end and its messages (%q, %v)", end.Type, err)
	}
	if want := turnEvents(n, settled); updates != n || len(tr.Events) != want {
		return fmt.Errorf("%d message_update of %d events, want %d of %d", updates, len(tr.Events), n, want)
	}
	if tr.AssistantText == nil || *tr.AssistantText != "pong" {
		return fmt.Errorf("assistant text %v", tr.AssistantText)
	}
	return nil
}

func iterate(ctx context.Context, c *omprpc.Client, n int) (int, error) {
	if _, err := c.Prompt(ctx, fmt.Sprintf("burst %d", n), nil); err != nil {
		return 0, err
	}
	got, settled := 0, false
	for ev, err := range c.All(ctx) {
		if err != nil {
			return 0, err
		}
		if ev.Type == "ready" {
			continue
		}
		if ev.Type == "prompt_complete" { // the library's end of the prompt (not counted)
			break
		}
		settled = ev.Type == "agent_settled"
		got++
	}
	if want := turnEvents(n, settled); got != want {
		return 0, fmt.Errorf("%d events, want %d", got, want)
	}
	return got, nil
}

// run returns the seconds of each measurement and the events of a turn.
func run(mode string, n, runs int) ([]float64, int, error) {
	agent, err := fakeAgent()
	if err != nil {
		return nil, 0, err
	}
	ctx := context.Background()
	opts := omprpc.Options{Command: []string{agent}, MaxEventHistory: omprpc.Unlimited()}
	// What the fake agent speaks: as it is (omp), or OMPRPC_FAKE_FLAVOR / OMPRPC_FAKE_VERSION
	// (e.g. pi 1.6.0), which the library does not pass on to the agent by itself (its
	// environment allow-list): a pi host says Flavor "pi".
	if f := os.Getenv("OMPRPC_FAKE_FLAVOR"); f != "" {
		opts.Command = append(opts.Command, "--flavor", f)
		opts.Flavor = omprpc.Flavor(f)
	}
	if v := os.Getenv("OMPRPC_FAKE_VERSION"); v != "" {
		opts.Env = map[string]string{"OMPRPC_FAKE_VERSION": v}
	}
	if mode == "iterator" {
		opts.EventQueueCapacity = omprpc.Unlimited()
		opts.EventQueueMaxBytes = omprpc.Unlimited()
		opts.PromptCompleteEvents = true
	}
	c, err := omprpc.Start(ctx, opts)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	if mode == "iterator" {
		if _, err := iterate(ctx, c, 100); err != nil {
			return nil, 0, err
		}
	} else if tr, err := c.PromptAndWait(ctx, "burst 100", nil); err != nil {
		return nil, 0, err
	} else if err := consume(tr, mode, 100); err != nil {
		return nil, 0, err
	}
	var secs []float64
	events := 0
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		if mode == "iterator" {
			events, err = iterate(ctx, c, n)
		} else {
			var tr *omprpc.Turn
			if tr, err = c.PromptAndWait(ctx, fmt.Sprintf("burst %d", n), nil); err == nil {
				err = consume(tr, mode, n)
				events = len(tr.Events)
			}
		}
		if err != nil {
			return nil, 0, err
		}
		secs = append(secs, time.Since(t0).Seconds())
	}
	return secs, events, nil
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
	secs, events, err := run(*mode, n, max(*runs, 1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	sort.Float64s(secs)
	med := secs[len(secs)/2]
	fmt.Printf("events_per_sec=%.0f rss_mib=%.1f secs=%.6f events=%d runs=%d mode=%s\n",
		float64(events)/med, peakRSSMiB(), med, events, len(secs), *mode)
}

package omprpc

/*
#include "omprpc.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"runtime"
	"sync"
)

// Event is one event from the agent (or a synthetic one from the library, marked
// "omprpc":true: event_overflow, protocol_error), verbatim.
type Event struct {
	Type string
	// Raw is the event's JSON. Subscribers share it: do not modify it.
	Raw json.RawMessage
}

// Decode unmarshals the event's JSON into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// maxBatch is how many queued events one omprpc_client_next_events call takes.
const maxBatch = 1024

// pump is the single reader of the library's event queue for a client. It runs while
// something wants events: a subscriber (Events, All) or a host tool handler. It dispatches
// host tool calls, then hands each batch to every subscriber.
//
// With no subscriber and no handler it does not read, so events stay in the library's queue
// (bounded by event_queue_capacity, overflow reported) for the next subscriber. While
// handlers are registered it keeps reading, and events nobody subscribes to are dropped.
type pump struct {
	mu         sync.Mutex
	subs       []*subscription
	hostDemand bool
	carry      []Event // read while demand vanished: the next subscriber gets them first
	started    bool
	ended      bool
	endErr     error
	wake       chan struct{}
	done       chan struct{}
}

type subscription struct {
	ch   chan []Event // closed by the pump when the client's events end (err says why)
	stop chan struct{}
	once sync.Once
	err  error
	p    *pump
}

func (p *pump) init() {
	p.wake = make(chan struct{}, 1)
	p.done = make(chan struct{})
}

// kick starts the pump goroutine, or wakes it. Call with p.mu held.
func (p *pump) kickLocked(h *core) {
	if !p.started {
		p.started = true
		go h.runPump()
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// setHostDemand records whether host tool handlers need the pump to read.
func (p *pump) setHostDemand(h *core, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hostDemand = on
	if on {
		p.kickLocked(h)
	}
}

// wait returns once the pump goroutine (if any) has ended. Call after h.closing is closed.
func (p *pump) wait() {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		<-p.done
	}
}

func (h *core) subscribe() *subscription {
	p := &h.ev
	s := &subscription{ch: make(chan []Event, 16), stop: make(chan struct{}), p: p}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.carry) > 0 {
		s.ch <- p.carry
		p.carry = nil
	}
	if p.ended {
		s.err = p.endErr
		close(s.ch)
		return s
	}
	p.subs = append(p.subs, s)
	p.kickLocked(h)
	return s
}

func (s *subscription) cancel() {
	s.once.Do(func() {
		close(s.stop)
		p := s.p
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, x := range p.subs {
			if x == s {
				p.subs = append(p.subs[:i], p.subs[i+1:]...)
				break
			}
		}
	})
}

func (h *core) runPump() {
	p := &h.ev
	defer close(p.done)
	for {
		p.mu.Lock()
		for len(p.subs) == 0 && !p.hostDemand {
			p.mu.Unlock()
			select {
			case <-p.wake:
			case <-h.closing:
				h.endEvents(closedError("next_events"))
				return
			}
			p.mu.Lock()
		}
		p.mu.Unlock()
		batch, err := h.nextEvents()
		if err != nil {
			h.endEvents(err)
			return
		}
		h.dispatchHost(batch)
		h.deliver(batch)
	}
}

// nextEvents takes the next batch, waiting without a deadline: Close wakes it. The batch
// comes as JSON lines, cut at each newline with a byte search (events never contain a raw
// newline) instead of scanning every byte of a JSON array.
func (h *core) nextEvents() ([]Event, error) {
	var out *C.char
	err := h.do("next_events", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_next_events_lines(p, C.size_t(maxBatch), C.int64_t(timeoutInfinite), &out, perr)
	})
	if err != nil {
		return nil, err
	}
	return parseEventLines("next_events", takeBytes(out))
}

func (h *core) deliver(batch []Event) {
	p := &h.ev
	p.mu.Lock()
	if len(p.subs) == 0 {
		if !p.hostDemand {
			p.carry = append(p.carry, batch...)
		}
		p.mu.Unlock()
		return
	}
	subs := append([]*subscription(nil), p.subs...)
	p.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- batch:
			continue
		default:
		}
		select {
		case s.ch <- batch:
		case <-s.stop:
		case <-h.closing: // after Close, a subscriber that does not read loses the rest
		}
	}
}

func (h *core) endEvents(err error) {
	p := &h.ev
	p.mu.Lock()
	p.ended, p.endErr = true, err
	subs := p.subs
	p.subs = nil
	p.mu.Unlock()
	for _, s := range subs {
		s.err = err
		close(s.ch)
	}
}

// All iterates over the client's events: each one with a nil error, and last, if the
// events end, the reason with a zero Event — ctx's error, or ErrClosed (with the close
// reason) once the client is closed and every queued event was delivered. Breaking out of
// the loop ends the subscription. Several iterations (and Events channels) may run at once:
// each sees every event read while it runs.
func (c *Client) All(ctx context.Context) iter.Seq2[Event, error] {
	h := c.h
	runtime.KeepAlive(c)
	if ctx == nil {
		ctx = context.Background()
	}
	return func(yield func(Event, error) bool) {
		s := h.subscribe()
		defer s.cancel()
		for {
			select {
			case batch, ok := <-s.ch:
				if !ok {
					if s.err != nil {
						yield(Event{}, s.err)
					}
					return
				}
				for _, ev := range batch {
					if !yield(ev, nil) {
						return
					}
				}
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

// Events returns a channel of the client's events (see All), closed when ctx ends or the
// client's events end. Read it promptly, or cancel ctx: a full channel holds up delivery
// to every subscriber and the dispatch of host tool calls.
func (c *Client) Events(ctx context.Context) <-chan Event {
	h := c.h
	runtime.KeepAlive(c)
	if ctx == nil {
		ctx = context.Background()
	}
	s := h.subscribe()
	out := make(chan Event, 256)
	go func() {
		defer close(out)
		defer s.cancel()
		for {
			select {
			case batch, ok := <-s.ch:
				if !ok {
					return
				}
				for _, ev := range batch {
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// parseEventLines reads events written one per line (each followed by a newline). The events
// alias js.
func parseEventLines(op string, js []byte) ([]Event, error) {
	evs := make([]Event, 0, bytes.Count(js, []byte{'\n'}))
	for len(js) > 0 {
		n := bytes.IndexByte(js, '\n')
		if n < 0 {
			n = len(js)
		}
		line := json.RawMessage(js[:n:n])
		if n < len(js) {
			js = js[n+1:]
		} else {
			js = nil
		}
		if len(line) == 0 {
			continue
		}
		t, ok := topLevelType(line)
		if !ok {
			if !json.Valid(line) {
				return nil, newError(op, StatusInvalidJSON, "the library returned an event that is not JSON")
			}
			t = decodeType(line)
		}
		evs = append(evs, Event{Type: t, Raw: line})
	}
	return evs, nil
}

// parseEventArray reads a JSON array of events the library wrote (collect_events), cut at the
// line separators when it wrote one event per line (see splitEventsAt).
func parseEventArray(op string, js []byte) ([]Event, error) {
	raws, end, ok := splitEventsAt(js, skipSpace(js, 0))
	if !ok || skipSpace(js, end) != len(js) {
		return parseEventsSlow(op, js)
	}
	evs := make([]Event, len(raws))
	for i, r := range raws {
		t, ok := topLevelType(r)
		if !ok {
			return parseEventsSlow(op, js)
		}
		evs[i] = Event{Type: t, Raw: r}
	}
	return evs, nil
}

// parseEvents reads a JSON array of events. The events alias js (one allocation per batch).
func parseEvents(op string, js []byte) ([]Event, error) {
	if raws, ok := splitArray(js); ok {
		evs := make([]Event, len(raws))
		for i, r := range raws {
			t, ok := topLevelType(r)
			if !ok {
				return parseEventsSlow(op, js)
			}
			evs[i] = Event{Type: t, Raw: r}
		}
		return evs, nil
	}
	return parseEventsSlow(op, js)
}

func parseEventsSlow(op string, js []byte) ([]Event, error) {
	var raws []json.RawMessage
	if err := unmarshal(op, js, &raws); err != nil {
		return nil, err
	}
	evs := make([]Event, len(raws))
	for i, r := range raws {
		evs[i] = Event{Type: decodeType(r), Raw: r}
	}
	return evs, nil
}

// decodeType is topLevelType the slow way: the first top-level member named exactly "type",
// if it is a string; "" otherwise.
func decodeType(raw []byte) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return ""
		}
		if key == "type" {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return ""
			}
			return s
		}
	}
	return ""
}

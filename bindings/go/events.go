package omprpc

/*
#include "omprpc.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"iter"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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

// defaultBacklog bounds a subscriber's backlog (and the events kept while nobody subscribes)
// when the event_queue_capacity option is not set: the library's default capacity.
const defaultBacklog = 65536

// pump is the single reader of the library's event queue for a client. It runs while
// something wants events: a subscriber (Events, All), or registered host tools, host URI
// schemes or a policy handler. It dispatches host calls, then appends each batch to every
// subscriber's backlog; it never waits for a subscriber, so a slow one delays nobody.
//
// With nothing wanting events it does not read, so events stay in the library's queue
// (bounded by event_queue_capacity, overflow reported) for the next subscriber. What it
// reads while nobody subscribes is kept (the carry) for the next subscriber. Backlogs and
// the carry are bounded like the library's queue: past the bound the oldest events are
// dropped, counted (Counters.BindingEventsDropped) and reported to that subscriber by an
// event_overflow event in their place — never silently.
type pump struct {
	mu   sync.Mutex
	cond sync.Cond // on mu: broadcast on progress while syncWaiters > 0
	subs []*subscription
	// completions: subscribers get the library's prompt_complete events (the client was
	// started with Options.PromptCompleteEvents). Every client is started with the library
	// option on, for Stream; without that option they are kept from All, Events and
	// Subscribe, which show what the agent sent.
	completions bool
	// hostDemand: host tools / URI schemes / a policy handler are registered.
	hostDemand  bool
	carry       []Event // read while nobody subscribed: the next subscriber gets them first
	carryLost   uint64  // dropped from carry since a subscriber last took it
	capacity    int     // bound of each backlog and of carry; <= 0: none
	accounted   uint64  // the library's events taken (or reported dropped) and handed on
	syncWaiters int
	dropped     atomic.Uint64 // binding-side drops, total
	started     bool
	ended       bool
	endErr      error
	wake        chan struct{}
	done        chan struct{}
}

// subscription is one subscriber's backlog; every field but stop and signal is guarded by
// the pump's mu.
type subscription struct {
	p      *pump
	q      []Event
	lost   uint64 // dropped from q since the consumer last took it
	pushed uint64 // events appended to q (lost ones included)
	handed uint64 // events the consumer took (Events: sent on its channel)
	// parked: the consumer is busy outside the backlog (All: in the loop body; Events: its
	// channel is full): it will take the rest without waiting for the agent.
	parked bool
	ended  bool // no more events: err says why
	err    error
	gone   bool
	// from is the library's index of the first event this subscription wants (Stream: the
	// first event queued after it subscribed); earlier ones are skipped. 0: every event.
	from uint64
	// completions: it gets the library's prompt_complete events (Stream's always does).
	completions bool
	signal      chan struct{} // capacity 1: something was appended, or the events ended
	stop        chan struct{}
	once        sync.Once
}

func (p *pump) init() {
	p.cond.L = &p.mu
	p.wake = make(chan struct{}, 1)
	p.done = make(chan struct{})
	if p.capacity == 0 {
		p.capacity = defaultBacklog
	}
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

// setHostDemand records whether host tools, URI schemes or a policy handler need the pump to
// read (and answer the host calls nobody can answer at once).
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

func (p *pump) progressLocked() {
	if p.syncWaiters > 0 {
		p.cond.Broadcast()
	}
}

// appendBounded appends batch to q, dropping the oldest past p.capacity; returns q and how
// many were dropped (counted in p.dropped). A prompt_complete event is never dropped when
// completions: a stream waits for its own, and each is one small event per prompt.
func (p *pump) appendBounded(q, batch []Event, completions bool) ([]Event, uint64) {
	if len(q) == 0 {
		q = batch[:len(batch):len(batch)] // shared with the other subscribers: append copies
	} else {
		q = append(q, batch...)
	}
	over := len(q) - p.capacity
	if p.capacity <= 0 || over <= 0 {
		return q, 0
	}
	// A dropped event_overflow of the library's carries its count into ours.
	var mine, lost uint64
	var kept []Event
	for _, ev := range q[:over] {
		if n, ok := libraryOverflow(ev); ok {
			lost += n
		} else if completions && isCompletion(ev) {
			kept = append(kept, ev)
		} else {
			mine++
		}
	}
	p.dropped.Add(mine)
	if len(kept) > 0 {
		return append(kept, q[over:]...), lost + mine
	}
	return q[over:], lost + mine
}

// isCompletion reports whether ev is the library's prompt_complete event.
func isCompletion(ev Event) bool {
	if ev.Type != "prompt_complete" {
		return false
	}
	var c struct {
		Omprpc bool `json:"omprpc"`
	}
	return ev.Decode(&c) == nil && c.Omprpc
}

// withoutCompletions is batch without the library's prompt_complete events (batch itself
// when it has none).
func withoutCompletions(batch []Event) []Event {
	for i, ev := range batch {
		if !isCompletion(ev) {
			continue
		}
		out := append(make([]Event, 0, len(batch)-1), batch[:i]...)
		for _, ev := range batch[i+1:] {
			if !isCompletion(ev) {
				out = append(out, ev)
			}
		}
		return out
	}
	return batch
}

// libraryOverflow reports the count of an event_overflow event of the library's.
func libraryOverflow(ev Event) (uint64, bool) {
	if ev.Type != "event_overflow" {
		return 0, false
	}
	var o struct {
		Omprpc  bool   `json:"omprpc"`
		Dropped uint64 `json:"dropped"`
	}
	if ev.Decode(&o) != nil || !o.Omprpc {
		return 0, false
	}
	return o.Dropped, true
}

func (h *core) subscribe() *subscription {
	p := &h.ev
	s := &subscription{signal: make(chan struct{}, 1), stop: make(chan struct{}), p: p, completions: p.completions}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.carry) > 0 || p.carryLost > 0 {
		s.q, s.lost = p.carry, p.carryLost
		s.pushed = uint64(len(p.carry)) + p.carryLost
		p.carry, p.carryLost = nil, 0
	}
	p.subs = append(p.subs, s)
	if p.ended {
		s.ended, s.err = true, p.endErr
		return s
	}
	p.kickLocked(h)
	return s
}

func (s *subscription) cancel() {
	s.once.Do(func() {
		close(s.stop)
		p := s.p
		p.mu.Lock()
		defer p.mu.Unlock()
		s.gone = true
		for i, x := range p.subs {
			if x == s {
				p.subs = append(p.subs[:i], p.subs[i+1:]...)
				break
			}
		}
		p.progressLocked()
	})
}

// overflowEvent is what a subscriber gets in place of the events its backlog dropped (the
// library's own event_overflow, same shape).
func overflowEvent(n uint64) Event {
	return Event{Type: "event_overflow", Raw: json.RawMessage(`{"type":"event_overflow","omprpc":true,"dropped":` + strconv.FormatUint(n, 10) + `}`)}
}

// next waits for the backlog: its events, led by an event_overflow when some were dropped
// (lost > 0), or the end (done: err is ctx's error or why the events ended, nil for a
// cancelled subscription). park marks the consumer busy with what it took (All).
func (s *subscription) next(ctx context.Context, park bool) (evs []Event, lost uint64, err error, done bool) {
	p := s.p
	for {
		p.mu.Lock()
		s.parked = false
		if len(s.q) > 0 || s.lost > 0 {
			evs, lost = s.q, s.lost
			if lost > 0 {
				evs = append([]Event{overflowEvent(lost)}, evs...)
			}
			s.q, s.lost = nil, 0
			s.handed += lost
			if park {
				s.handed, s.parked = s.pushed, true
			}
			p.progressLocked()
			p.mu.Unlock()
			return evs, lost, nil, false
		}
		ended, endErr := s.ended, s.err
		p.progressLocked()
		p.mu.Unlock()
		if ended {
			return nil, 0, endErr, true
		}
		select {
		case <-s.signal:
		case <-s.stop:
			return nil, 0, nil, true
		case <-ctx.Done():
			return nil, 0, ctx.Err(), true
		}
	}
}

// sent records that the consumer sent n events on its channel, or (park) that it waits on
// a full channel.
func (s *subscription) sent(n uint64, park bool) {
	p := s.p
	p.mu.Lock()
	s.handed += n
	s.parked = park
	p.progressLocked()
	p.mu.Unlock()
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
		p.mu.Lock()
		subscribed := len(p.subs) > 0
		p.mu.Unlock()
		h.dispatchHost(batch, subscribed)
		h.deliver(batch)
	}
}

// nextEvents takes the next batch, waiting without a deadline: Close wakes it. The batch
// comes as JSON lines, cut at each newline with a byte search (events never contain a raw
// newline) instead of scanning every byte of a JSON array.
func (h *core) nextEvents() ([]Event, error) {
	var batch *C.omprpc_event_batch
	err := h.do("next_events", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_next_event_batch(p, C.size_t(maxBatch), C.int64_t(timeoutInfinite), &batch, perr)
	})
	if err != nil {
		return nil, err
	}
	return takeBatch("next_events", batch)
}

// libraryEvents is how many of the library's queued events batch accounts for: its events,
// and for the library's event_overflow the events it dropped.
func libraryEvents(batch []Event) uint64 {
	n := uint64(len(batch))
	for _, ev := range batch {
		if d, ok := libraryOverflow(ev); ok {
			n += d - 1
		}
	}
	return n
}

// deliver appends batch to every subscriber's backlog (or to carry when nobody subscribes);
// it never waits.
func (h *core) deliver(batch []Event) {
	n := libraryEvents(batch)
	p := &h.ev
	p.mu.Lock()
	defer p.mu.Unlock()
	// The batch without prompt_complete events, made once, for the subscribers that do not
	// get them.
	var plain []Event
	plainMade := false
	withoutAll := func() []Event {
		if !plainMade {
			plain, plainMade = withoutCompletions(batch), true
		}
		return plain
	}
	if len(p.subs) == 0 {
		kept := batch
		if !p.completions {
			kept = withoutAll() // the carry goes to All, Events and Subscribe only
		}
		var lost uint64
		p.carry, lost = p.appendBounded(p.carry, kept, p.completions)
		p.carryLost += lost
	}
	for _, s := range p.subs {
		mine := batch
		if !s.completions {
			mine = withoutAll()
		}
		if s.from > p.accounted {
			// s.from counts the library's events: cut the whole batch, then filter the rest.
			mine = skipBefore(batch, s.from-p.accounted)
			if !s.completions {
				mine = withoutCompletions(mine)
			}
		}
		if len(mine) == 0 {
			continue
		}
		var lost uint64
		s.q, lost = p.appendBounded(s.q, mine, s.completions)
		s.lost += lost
		s.pushed += uint64(len(mine))
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
	p.accounted += n
	p.progressLocked()
}

// skipBefore drops the first k of the library's events from batch (an event_overflow of the
// library's stands for the events it dropped).
func skipBefore(batch []Event, k uint64) []Event {
	for i, ev := range batch {
		n := uint64(1)
		if d, ok := libraryOverflow(ev); ok {
			n = d
		}
		if k < n {
			return batch[i:]
		}
		k -= n
	}
	return nil
}

// subscribeFresh subscribes to the events the library queues from now on: not the kept
// ones (carry), nor those still in the library's queue from before (a turn of its own
// starts clean).
//
// It gets the library's prompt_complete events (Stream waits for its prompt's), and starts
// parked: until the stream takes its first events (after the prompt's acknowledgement, whose
// own call waits for the subscribers), it takes them without waiting for the agent.
func (h *core) subscribeFresh() (*subscription, error) {
	p := &h.ev
	s := &subscription{signal: make(chan struct{}, 1), stop: make(chan struct{}), p: p, completions: true, parked: true}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Under p.mu nothing is delivered, so every event from the count on reaches s.
	queued, ok := h.eventsQueued()
	if !ok {
		return nil, closedError("stream")
	}
	s.from = queued
	p.subs = append(p.subs, s)
	if p.ended {
		s.ended, s.err = true, p.endErr
		return s, nil
	}
	p.kickLocked(h)
	return s, nil
}

// poll takes the backlog without waiting (marking the consumer busy with it, as All does),
// led by an event_overflow when some were dropped; ended when no more events will come, err
// then says why.
func (s *subscription) poll() (evs []Event, ended bool, err error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(s.q) > 0 || s.lost > 0 {
		evs = s.q
		if s.lost > 0 {
			evs = append([]Event{overflowEvent(s.lost)}, evs...)
		}
		s.q, s.lost = nil, 0
	}
	s.handed, s.parked = s.pushed, true
	p.progressLocked()
	if s.ended && len(evs) == 0 {
		return nil, true, s.err
	}
	return evs, false, nil
}

func (h *core) endEvents(err error) {
	p := &h.ev
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended, p.endErr = true, err
	for _, s := range p.subs {
		s.ended, s.err = true, err
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
	p.progressLocked()
}

// syncEvents returns once every event the library queued before it was called has reached
// every subscriber: it is in the subscriber's backlog and the subscriber has taken it (All:
// the iteration has it; Events: it is on the channel), or the subscriber is busy (All: in its
// loop body; Events: its channel is full) and takes the rest without waiting for the agent.
// Every call that waits on the agent runs it before it returns, whatever its outcome.
func (h *core) syncEvents() {
	p := &h.ev
	p.mu.Lock()
	subscribed := len(p.subs) > 0
	p.mu.Unlock()
	if !subscribed {
		return
	}
	queued, ok := h.eventsQueued()
	if !ok {
		return // closed and freed: the subscriptions have ended
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncWaiters++
	defer func() { p.syncWaiters-- }()
	for !p.ended && p.accounted < queued && len(p.subs) > 0 {
		p.cond.Wait()
	}
	subs := append([]*subscription(nil), p.subs...)
	targets := make([]uint64, len(subs))
	for i, s := range subs {
		targets[i] = s.pushed
	}
	for i, s := range subs {
		for s.handed < targets[i] && !s.parked && !s.gone {
			p.cond.Wait()
		}
	}
}

// eventsQueued is the library's count of events queued since start (its counters).
func (h *core) eventsQueued() (uint64, bool) {
	var out *C.char
	if h.do("counters", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_counters(p, &out, perr)
	}) != nil {
		return 0, false
	}
	var k struct {
		EventsQueued uint64 `json:"events_queued"`
	}
	if json.Unmarshal(takeBytes(out), &k) != nil {
		return 0, false
	}
	return k.EventsQueued, true
}

// All iterates over the client's events: each one with a nil error, and last, if the
// events end, the reason with a zero Event — ctx's error, or ErrClosed (with the close
// reason) once the client is closed and every queued event was delivered. Breaking out of
// the loop ends the subscription. Several iterations (and Events channels) may run at once:
// each sees every event read while it runs. Events the iteration has not taken yet wait in
// its own backlog (bounded like the library's queue; an event_overflow says what it lost).
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
			batch, _, err, done := s.next(ctx, true)
			if done {
				if err != nil {
					yield(Event{}, err)
				}
				return
			}
			for _, ev := range batch {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// Events returns a channel of the client's events (see All), closed when ctx ends or the
// client's events end. Events not yet on the channel wait in the subscription's own backlog
// (bounded like the library's queue; an event_overflow says what it lost), so a slow reader
// delays nobody. Subscribe gives the same channel and why it closed.
func (c *Client) Events(ctx context.Context) <-chan Event {
	return c.Subscribe(ctx).C
}

// Subscribe is Events with the reason the channel closed: Subscription.Err.
func (c *Client) Subscribe(ctx context.Context) *Subscription {
	h := c.h
	runtime.KeepAlive(c)
	if ctx == nil {
		ctx = context.Background()
	}
	s := h.subscribe()
	out := make(chan Event, 256)
	sub := &Subscription{C: out, done: make(chan struct{})}
	go func() {
		var end error
		defer func() {
			sub.err = end
			close(sub.done) // before C closes: Err answers once C is seen closed
			close(out)
		}()
		defer s.cancel()
		for {
			batch, lost, err, done := s.next(ctx, false)
			if done {
				end = err
				return
			}
			// the leading event_overflow (lost > 0) was accounted when taken
			var sent uint64
			for i, ev := range batch {
				count := uint64(1)
				if i == 0 && lost > 0 {
					count = 0
				}
				select {
				case out <- ev:
					sent += count
					continue
				default:
				}
				s.sent(sent, true)
				sent = 0
				select {
				case out <- ev:
					sent += count
				case <-s.stop:
					return
				case <-ctx.Done():
					end = ctx.Err()
					return
				}
			}
			s.sent(sent, false)
		}
	}()
	return sub
}

// EventFD returns a descriptor that polls readable (level-triggered) while the library holds
// events nobody has taken yet, and once the client is closed: for a program that folds the
// client into its own poll loop (epoll, poll, select) instead of parking a goroutine on
// Events. The client owns it: do not read, write or close it. It is valid until Close, after
// which the number may name another file; EventFD then returns ErrClosed.
//
// The descriptor watches the library's queue, not this package's: the events pump takes
// events from that queue while anything subscribes (All, Events) or host tools, host URI
// schemes or a policy handler are registered, and then the descriptor is readable only for
// the moment before the pump takes them. It tells "events wait" reliably only while none of
// those is active; a pump that was active may still take one more batch after the last
// subscription ended, and keeps it for the next subscriber. Take the waiting events with All
// or Events: a new subscriber gets them first.
//
// The library queues a prompt_complete event for every prompt (Stream ends its turn there),
// and it makes the descriptor readable too, while All and Events show it only to a client
// started with Options.PromptCompleteEvents: without that option, a loop the descriptor wakes
// for one finds no event to handle (the pump takes it, and the descriptor goes quiet).
//
// Unix only: on Windows the library has no such descriptor and EventFD returns
// ErrInvalidArgument; EventHandle is its counterpart there.
func (c *Client) EventFD() (int, error) {
	defer runtime.KeepAlive(c)
	var fd C.int
	err := c.h.do("event_fd", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_event_fd(p, &fd, perr)
	})
	if err != nil {
		return -1, err
	}
	return int(fd), nil
}

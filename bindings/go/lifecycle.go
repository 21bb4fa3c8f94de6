package omprpc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// turnCalls counts the turn calls running on a client (PromptAndWait, CollectEvents, and so
// Stream), for Shutdown to wait for.
type turnCalls struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed while n == 0
}

func (t *turnCalls) enter() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.none = make(chan struct{})
	}
	t.n++
}

func (t *turnCalls) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.none)
	}
}

// idle is a channel closed once no turn call runs.
func (t *turnCalls) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.none == nil { // none ever ran
		t.none = make(chan struct{})
		close(t.none)
	}
	return t.none
}

// The library runs one prompt-lifecycle call at a time (PromptAndWait, CollectEvents,
// WaitForIdle; ErrConcurrency for another). A Stream is none of them — it follows the
// prompt_complete event — so this package keeps the same rule between a Stream and them. The
// atomics are sequentially consistent: of a Stream and a call starting at once, at least one
// sees the other.

// enterCollector marks a PromptAndWait, CollectEvents or WaitForIdle call running; release
// ends it. ErrConcurrency while a Stream runs.
func (h *core) enterCollector(op string) (release func(), err error) {
	h.collecting.Add(1)
	if h.streaming.Load() {
		h.collecting.Add(-1)
		return nil, newError(op, StatusConcurrency, "a Stream runs on this client: finish it, or leave its loop, first")
	}
	return func() { h.collecting.Add(-1) }, nil
}

// enterStream marks a Stream running; release ends it. ErrConcurrency while another Stream
// or a PromptAndWait, CollectEvents or WaitForIdle call runs.
func (h *core) enterStream() (release func(), err error) {
	if !h.streaming.CompareAndSwap(false, true) {
		return nil, newError(opStream, StatusConcurrency, "a turn is already streaming on this client (one at a time): finish it, or leave its loop, first")
	}
	if h.collecting.Load() > 0 {
		h.streaming.Store(false)
		return nil, newError(opStream, StatusConcurrency, "a PromptAndWait, CollectEvents or WaitForIdle call runs on this client: one prompt-lifecycle call at a time")
	}
	return func() { h.streaming.Store(false) }, nil
}

// Shutdown stops the agent gracefully, like http.Server.Shutdown: it waits, within ctx, for
// the turn calls running on the client (PromptAndWait, CollectEvents, Stream) to return and
// for the agent to be idle by its own account (as WaitForIdle: the runs it started by itself
// too), then closes the client as Close does (stdin EOF; the agent exits by itself, or after
// stop_grace_ms SIGTERM and then SIGKILL to its process group). When ctx ends first it closes
// at once — the running calls end with ErrClosed — and returns an error wrapping ctx.Err().
// Otherwise it returns Close's result. Close is the immediate form.
func (c *Client) Shutdown(ctx context.Context) error {
	defer runtime.KeepAlive(c)
	if ctx == nil {
		ctx = context.Background()
	}
	settled := c.settle(ctx)
	closed := c.Close()
	if settled != nil {
		return fmt.Errorf("omprpc: shutdown: %w (the client was closed at once)", settled)
	}
	return closed
}

// settle waits until no turn call runs and the agent is idle; ctx's error if it ends first.
func (c *Client) settle(ctx context.Context) error {
	h := c.h
	for {
		select {
		case <-h.turns.idle():
		case <-h.closing:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		err := c.WaitForIdle(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, ErrConcurrency) {
			// Idle; or nothing left to wait for (closed, exited); a prompt's late failure
			// is the agent's answer, not a reason to wait longer.
			return nil
		}
		// A turn call started meanwhile: wait for it too.
	}
}

// Subscription is a channel of the client's events (Client.Subscribe) that says why it
// ended, like sql.Rows.Err or bufio.Scanner.Err.
type Subscription struct {
	// C receives the events; it is closed when the subscription ends.
	C    <-chan Event
	done chan struct{} // closed once err is set, just before C is closed
	err  error
}

// Err is why C was closed: ctx's error (context.Canceled, context.DeadlineExceeded), or
// ErrClosed with the client's close reason once the client is closed and every queued event
// was delivered, its message saying why the client closed (Close; "RPC process exited with
// code 3. Stderr: …" for an agent that exited by itself; a protocol failure …). nil while C
// is open. Lost events do not end a subscription: an event_overflow event says how many were
// dropped.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

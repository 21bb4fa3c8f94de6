package omprpc

/*
#include <stdlib.h>
#include "omprpc.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client is one agent process and its RPC session (an omprpc_client). Every method may be
// called from any goroutine, concurrently, Close included. Close it when done: a finalizer
// closes a forgotten client, but only once it is unreachable, which host tool handlers that
// capture it prevent.
type Client struct {
	h *core
}

// core is the state behind a Client. The event pump and host tool goroutines hold the core,
// never the Client, so an abandoned Client can still be finalized.
type core struct {
	// mu guards ptr: every C call holds it for reading; free holds it for writing, so the
	// handle is never freed under a running call (omprpc_client_free must not overlap any).
	mu  sync.RWMutex
	ptr *C.omprpc_client

	closeOnce sync.Once
	closing   chan struct{} // closed by Close, after omprpc_client_close
	closeErr  error
	final     snapshot // what Stderr / ProtocolErrors / Info report after Close

	base       context.Context // cancelled by Close: the parent of host tool contexts
	baseCancel context.CancelFunc

	ev     pump
	host   hostTools
	policy PolicyHandler // ToolPolicy.Handler, fixed at start

	model      string       // Options.Model: named in usage whose message names none (Stream)
	streaming  atomic.Bool  // a Stream runs (one at a time)
	collecting atomic.Int32 // PromptAndWait, CollectEvents and WaitForIdle calls running
	turns      turnCalls    // the turn calls running, for Shutdown
}

type snapshot struct {
	stderr         string
	protocolErrors []byte
	info           []byte
	counters       []byte
	logs           []json.RawMessage // log records not yet taken at Close (teardown's)
}

type (
	cfn func(p *C.omprpc_client, perr **C.char) C.omprpc_status
	tfn func(p *C.omprpc_client, timeout C.int64_t, perr **C.char) C.omprpc_status
)

// Start spawns the agent described by opts, waits for its handshake, negotiates protocol
// v2 when offered, and registers opts.HostTools / HostURISchemes. If ctx ends first, Start
// returns ctx's error at once and the half-started agent is closed in the background (its
// deadline also bounds startup_timeout_ms, so the library gives up by then too).
func Start(ctx context.Context, opts Options) (*Client, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkABI(); err != nil {
		return nil, err
	}
	if err := ctxError("start", ctx); err != nil {
		return nil, err
	}
	js, err := opts.clientJSON(ctx)
	if err != nil {
		return nil, err
	}
	ptr, err := startC(ctx, js)
	if err != nil {
		return nil, err
	}
	h := &core{ptr: ptr, closing: make(chan struct{}), model: opts.Model}
	h.base, h.baseCancel = context.WithCancel(context.Background())
	if opts.EventQueueCapacity != nil {
		h.ev.capacity = *opts.EventQueueCapacity // < 0 (Unlimited): no bound
	}
	h.ev.completions = opts.showsCompletions()
	h.ev.init()
	h.host.init(opts.HostToolConcurrency)
	c := &Client{h: h}
	runtime.SetFinalizer(c, finalizeClient)
	if opts.ToolPolicy != nil {
		h.policy = opts.ToolPolicy.Handler
	}
	h.host.install(opts.HostTools)
	h.host.installURIs(opts.HostURISchemes)
	if h.hostDemand() {
		h.ev.setHostDemand(h, true)
	}
	return c, nil
}

type startResult struct {
	ptr *C.omprpc_client
	err error
}

func startC(ctx context.Context, js []byte) (*C.omprpc_client, error) {
	cs, err := cstring("start", "options", string(js))
	if err != nil {
		return nil, err
	}
	run := func() startResult {
		defer freeC(cs)
		var p *C.omprpc_client
		var cerr *C.char
		if st := C.omprpc_client_start(cs, &p, &cerr); st != C.OMPRPC_STATUS_OK {
			return startResult{nil, errorFromJSON("start", Status(st), takeBytes(cerr))}
		}
		return startResult{p, nil}
	}
	if ctx.Done() == nil {
		r := run()
		return r.ptr, r.err
	}
	ch := make(chan startResult, 1)
	go func() { ch <- run() }()
	d, hasDeadline := ctx.Deadline()
	select {
	case r := <-ch:
		return r.ptr, pastDeadline(r.err, d, hasDeadline)
	case <-ctx.Done():
		select {
		case r := <-ch: // finished at the same moment: keep it
			return r.ptr, pastDeadline(r.err, d, hasDeadline)
		default:
		}
		go func() {
			if r := <-ch; r.ptr != nil {
				C.omprpc_client_free(r.ptr) // closes the agent, then frees
			}
		}()
		return nil, ctxError("start", ctx)
	}
}

func finalizeClient(c *Client) {
	// Closing waits for the agent to exit: not on the finalizer goroutine.
	go c.h.close()
}

// Close closes the client: every blocked call returns at once (ErrClosed), host tool
// handlers' contexts are cancelled, event subscriptions end, the agent is stopped (stdin
// EOF, grace, SIGTERM, SIGKILL to its process group) and the handle is freed. Idempotent.
// Stderr, ProtocolErrors and Info keep answering with their last state.
func (c *Client) Close() error {
	runtime.SetFinalizer(c, nil)
	return c.h.close()
}

func (h *core) close() error {
	h.closeOnce.Do(func() {
		h.closeErr = h.do("close", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
			return C.omprpc_client_close(p, perr)
		})
		close(h.closing)
		h.baseCancel()
		h.ev.wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		if p := h.ptr; p != nil {
			h.final = takeSnapshot(p)
			h.ptr = nil
			C.omprpc_client_free(p)
		}
	})
	return h.closeErr
}

func takeSnapshot(p *C.omprpc_client) snapshot {
	var s snapshot
	var out *C.char
	if C.omprpc_client_stderr(p, &out, nil) == C.OMPRPC_STATUS_OK {
		s.stderr = takeString(out)
	}
	out = nil
	if C.omprpc_client_protocol_errors(p, &out, nil) == C.OMPRPC_STATUS_OK {
		s.protocolErrors = takeBytes(out)
	}
	out = nil
	if C.omprpc_client_info(p, &out, nil) == C.OMPRPC_STATUS_OK {
		s.info = takeBytes(out)
	}
	out = nil
	if C.omprpc_client_counters(p, &out, nil) == C.OMPRPC_STATUS_OK {
		s.counters = takeBytes(out)
	}
	// Until CLOSED (all taken) or INVALID_ARGUMENT (logs are off).
	for {
		out = nil
		if C.omprpc_client_next_logs(p, 4096, 0, &out, nil) != C.OMPRPC_STATUS_OK {
			break
		}
		var recs []json.RawMessage
		if json.Unmarshal(takeBytes(out), &recs) != nil {
			break
		}
		s.logs = append(s.logs, recs...)
	}
	return s
}

// do runs one C call on the live handle under the read lock; ErrClosed once freed.
func (h *core) do(op string, fn cfn) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.ptr == nil {
		return closedError(op)
	}
	var cerr *C.char
	st := fn(h.ptr, &cerr)
	if st == C.OMPRPC_STATUS_OK {
		if cerr != nil { // never written on success; be safe anyway
			C.omprpc_string_free(cerr)
		}
		return nil
	}
	return errorFromJSON(op, Status(st), takeBytes(cerr))
}

// ctxError is the error for a context that ended before a call: a deadline is a timeout
// that also matches context.DeadlineExceeded; a cancellation is ctx.Err() itself.
func ctxError(op string, ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return deadlineError(op)
	}
	return err
}

func deadlineError(op string) error {
	e := newError(op, StatusTimeout, "the context deadline passed")
	e.ctxErr = context.DeadlineExceeded
	return e
}

// cargs are the C strings a call reads. They are freed once the C call returned: by the
// caller, or by the goroutine that waits for a call its caller left (a cancelled ctx).
type cargs []*C.char

func (a cargs) free() {
	for _, p := range a {
		freeC(p)
	}
}

// request runs a call that must not be repeated (it sends something): its timeout is what
// is left of ctx's deadline, or the client's default for that kind of call. It takes
// ownership of in.
//
// A ctx that can be cancelled is watched while the call runs (on its own goroutine): a
// deadline is the call's own timeout, so its result is awaited; a cancellation returns at
// once with ctx's error (cancelledError). The C call then finishes in the background and
// drop (may be nil) releases what it wrote: the result is dropped, nothing leaks. A turn
// call (turn: PromptAndWait, CollectEvents, Stream) is aborted first: abort goes to the
// agent, and the call returns once the aborted turn completed (within abortSettle), so the
// next prompt finds the agent settled.
func (h *core) request(ctx context.Context, op string, in cargs, turn bool, fn tfn, drop func(error)) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctxError(op, ctx); err != nil {
		in.free()
		return err
	}
	t := timeoutDefault
	d, hasDeadline := ctx.Deadline()
	if hasDeadline {
		if t = ms(time.Until(d)); t <= 0 {
			in.free()
			return deadlineError(op)
		}
	}
	if turn {
		h.turns.enter()
		defer h.turns.leave()
	}
	call := func() error {
		defer in.free()
		return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
			return fn(p, C.int64_t(t), perr)
		})
	}
	if ctx.Done() == nil {
		err := call()
		h.syncEvents()
		return pastDeadline(err, d, hasDeadline)
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		h.syncEvents()
		return pastDeadline(err, d, hasDeadline)
	case <-ctx.Done():
	}
	select {
	case err := <-done: // it finished meanwhile: its result stands
		h.syncEvents()
		return pastDeadline(err, d, hasDeadline)
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The C call's timeout is the same deadline: its answer is a moment away.
		err := <-done
		h.syncEvents()
		return pastDeadline(err, d, hasDeadline)
	}
	aborted := false
	if turn {
		aborted = h.abortTurn(done, drop)
	} else {
		go func() { dropResult(drop, <-done) }()
	}
	return cancelledError(op, ctx, aborted)
}

// abortSettle bounds how long a cancelled turn call waits for the agent to answer abort and
// complete the aborted turn before it returns anyway (the call then ends in the background).
const abortSettle = 5 * time.Second

// abortTurn sends abort for the turn whose C call is done's, and waits (abortSettle at most)
// for that call to end; its result goes to drop. It reports whether the agent took the abort.
func (h *core) abortTurn(done <-chan error, drop func(error)) bool {
	until := time.Now().Add(abortSettle)
	err := h.do("abort", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_abort(p, C.int64_t(abortSettle.Milliseconds()), perr)
	})
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case result := <-done:
		h.syncEvents()
		dropResult(drop, result)
	case <-timer.C:
		go func() { dropResult(drop, <-done) }()
	}
	return err == nil
}

func dropResult(drop func(error), err error) {
	if drop != nil {
		drop(err)
	}
}

// cancelledError is the error of a call whose ctx was cancelled while it ran: it wraps
// ctx.Err() (and the cancellation's cause, when it has its own).
func cancelledError(op string, ctx context.Context, aborted bool) error {
	what := "the call was left; its result is dropped"
	if aborted {
		what = "the turn was aborted"
	}
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return &leftError{fmt.Errorf("omprpc: %s: %w (%s): %w", op, err, what, cause)}
	}
	return &leftError{fmt.Errorf("omprpc: %s: %w (%s)", op, err, what)}
}

// leftError marks a call its caller left on cancellation while the C call went on.
type leftError struct{ err error }

func (e *leftError) Error() string { return e.err.Error() }
func (e *leftError) Unwrap() error { return e.err }

// isCancelled reports whether err is a call left on cancellation (its outcome is decided in
// the background), not one that never started or failed.
func isCancelled(err error) bool {
	var l *leftError
	return errors.As(err, &l)
}

// pastDeadline marks a timeout that ctx's deadline caused (its timer may not have fired
// yet, so the clock decides, not ctx.Err()).
func pastDeadline(err error, d time.Time, hasDeadline bool) error {
	if err != nil && hasDeadline && !time.Now().Before(d) {
		return withContext(err, context.DeadlineExceeded)
	}
	return err
}

// waitSlice is the longest single C wait of a repeatable call whose ctx can be cancelled.
const waitSlice = 200 * time.Millisecond

// wait runs a repeatable wait (next_ui_request, wait_for_idle): without a ctx that can end,
// one blocking C call; otherwise C waits of at most waitSlice, checking ctx in between.
func (h *core) wait(ctx context.Context, op string, fn tfn) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer h.syncEvents()
	if ctx.Done() == nil {
		return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
			return fn(p, C.int64_t(timeoutInfinite), perr)
		})
	}
	for {
		if err := ctxError(op, ctx); err != nil {
			return err
		}
		slice := waitSlice
		d, hasDeadline := ctx.Deadline()
		if hasDeadline {
			if left := time.Until(d); left < slice {
				slice = left
			}
		}
		err := h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
			return fn(p, C.int64_t(ms(slice)), perr)
		})
		if err == nil || !errors.Is(err, ErrTimeout) {
			return err
		}
		if hasDeadline && !time.Now().Before(d) {
			return pastDeadline(err, d, hasDeadline)
		}
	}
}

// --- commands ------------------------------------------------------------------------------

// Request sends any command {"type": typ, …params} and returns the response's data verbatim
// (JSON null when absent). params is nil, a JSON object as json.RawMessage or []byte (sent
// as is), or any value that marshals to a JSON object. The agent's success:false is a
// *CommandError.
func (c *Client) Request(ctx context.Context, typ string, params any) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	const op = "request"
	ct, err := cstring(op, "type", typ)
	if err != nil {
		return nil, err
	}
	pj, err := rawJSON(op, "params", params)
	if err != nil {
		freeC(ct)
		return nil, err
	}
	var out *C.char
	err = c.h.request(ctx, op, cargs{ct, pj}, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_request(p, ct, pj, t, &out, perr)
	}, func(error) { takeBytes(out) })
	if err != nil {
		return nil, err
	}
	return takeBytes(out), nil
}

// SendFrame writes one frame as is (a JSON object with a string "type"), with no id and no
// response awaited, e.g. widget_layout. frame is raw JSON or a value marshalled to it.
func (c *Client) SendFrame(frame any) error {
	defer runtime.KeepAlive(c)
	const op = "send_frame"
	fj, err := rawJSON(op, "frame", frame)
	if err != nil {
		return err
	}
	defer freeC(fj)
	return c.h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_send_frame(p, fj, perr)
	})
}

// promptLike sends a prompt-like command: call runs it; turn and drop as for request.
func (c *Client) promptLike(ctx context.Context, op, message string, opts *PromptOptions, turn bool,
	call func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status, drop func(error)) error {
	defer runtime.KeepAlive(c)
	var optv any
	if opts != nil {
		optv = *opts
	}
	var cm *C.char
	if strings.IndexByte(message, 0) >= 0 {
		// A C string cannot hold a NUL; the options' "message" (JSON) can.
		m := map[string]any{}
		if optv != nil {
			js, _ := json.Marshal(optv)
			_ = json.Unmarshal(js, &m)
		}
		m["message"] = message
		optv = m
	} else {
		cm = C.CString(message)
	}
	co, err := rawJSON(op, "options", optv)
	if err != nil {
		freeC(cm)
		return err
	}
	return c.h.request(ctx, op, cargs{cm, co}, turn, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return call(p, cm, co, t, perr)
	}, drop)
}

// Prompt sends a prompt and returns its request id once the agent acknowledged it; the
// run streams as events (WaitForIdle waits for it).
func (c *Client) Prompt(ctx context.Context, message string, opts *PromptOptions) (string, error) {
	var out *C.char
	err := c.promptLike(ctx, "prompt", message, opts, false, func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_prompt(p, m, o, t, &out, perr)
	}, func(error) { takeString(out) })
	if err != nil {
		return "", err
	}
	return takeString(out), nil
}

// AbortAndPrompt sends abort_and_prompt; like Prompt.
func (c *Client) AbortAndPrompt(ctx context.Context, message string, opts *PromptOptions) (string, error) {
	var out *C.char
	err := c.promptLike(ctx, "abort_and_prompt", message, opts, false, func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_abort_and_prompt(p, m, o, t, &out, perr)
	}, func(error) { takeString(out) })
	if err != nil {
		return "", err
	}
	return takeString(out), nil
}

// Turn is one prompt's completed turn, as the library assembled it. The library decides
// where a prompt ends: where the agent says it will not go on (pi's agent_settled, a
// prompt's disposition), else after the last run of the agent's own recovery (a retry after
// a failed LLM call, an overflow compaction) — never at an agent_end the agent goes on
// after. So a turn may hold several runs; Attempts, FailedAttempts and Compactions say what
// happened in between.
type Turn struct {
	RequestID    string `json:"requestId"`
	AgentInvoked bool   `json:"agentInvoked"`
	// Messages are every run's messages in order (a failed attempt's error message too; a
	// compacted agent_end rebuilt); pi 1.x lists a system message first in a run. Each holds its
	// variant (`switch m := msg.Value.(type) { case *AssistantMessage: …`); a role the table
	// does not name, or a message that does not fit its role's type, is an *UnknownAgentMessage
	// with the message as sent.
	Messages []AgentMessageValue `json:"messages"`
	// AssistantMessage is the last assistant message (after a retry: the answer); nil when
	// there was none.
	AssistantMessage json.RawMessage `json:"assistantMessage"`
	// AssistantText is its visible text; nil when there was no assistant message.
	AssistantText *string `json:"assistantText"`
	// PromptResult is the agent's prompt_result frame, when the prompt ended with one.
	PromptResult json.RawMessage `json:"promptResult,omitempty"`
	// Events are the turn's events, verbatim.
	Events []json.RawMessage `json:"events"`
	// Summary is the turn summary (text, reasoning, tool calls, usage …) when the client
	// was started with TurnSummary; nil otherwise.
	Summary json.RawMessage `json:"summary,omitempty"`
	// Outcome is how the prompt completed.
	Outcome TurnOutcome `json:"-"`
	// Attempts is how many attempts the agent made at the prompt: 1, plus one per retry and
	// per overflow compaction it retried after; 0 when nothing ran.
	Attempts int `json:"-"`
	// Settled: the agent said it settled (pi's agent_settled, pi 0.80.4 on).
	Settled bool `json:"-"`
	// FailedAttempts are the attempts that failed, oldest first, each with what the agent did
	// next; empty when none failed.
	FailedAttempts []FailedAttempt `json:"-"`
	// Compactions are the compactions inside the turn, oldest first.
	Compactions []Compaction `json:"-"`
	// StopReason and ErrorMessage are the assistant message's stopReason ("stop", "toolUse",
	// "error", "aborted" …) and errorMessage; nil when it has none.
	StopReason   *string `json:"-"`
	ErrorMessage *string `json:"-"`
	// Usage is the assistant message's usage (tokens, cost); nil when it has none (or one
	// that does not fit the type: MessageUsage.Raw keeps what the agent sent).
	Usage *MessageUsage `json:"-"`
	// types are the events' types, as the library read them.
	types []string
}

// Text is the turn's assistant text (AssistantText), "" when there was no assistant message:
// no nil pointer to check before printing it.
func (t *Turn) Text() string {
	if t == nil || t.AssistantText == nil {
		return ""
	}
	return *t.AssistantText
}

// TurnOutcome is how a prompt completed (omprpc_turn_outcome; String gives the turn JSON's
// "outcome" name).
type TurnOutcome int

const (
	// TurnAgentEnd: the last run's terminal agent_end ended it (an agent that does not
	// announce settling: pi before 0.80.4, omp).
	TurnAgentEnd TurnOutcome = iota
	// TurnPromptResult: omp's prompt_result answered it (a command that ran no agent loop).
	TurnPromptResult
	// TurnNotInvoked: nothing ran (the prompt's response said agentInvoked:false or
	// disposition "handled", or the agent proved idle with no run for it).
	TurnNotInvoked
	// TurnAgentSettled: the agent said it settled (agent_settled) after the prompt's runs.
	TurnAgentSettled
	// TurnAborted: it was aborted (agent_settled {aborted:true}, a retry aborted in its
	// delay, or a last run that stopped "aborted").
	TurnAborted
)

var turnOutcomeNames = [...]string{
	TurnAgentEnd:     "agent_end",
	TurnPromptResult: "prompt_result",
	TurnNotInvoked:   "not_invoked",
	TurnAgentSettled: "agent_settled",
	TurnAborted:      "aborted",
}

// String is the outcome's name in the turn JSON ("agent_end", "agent_settled", "aborted",
// "prompt_result", "not_invoked").
func (o TurnOutcome) String() string {
	if o >= 0 && int(o) < len(turnOutcomeNames) {
		return turnOutcomeNames[o]
	}
	return "TurnOutcome(" + strconv.Itoa(int(o)) + ")"
}

// FailedAttempt is an attempt at a prompt that failed, and what the agent did next.
type FailedAttempt struct {
	Attempt int    `json:"attempt"` // 1 for the prompt's first run
	Error   string `json:"error"`   // the error the agent reported ("" when it gave none)
	// Then is what followed the failure.
	Then AttemptThen `json:"then"`
	// DelayMs is the delay the agent announced before its retry (Then AttemptRetry); 0 when
	// it announced none.
	DelayMs int64 `json:"delayMs,omitempty"`
}

// AttemptThen is what an agent did after a failed attempt.
type AttemptThen string

const (
	AttemptRetry      AttemptThen = "retry"      // it retried (auto_retry_start)
	AttemptCompaction AttemptThen = "compaction" // it compacted for an overflow and retried
	AttemptGaveUp     AttemptThen = "gave_up"    // its retries ran out (auto_retry_end {success:false})
	AttemptCancelled  AttemptThen = "cancelled"  // the host aborted the retry in its delay
	AttemptNone       AttemptThen = "none"       // nothing: the failure ended the prompt
)

// Compaction is a compaction inside a turn (pi's compaction_start/end, omp's
// auto_compaction_start/end).
type Compaction struct {
	Reason string `json:"reason"` // "overflow", "threshold" …
	// Aborted and WillRetry are the compaction's result (both false when it had not ended
	// when the turn did): WillRetry, the agent retries the prompt after it.
	Aborted   bool `json:"aborted"`
	WillRetry bool `json:"willRetry"`
	// ErrorMessage is the compaction's error; "" when none.
	ErrorMessage string `json:"errorMessage"`
}

// TypedEvents returns the turn's events with their types, as the event pump delivers them
// (the library reads each type; a host dispatching on it decodes only the events it needs).
// They alias Events.
func (t *Turn) TypedEvents() []Event {
	evs := make([]Event, len(t.Events))
	for i, raw := range t.Events {
		typ := ""
		if i < len(t.types) {
			typ = t.types[i]
		}
		evs[i] = Event{Type: typ, Raw: raw}
	}
	return evs
}

// PromptAndWait prompts and waits until that prompt completes — where the agent will not go
// on (see Turn): after its retries and overflow recovery, at pi's agent_settled. The wait is
// bounded by ctx's deadline (ErrTimeout; the agent goes on), else by the turn_timeout_ms
// option (no deadline by default); Close ends it at once with ErrClosed. A cancelled ctx
// aborts the turn: abort is sent, and PromptAndWait returns once the aborted prompt completed
// (abortSettle at most), with a nil Turn and an error wrapping ctx.Err(), so the next prompt
// finds the agent settled. Only one of PromptAndWait, CollectEvents, WaitForIdle and Stream
// runs at a time (ErrConcurrency). A rejected or late-failed prompt is a *CommandError;
// ErrLimitExceeded past max_event_history.
func (c *Client) PromptAndWait(ctx context.Context, message string, opts *PromptOptions) (*Turn, error) {
	release, err := c.h.enterCollector("prompt_and_wait")
	if err != nil {
		return nil, err
	}
	defer release()
	var turn *C.omprpc_turn
	err = c.promptLike(ctx, "prompt_and_wait", message, opts, true, func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_prompt_and_wait_turn(p, m, o, t, &turn, perr)
	}, func(err error) {
		if err == nil {
			C.omprpc_turn_free(turn)
		}
	})
	if err != nil {
		return nil, err
	}
	return takeTurn("prompt_and_wait", turn)
}

func (c *Client) messageCommand(ctx context.Context, op, message string, images []ImageContent,
	call func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status) error {
	defer runtime.KeepAlive(c)
	params := struct {
		Message string         `json:"message"`
		Images  []ImageContent `json:"images,omitempty"`
	}{message, images}
	if strings.IndexByte(message, 0) >= 0 {
		// A C string cannot hold a NUL: send the same command through request, whose
		// params are JSON.
		_, err := c.Request(ctx, op, params)
		return err
	}
	var optv any
	if len(images) > 0 {
		optv = struct {
			Images []ImageContent `json:"images"`
		}{params.Images}
	}
	co, err := rawJSON(op, "options", optv)
	if err != nil {
		return err
	}
	cm := C.CString(message)
	return c.h.request(ctx, op, cargs{cm, co}, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return call(p, cm, co, t, perr)
	}, nil)
}

// Steer sends steer (a message into the running turn), with optional images.
func (c *Client) Steer(ctx context.Context, message string, images ...ImageContent) error {
	return c.messageCommand(ctx, "steer", message, images, func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_steer(p, m, o, t, perr)
	})
}

// FollowUp sends follow_up (a message for after the running turn), with optional images.
func (c *Client) FollowUp(ctx context.Context, message string, images ...ImageContent) error {
	return c.messageCommand(ctx, "follow_up", message, images, func(p *C.omprpc_client, m, o *C.char, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_follow_up(p, m, o, t, perr)
	})
}

// Abort sends abort.
func (c *Client) Abort(ctx context.Context) error {
	defer runtime.KeepAlive(c)
	return c.h.request(ctx, "abort", nil, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_abort(p, t, perr)
	}, nil)
}

// command sends a command of the protocol table (protocol_gen.go) through Request and
// decodes its data into out (nil: the command has none).
func (c *Client) command(ctx context.Context, typ string, params any, out any) error {
	data, err := c.Request(ctx, typ, params)
	if err != nil || out == nil || len(data) == 0 {
		return err
	}
	return unmarshal(typ, data, out)
}

// decodeEvent decodes an event into its generated type (protocol_gen.go).
func decodeEvent(e Event, v any) error {
	return unmarshal(e.Type, e.Raw, v)
}

// CollectEvents waits for the end of the agent's work — its next terminal agent_end it does
// not go on from (no retry, no overflow recovery), or its agent_settled — and returns every
// session event from the call until then. Its wait is bounded like PromptAndWait's, and a
// cancelled ctx aborts the agent's work as PromptAndWait's does.
func (c *Client) CollectEvents(ctx context.Context) ([]Event, error) {
	defer runtime.KeepAlive(c)
	release, err := c.h.enterCollector("collect_events")
	if err != nil {
		return nil, err
	}
	defer release()
	var batch *C.omprpc_event_batch
	err = c.h.request(ctx, "collect_events", nil, true, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_collect_event_batch(p, t, &batch, perr)
	}, func(err error) {
		if err == nil {
			C.omprpc_event_batch_free(batch)
		}
	})
	if err != nil {
		return nil, err
	}
	return takeBatch("collect_events", batch)
}

// WaitForIdle waits until every accepted prompt has completed (after the agent's retries and
// overflow recovery: where it will not go on); a *CommandError when a
// prompt failed late since the last prompt was sent. ctx ends the wait, not the client.
// The turn_timeout_ms option bounds it only when ctx can never end (context.Background()).
func (c *Client) WaitForIdle(ctx context.Context) error {
	defer runtime.KeepAlive(c)
	release, err := c.h.enterCollector("wait_for_idle")
	if err != nil {
		return err
	}
	defer release()
	if ctx == nil || ctx.Done() == nil {
		return c.h.request(ctx, "wait_for_idle", nil, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
			return C.omprpc_client_wait_for_idle(p, t, perr)
		}, nil)
	}
	return c.h.wait(ctx, "wait_for_idle", func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_wait_for_idle(p, t, perr)
	})
}

// --- UI requests ---------------------------------------------------------------------------

// UIRequest is an extension_ui_request that needs an answer (select, confirm, input,
// editor, or an unknown interactive method). Raw is the frame verbatim.
type UIRequest struct {
	ID          string          `json:"id"`
	Method      string          `json:"method"`
	Title       string          `json:"title,omitempty"`
	Message     string          `json:"message,omitempty"`
	Placeholder string          `json:"placeholder,omitempty"`
	Prefill     string          `json:"prefill,omitempty"`
	Options     []string        `json:"options,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// NextUIRequest takes the next UI request that needs an answer, waiting until one arrives,
// ctx ends (the client stays usable) or the client closes (ErrClosed).
func (c *Client) NextUIRequest(ctx context.Context) (*UIRequest, error) {
	defer runtime.KeepAlive(c)
	var out *C.char
	err := c.h.wait(ctx, "next_ui_request", func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_next_ui_request(p, t, &out, perr)
	})
	if err != nil {
		return nil, err
	}
	raw := takeBytes(out)
	r := &UIRequest{Raw: raw}
	if err := unmarshal("next_ui_request", raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (c *Client) uiAnswer(op, id string, call func(p *C.omprpc_client, cid *C.char, perr **C.char) C.omprpc_status) error {
	defer runtime.KeepAlive(c)
	cid, err := cstring(op, "request id", id)
	if err != nil {
		return err
	}
	defer freeC(cid)
	return c.h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status { return call(p, cid, perr) })
}

// UISendValue answers UI request id (select, input, editor) with value. ErrNotFound unless
// that request is open (unknown, already answered, or dismissed by the agent).
func (c *Client) UISendValue(id, value string) error {
	cv, err := cstring("ui_send_value", "value", value)
	if err != nil {
		return err
	}
	defer freeC(cv)
	return c.uiAnswer("ui_send_value", id, func(p *C.omprpc_client, cid *C.char, perr **C.char) C.omprpc_status {
		return C.omprpc_client_ui_send_value(p, cid, cv, perr)
	})
}

// UISendConfirmation answers a confirm UI request.
func (c *Client) UISendConfirmation(id string, confirmed bool) error {
	return c.uiAnswer("ui_send_confirmation", id, func(p *C.omprpc_client, cid *C.char, perr **C.char) C.omprpc_status {
		return C.omprpc_client_ui_send_confirmation(p, cid, C.bool(confirmed), perr)
	})
}

// UICancel cancels a UI request; timedOut tells the agent the host's own timeout fired.
func (c *Client) UICancel(id string, timedOut bool) error {
	return c.uiAnswer("ui_cancel", id, func(p *C.omprpc_client, cid *C.char, perr **C.char) C.omprpc_status {
		return C.omprpc_client_ui_cancel(p, cid, C.bool(timedOut), perr)
	})
}

// SetUIPolicy sets the headless UI policy (requests already waiting are answered by it);
// nil removes it, and UI requests reach NextUIRequest again.
func (c *Client) SetUIPolicy(policy *UIPolicy) error {
	defer runtime.KeepAlive(c)
	const op = "set_ui_policy"
	var v any
	if policy != nil {
		v = policy
	}
	cp, err := rawJSON(op, "policy", v)
	if err != nil {
		return err
	}
	defer freeC(cp)
	return c.h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_set_ui_policy(p, cp, perr)
	})
}

// --- records -------------------------------------------------------------------------------

// Stderr is the agent's last max_stderr_lines stderr lines.
func (c *Client) Stderr() (string, error) {
	defer runtime.KeepAlive(c)
	var out *C.char
	var final string
	err := c.h.record("stderr", func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_stderr(p, &out, perr)
	}, func(s *snapshot) { final = s.stderr })
	if err != nil || out == nil {
		return final, err
	}
	return takeString(out), nil
}

// ProtocolErrors are the recorded protocol errors (bounded, oldest dropped).
func (c *Client) ProtocolErrors() ([]json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	js, err := c.h.recordBytes("protocol_errors", func(p *C.omprpc_client, out, perr **C.char) C.omprpc_status {
		return C.omprpc_client_protocol_errors(p, out, perr)
	}, func(s *snapshot) []byte { return s.protocolErrors })
	if err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if err := unmarshal("protocol_errors", js, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// Info describes the client (omprpc_client_info).
type Info struct {
	PID             int             `json:"pid"`
	Argv            []string        `json:"argv"`           // redacted
	Launcher        []string        `json:"launcher"`       // the argv prefix the agent runs behind (nil without one)
	BridgeEndpoint  json.RawMessage `json:"bridgeEndpoint"` // {"transport":"unix","socket"}, {"transport":"tcp","listen","advertise"} or null
	Flavor          string          `json:"flavor"`
	ProtocolVersion int             `json:"protocolVersion"`
	Ready           json.RawMessage `json:"ready"`
	Closed          bool            `json:"closed"`
	// CloseReason is why the client closed (nil while open).
	CloseReason     error  `json:"-"`
	ActiveOperation string `json:"activeOperation"`
	PendingRequests int    `json:"pendingRequests"`
	// Raw is the library's JSON, verbatim.
	Raw json.RawMessage `json:"-"`
}

// Info describes the client: pid, argv, flavour, protocol version, closed and why.
func (c *Client) Info() (*Info, error) {
	defer runtime.KeepAlive(c)
	js, err := c.h.recordBytes("info", func(p *C.omprpc_client, out, perr **C.char) C.omprpc_status {
		return C.omprpc_client_info(p, out, perr)
	}, func(s *snapshot) []byte { return s.info })
	if err != nil {
		return nil, err
	}
	info := &Info{Raw: js}
	var extra struct {
		CloseReason json.RawMessage `json:"closeReason"`
	}
	if err := unmarshal("info", js, info); err != nil {
		return nil, err
	}
	if err := unmarshal("info", js, &extra); err != nil {
		return nil, err
	}
	if len(extra.CloseReason) > 0 && string(extra.CloseReason) != "null" {
		info.CloseReason = errorFromJSON("", StatusClosed, extra.CloseReason)
	}
	return info, nil
}

// Counters reads the library's per-client counters (omprpc_client_counters); after Close,
// the values Close read last.
func (c *Client) Counters() (*Counters, error) {
	defer runtime.KeepAlive(c)
	js, err := c.h.recordBytes("counters", func(p *C.omprpc_client, out, perr **C.char) C.omprpc_status {
		return C.omprpc_client_counters(p, out, perr)
	}, func(s *snapshot) []byte { return s.counters })
	if err != nil {
		return nil, err
	}
	k := &Counters{Raw: js}
	if err := unmarshal("counters", js, k); err != nil {
		return nil, err
	}
	k.BindingEventsDropped = c.h.ev.dropped.Load()
	k.EventsDropped += k.BindingEventsDropped
	return k, nil
}

// Logs takes up to max log records (omprpc_client_next_logs), waiting for the first until ctx
// ends (a ctx without deadline or cancel waits until one arrives or the client closes). The
// client must have been started with Options.LogLevel (else ErrInvalidArgument). ErrTimeout
// when ctx's deadline passed with none; ErrClosed once the client is closed and every record
// was taken (Close keeps the records still queued, teardown's included, for Logs after it).
func (c *Client) Logs(ctx context.Context, max int) ([]LogRecord, error) {
	defer runtime.KeepAlive(c)
	if max < 1 {
		max = 1
	}
	if raws, ok := c.h.finalLogs(max); ok {
		return decodeLogs(raws)
	}
	var out *C.char
	err := c.h.wait(ctx, "next_logs", func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return C.omprpc_client_next_logs(p, C.size_t(max), t, &out, perr)
	})
	if errors.Is(err, ErrClosed) {
		// Close may have taken the last records between finalLogs above and this call.
		if raws, ok := c.h.finalLogs(max); ok {
			return decodeLogs(raws)
		}
	}
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := unmarshal("next_logs", takeBytes(out), &raws); err != nil {
		return nil, err
	}
	return decodeLogs(raws)
}

// finalLogs takes up to max of the records Close kept; ok is false while the handle lives
// or when none are left (the C call then answers ErrClosed).
func (h *core) finalLogs(max int) ([]json.RawMessage, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ptr != nil || len(h.final.logs) == 0 {
		return nil, false
	}
	n := min(max, len(h.final.logs))
	recs := h.final.logs[:n:n]
	h.final.logs = h.final.logs[n:]
	return recs, true
}

func decodeLogs(raws []json.RawMessage) ([]LogRecord, error) {
	recs := make([]LogRecord, len(raws))
	for i, raw := range raws {
		recs[i].Raw = raw
		if err := unmarshal("next_logs", raw, &recs[i]); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// recordBytes is record for a getter of one string: its bytes, or after Close the snapshot's.
func (h *core) recordBytes(op string, get func(p *C.omprpc_client, out, perr **C.char) C.omprpc_status,
	closed func(*snapshot) []byte) ([]byte, error) {
	var out *C.char
	var js []byte
	err := h.record(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return get(p, &out, perr)
	}, func(s *snapshot) { js = closed(s) })
	if err != nil {
		return nil, err
	}
	if out != nil {
		js = takeBytes(out)
	}
	return js, nil
}

// record runs a read-only record call, or reads the snapshot Close took.
func (h *core) record(op string, fn cfn, closed func(*snapshot)) error {
	h.mu.RLock()
	if h.ptr == nil {
		defer h.mu.RUnlock()
		if h.final.info == nil {
			return closedError(op)
		}
		closed(&h.final)
		return nil
	}
	h.mu.RUnlock()
	err := h.do(op, fn)
	if err != nil && errors.Is(err, ErrClosed) {
		// Freed between the two locks: the snapshot is there now.
		h.mu.RLock()
		defer h.mu.RUnlock()
		if h.ptr == nil && h.final.info != nil {
			closed(&h.final)
			return nil
		}
	}
	return err
}

// --- JSON helpers ----------------------------------------------------------------------------

// rawJSON turns v into a C string of JSON: NULL for nil, json.RawMessage / []byte as they
// are (the library checks them), anything else marshalled.
func rawJSON(op, what string, v any) (*C.char, error) {
	var js []byte
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if x == nil {
			return nil, nil
		}
		js = x
	case []byte:
		if x == nil {
			return nil, nil
		}
		js = x
	default:
		var err error
		if js, err = json.Marshal(v); err != nil {
			return nil, newError(op, StatusInvalidJSON, "%s: %v", what, err)
		}
		if coercedUTF8(js) {
			return nil, newError(op, StatusInvalidUTF8, "%s: a string is not valid UTF-8", what)
		}
	}
	return cstring(op, what, string(js))
}

// coercedUTF8 reports whether json.Marshal replaced invalid UTF-8: it writes each invalid
// byte as the escape \ufffd, while a real U+FFFD stays a raw rune and a literal backslash is
// escaped itself, so an unescaped "\ufffd" in the output means the input was not UTF-8. A
// silent replacement would change what the agent receives; the library's own entry points
// refuse such strings, and so does this.
func coercedUTF8(js []byte) bool {
	for i := bytes.Index(js, []byte(`\ufffd`)); i >= 0; {
		backslashes := 0
		for j := i - 1; j >= 0 && js[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return true
		}
		next := bytes.Index(js[i+1:], []byte(`\ufffd`))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func unmarshal(op string, js []byte, v any) error {
	if err := json.Unmarshal(js, v); err != nil {
		return newError(op, StatusInvalidJSON, "the library returned JSON this package cannot read: %v", err)
	}
	return nil
}

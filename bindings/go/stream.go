package omprpc

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"runtime"
	"time"
)

// StreamItem is one item of Client.Stream: *TextChunk, *ReasoningChunk, *ToolCallRequest,
// *ToolCallComplete, *RetryScheduled, *CompactionComplete, and last *TurnComplete. Only this
// package's types implement it, so a type switch over them is complete.
type StreamItem interface {
	streamItem()
}

// TextChunk is a piece of the assistant's visible text, in arrival order (never reasoning or
// a tool call's argument JSON: the library's summarizer keeps those apart).
type TextChunk struct {
	Text string
}

// ReasoningChunk is a piece of the assistant's reasoning (thinking), in arrival order.
type ReasoningChunk struct {
	Text string
}

// ToolCallRequest: the agent started a tool call (one of its own tools or a host tool).
type ToolCallRequest struct {
	ToolCallID string
	ToolName   string
	Args       json.RawMessage
	// ParentToolCallID names the call that made this one (pi's codemode scripts); nil for a
	// call of the model.
	ParentToolCallID *string
}

// ToolCallComplete: a tool call ended. Outcome is "success", "error" or "blocked" (by the
// tool policy; Reason says why).
type ToolCallComplete struct {
	ToolCallID       string
	ToolName         string
	Outcome          string
	Result           json.RawMessage
	Reason           *string
	ParentToolCallID *string
}

// RetryScheduled: the attempt failed and the agent retries by itself after DelayMs
// (auto_retry_start): retry Attempt of MaxAttempts, Error the failure (zero values where the
// agent gave none). The turn goes on: the retry's items follow, then TurnComplete. Leaving
// the stream now cancels the retry.
type RetryScheduled struct {
	Attempt     int
	MaxAttempts int
	DelayMs     int64
	Error       string
}

// CompactionComplete: a compaction inside the turn ended. Reason "overflow": the context was
// too long for the model; WillRetry then says the agent retries the failed attempt.
type CompactionComplete struct {
	Reason       string
	Aborted      bool
	WillRetry    bool
	ErrorMessage string
}

// TurnComplete is the stream's last item: the prompt completed where the library says the
// agent will not go on (a retry or an overflow recovery is inside the turn).
type TurnComplete struct {
	RequestID string
	// Outcome is how the prompt completed (TurnAgentSettled, TurnAgentEnd, TurnAborted …).
	Outcome TurnOutcome
	// StopReason is the last assistant message's ("stop", "toolUse", "error", "length" …);
	// nil when it has none.
	StopReason *string
	// Usage is summed over the turn's LLM calls; nil when no call reported any.
	Usage *Usage
	// Text is the final assistant text; nil when there was no assistant message.
	Text *string
	// Summary is the library's whole summary of the streamed turn (Attempts,
	// FailedAttempts, Compactions, ToolCalls …).
	Summary *Summary
	// AgentInvoked says whether the agent ran anything for the prompt (false: an extension
	// command, a prompt the agent handled without a run).
	AgentInvoked bool
	// Settled says the agent announced it settled (pi's agent_settled), not only a run's end.
	Settled bool
}

func (*TextChunk) streamItem()          {}
func (*ReasoningChunk) streamItem()     {}
func (*ToolCallRequest) streamItem()    {}
func (*ToolCallComplete) streamItem()   {}
func (*RetryScheduled) streamItem()     {}
func (*CompactionComplete) streamItem() {}
func (*TurnComplete) streamItem()       {}

// derivedFields are the members of the summarizer's derived items that stream items carry.
type derivedFields struct {
	Text             string          `json:"text"`
	ToolCallID       string          `json:"toolCallId"`
	ToolName         string          `json:"toolName"`
	Args             json.RawMessage `json:"args"`
	Outcome          string          `json:"outcome"`
	Result           json.RawMessage `json:"result"`
	Reason           *string         `json:"reason"`
	ParentToolCallID *string         `json:"parentToolCallId"`
	Attempt          float64         `json:"attempt"`
	MaxAttempts      float64         `json:"maxAttempts"`
	DelayMs          float64         `json:"delayMs"` // omp's is fractional
	Error            *string         `json:"error"`
	Aborted          bool            `json:"aborted"`
	WillRetry        bool            `json:"willRetry"`
	ErrorMessage     *string         `json:"errorMessage"`
}

// streamItemOf is the stream item of one derived item of the summarizer; nil for the kinds
// a stream does not show (reasoning_start, tool_update, message_end, stop, turn_end …).
func streamItemOf(d DerivedItem) (StreamItem, error) {
	switch d.Kind {
	case "text", "reasoning", "tool_start", "tool_end", "retry", "compaction":
	default:
		return nil, nil
	}
	var f derivedFields
	if err := unmarshal("stream", d.Raw, &f); err != nil {
		return nil, err
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	switch d.Kind {
	case "text":
		return &TextChunk{Text: f.Text}, nil
	case "reasoning":
		return &ReasoningChunk{Text: f.Text}, nil
	case "tool_start":
		return &ToolCallRequest{ToolCallID: f.ToolCallID, ToolName: f.ToolName, Args: f.Args,
			ParentToolCallID: f.ParentToolCallID}, nil
	case "tool_end":
		return &ToolCallComplete{ToolCallID: f.ToolCallID, ToolName: f.ToolName, Outcome: f.Outcome,
			Result: f.Result, Reason: f.Reason, ParentToolCallID: f.ParentToolCallID}, nil
	case "retry":
		return &RetryScheduled{Attempt: int(f.Attempt), MaxAttempts: int(f.MaxAttempts),
			DelayMs: int64(f.DelayMs + 0.5), Error: deref(f.Error)}, nil
	default: // compaction
		return &CompactionComplete{Reason: deref(f.Reason), Aborted: f.Aborted, WillRetry: f.WillRetry,
			ErrorMessage: deref(f.ErrorMessage)}, nil
	}
}

// Stream prompts and yields the turn as it happens: *TextChunk, *ReasoningChunk,
// *ToolCallRequest, *ToolCallComplete, *RetryScheduled (the agent will retry a failed
// attempt), *CompactionComplete, and last *TurnComplete, once the prompt completed where the
// library says the agent will not go on (after its retries and recovery: its prompt_complete
// event). The items are the library's streaming summarizer's, fed with the turn's events in
// order as they arrive; nothing else of the turn is kept, so a turn of any length streams
// (Options.MaxEventHistory bounds PromptAndWait's turns, not a stream). Nor do TurnTimeout
// and TurnIdleTimeout, which bound the library's own waits: ctx's deadline bounds a stream.
// opts: at most one *PromptOptions.
//
// A failure is yielded once, with a nil item, and ends the stream: a refused or late-failed
// prompt (*CommandError), the agent's exit (ErrProcessExited), Close (ErrClosed), a ctx
// deadline (ErrTimeout and context.DeadlineExceeded; the agent goes on, as with
// PromptAndWait). Leaving the loop early (break) or cancelling ctx aborts the turn: abort is
// sent, and the loop ends once the aborted prompt completed (5 s at most), so the next
// prompt finds the agent settled (a cancelled ctx yields an error wrapping context.Canceled).
//
// One stream at a time per client: a second one while one runs yields ErrConcurrency, and
// so does PromptAndWait, CollectEvents or WaitForIdle meanwhile, and a stream while one of
// those runs (the library's rule for its prompt-lifecycle calls, which this package extends
// to streams). Iterating the sequence again streams a new turn of the same message.
func (c *Client) Stream(ctx context.Context, message string, opts ...*PromptOptions) iter.Seq2[StreamItem, error] {
	runtime.KeepAlive(c)
	if ctx == nil {
		ctx = context.Background()
	}
	return func(yield func(StreamItem, error) bool) {
		var popts *PromptOptions
		switch len(opts) {
		case 0:
		case 1:
			popts = opts[0]
		default:
			yield(nil, newError(opStream, StatusInvalidArgument, "at most one *PromptOptions, got %d", len(opts)))
			return
		}
		h := c.h
		release, err := h.enterStream()
		if err != nil {
			yield(nil, err)
			return
		}
		defer release()
		h.turns.enter()
		defer h.turns.leave()
		if err := ctxError(opStream, ctx); err != nil {
			yield(nil, err)
			return
		}
		sum, err := NewSummarizer(h.model)
		if err != nil {
			yield(nil, err)
			return
		}
		defer sum.Close()
		sub, err := h.subscribeFresh() // before the prompt: every event of its turn reaches it
		if err != nil {
			yield(nil, err)
			return
		}
		defer sub.cancel()
		st := &streamTurn{c: c, sub: sub, sum: sum}
		if err := st.prompt(ctx, message, popts); err != nil {
			yield(nil, err)
			return
		}
		st.run(ctx, yield)
	}
}

const opStream = "stream"

// streamTurn is one turn of Stream: its subscription (the events queued from before its
// prompt on, prompt_complete events included), its summarizer, and its prompt's request id.
type streamTurn struct {
	c   *Client
	sub *subscription
	sum *Summarizer
	id  string
	// evs are events taken from the subscription and not handled yet.
	evs []Event
	// settled: the summarizer saw the agent settle (agent_settled).
	settled bool
}

type promptAck struct {
	id  string
	err error
}

// prompt sends the prompt and keeps its request id. Its call keeps ctx's deadline (the call's
// own timeout) but not its cancellation: a ctx cancelled while the agent has not answered yet
// waits for the answer (abortSettle at most), so that an accepted prompt is aborted and
// settles before the stream returns.
func (st *streamTurn) prompt(ctx context.Context, message string, opts *PromptOptions) error {
	ackCtx := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ackCtx, cancel = context.WithDeadline(ackCtx, d)
		defer cancel()
	}
	acked := make(chan promptAck, 1)
	go func() {
		id, err := st.c.Prompt(ackCtx, message, opts)
		acked <- promptAck{id, err}
	}()
	var ack promptAck
	select {
	case ack = <-acked:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			ack = <-acked // the same deadline ends the call a moment later
			break
		}
		until := time.Now().Add(abortSettle)
		timer := time.NewTimer(abortSettle)
		defer timer.Stop()
		select {
		case ack = <-acked:
		case <-timer.C:
			return cancelledError(opStream, ctx, false) // the answer is dropped in the background
		}
		if ack.err != nil {
			return cancelledError(opStream, ctx, false) // refused: nothing runs
		}
		st.id = ack.id
		return cancelledError(opStream, ctx, st.leave(until))
	}
	st.id = ack.id
	return ack.err
}

// run yields the turn's items until its prompt_complete event, the end of the client's
// events, or ctx's end.
func (st *streamTurn) run(ctx context.Context, yield func(StreamItem, error) bool) {
	for {
		ended, endErr := st.take()
		for len(st.evs) > 0 {
			ev := st.evs[0]
			st.evs = st.evs[1:]
			if done, ok, err := completionOf(ev); err != nil || ok {
				if err != nil {
					st.leave(time.Now().Add(abortSettle))
					yield(nil, err)
				} else if done.RequestID == st.id {
					yield(st.complete(done))
				} else {
					continue // an earlier prompt's (sent with Prompt)
				}
				return
			}
			items, err := st.feed(ev)
			if err != nil {
				st.leave(time.Now().Add(abortSettle))
				yield(nil, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					st.leave(time.Now().Add(abortSettle))
					return
				}
			}
		}
		if ended {
			yield(nil, st.endError(endErr))
			return
		}
		select {
		case <-st.sub.signal:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				yield(nil, deadlineError(opStream)) // the agent goes on, as with PromptAndWait
				return
			}
			aborted := st.leave(time.Now().Add(abortSettle))
			yield(nil, cancelledError(opStream, ctx, aborted))
			return
		}
	}
}

// take refills evs from the subscription's backlog when it is empty; ended: no more events
// will come, err says why.
func (st *streamTurn) take() (ended bool, err error) {
	if len(st.evs) > 0 {
		return false, nil
	}
	st.evs, ended, err = st.sub.poll()
	return ended, err
}

// feed gives one event to the summarizer and returns its stream items.
func (st *streamTurn) feed(ev Event) ([]StreamItem, error) {
	derived, err := st.sum.Feed(ev.Raw)
	if err != nil {
		return nil, err
	}
	var items []StreamItem
	for _, d := range derived {
		if d.Kind == "settled" {
			st.settled = true
		}
		item, err := streamItemOf(d)
		if err != nil {
			return nil, err
		}
		if item != nil {
			items = append(items, item)
		}
	}
	return items, nil
}

// leave aborts the turn the stream leaves before its end, and waits until its prompt
// completed (or until): the next prompt then finds the agent settled. It reports whether the
// agent took the abort.
func (st *streamTurn) leave(until time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	err := st.c.Abort(ctx)
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		ended, _ := st.take()
		for len(st.evs) > 0 {
			ev := st.evs[0]
			st.evs = st.evs[1:]
			if done, ok, _ := completionOf(ev); ok && done.RequestID == st.id {
				return err == nil
			}
		}
		if ended {
			return err == nil
		}
		select {
		case <-st.sub.signal:
		case <-timer.C:
			return err == nil
		}
	}
}

// complete is the stream's last item for its prompt's completion: TurnComplete, or the
// error of a prompt that failed (the completion's error, as the failed call would have
// returned it).
func (st *streamTurn) complete(done completion) (StreamItem, error) {
	if done.Outcome == "failed" {
		return nil, errorFromJSON(opStream, StatusCommandFailed, done.Error)
	}
	outcome, ok := turnOutcomeNamed(done.Outcome)
	if !ok {
		return nil, newError(opStream, StatusProtocol, "the library reported an unknown turn outcome %q", done.Outcome)
	}
	summary, err := st.sum.Summary()
	if err != nil {
		return nil, err
	}
	return &TurnComplete{RequestID: done.RequestID, Outcome: outcome, StopReason: summary.StopReason,
		Usage: summary.Usage, Text: summary.FinalText, Summary: summary, AgentInvoked: done.AgentInvoked,
		Settled: st.settled}, nil
}

// endError is the stream's error when the client's events ended before its prompt completed:
// why the client closed (the agent's exit: ErrProcessExited; Close: ErrClosed), else the
// subscription's own reason.
func (st *streamTurn) endError(err error) error {
	if info, ierr := st.c.Info(); ierr == nil {
		var reason *Error
		if errors.As(info.CloseReason, &reason) {
			e := *reason
			e.Op = opStream
			return &e
		}
	}
	if err == nil {
		err = closedError(opStream)
	}
	return err
}

// completion is the library's prompt_complete event.
type completion struct {
	RequestID    string          `json:"requestId"`
	Outcome      string          `json:"outcome"` // a TurnOutcome name, or "failed"
	AgentInvoked bool            `json:"agentInvoked"`
	Error        json.RawMessage `json:"error"` // the failure, shaped as a failed call's error
}

// completionOf reads ev as the library's prompt_complete event; ok is false for any other.
func completionOf(ev Event) (done completion, ok bool, err error) {
	if !isCompletion(ev) {
		return completion{}, false, nil
	}
	if err := unmarshal(opStream, ev.Raw, &done); err != nil {
		return completion{}, false, err
	}
	return done, true, nil
}

// turnOutcomeNamed is the TurnOutcome of its name in the turn JSON ("agent_end" …).
func turnOutcomeNamed(name string) (TurnOutcome, bool) {
	for o, n := range turnOutcomeNames {
		if n == name {
			return TurnOutcome(o), true
		}
	}
	return 0, false
}

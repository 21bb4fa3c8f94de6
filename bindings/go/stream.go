package omprpc

import (
	"context"
	"encoding/json"
	"iter"
	"runtime"
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
	// Turn is the turn as PromptAndWait returns it.
	Turn *Turn
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

type turnResult struct {
	turn *Turn
	err  error
}

// Stream prompts and yields the turn as it happens: *TextChunk, *ReasoningChunk,
// *ToolCallRequest, *ToolCallComplete, *RetryScheduled (the agent will retry a failed
// attempt), *CompactionComplete, and last *TurnComplete, once the prompt completed where the
// library says the agent will not go on (after its retries and recovery). The items are the
// library's streaming summarizer's, fed with the turn's events in order. opts: at most one
// *PromptOptions.
//
// A failure is yielded once, with a nil item, and ends the stream: a refused or late-failed
// prompt (*CommandError), the agent's exit (ErrProcessExited), Close (ErrClosed), a ctx
// deadline (ErrTimeout and context.DeadlineExceeded; the agent goes on, as with
// PromptAndWait). Leaving the loop early (break) or cancelling ctx aborts the turn: abort is
// sent, and the loop ends once the aborted prompt completed, so the next prompt finds the
// agent settled (a cancelled ctx yields an error wrapping context.Canceled).
//
// One stream at a time per client: a second one while one runs yields ErrConcurrency, and
// so does PromptAndWait, CollectEvents or WaitForIdle meanwhile (the library's rule). The turn
// is the library's PromptAndWait turn, so its bounds hold: a turn that retains more than
// Options.MaxEventHistory events (10000) fails with ErrLimitExceeded — raise it, or keep fewer
// with TurnEvents: TurnEventsNoUpdates, for very long turns.
// Iterating the sequence again streams a new turn of the same message.
func (c *Client) Stream(ctx context.Context, message string, opts ...*PromptOptions) iter.Seq2[StreamItem, error] {
	const op = "stream"
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
			yield(nil, newError(op, StatusInvalidArgument, "at most one *PromptOptions, got %d", len(opts)))
			return
		}
		h := c.h
		if !h.streaming.CompareAndSwap(false, true) {
			yield(nil, newError(op, StatusConcurrency, "a turn is already streaming on this client (one at a time): finish it, or leave its loop, first"))
			return
		}
		defer h.streaming.Store(false)
		if err := ctxError(op, ctx); err != nil {
			yield(nil, err)
			return
		}
		sum, err := NewSummarizer(h.model)
		if err != nil {
			yield(nil, err)
			return
		}
		defer sum.Close()
		sub, err := h.subscribeFresh()
		if err != nil {
			yield(nil, err)
			return
		}
		defer sub.cancel()

		// The turn runs as PromptAndWait on its own goroutine: the library decides where it
		// ends, and a cancelled turnCtx aborts it (and waits until the agent settled).
		turnCtx, cancelTurn := context.WithCancel(ctx)
		defer cancelTurn()
		done := make(chan turnResult, 1)
		go func() {
			t, err := c.PromptAndWait(turnCtx, message, popts)
			done <- turnResult{t, err}
		}()
		leave := func() {
			cancelTurn()
			sub.cancel() // PromptAndWait does not wait for this loop's events any more
			<-done
		}
		// emit feeds events to the summarizer and yields their items; false: the loop left.
		emit := func(evs []Event) (bool, error) {
			for _, ev := range evs {
				derived, err := sum.Feed(ev.Raw)
				if err != nil {
					return true, err
				}
				for _, d := range derived {
					item, err := streamItemOf(d)
					if err != nil {
						return true, err
					}
					if item != nil && !yield(item, nil) {
						return false, nil
					}
				}
			}
			return true, nil
		}
		for {
			evs, ended := sub.poll()
			if more, err := emit(evs); !more || err != nil {
				leave()
				if err != nil {
					yield(nil, err)
				}
				return
			}
			var r turnResult
			if ended { // closed, or the agent exited: PromptAndWait says which
				r = <-done
			} else {
				select {
				case <-sub.signal:
					continue
				case r = <-done:
				}
			}
			// Every event before the turn's outcome is in the backlog now (PromptAndWait
			// returns only then): take the rest.
			evs, _ = sub.poll()
			if more, err := emit(evs); !more || err != nil {
				if err != nil {
					yield(nil, err)
				}
				return
			}
			if r.err != nil {
				yield(nil, r.err)
				return
			}
			summary, err := sum.Summary()
			if err != nil {
				yield(nil, err)
				return
			}
			yield(&TurnComplete{RequestID: r.turn.RequestID, Outcome: r.turn.Outcome, StopReason: summary.StopReason,
				Usage: summary.Usage, Text: summary.FinalText, Summary: summary, Turn: r.turn}, nil)
			return
		}
	}
}

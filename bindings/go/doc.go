// Package omprpc drives the omp and pi coding agents in RPC mode (`omp --mode rpc`,
// `pi --mode rpc`) through libomprpc, the project's Rust core, over its C ABI (cgo).
//
// The core does the protocol: framing, request/response correlation (id-less errors
// included), protocol v2 chunks, turn assembly, the event queue, host tools and URIs, UI
// requests, teardown of the agent's process group. This package converts Go values to and
// from the JSON the C API speaks, and adds what Go programs expect on top: contexts,
// errors.Is / errors.As, an event iterator and channels, and host tool handlers run on
// goroutines.
//
// # Contexts
//
// A context's deadline becomes the call's C timeout: past it the call fails with ErrTimeout
// (matching context.DeadlineExceeded too) and the agent's work goes on. A cancellation (a
// CancelFunc, signal.NotifyContext) is seen while the call runs. A call that waits for a turn
// (PromptAndWait, CollectEvents, Stream) then aborts it: abort goes to the agent, and the call
// returns once the aborted prompt completed, with an error wrapping ctx.Err(), so the next
// prompt finds the agent settled. Every other call returns at once with an error wrapping
// ctx.Err(); its C call finishes in the background and its result is dropped. Waits that can
// safely be repeated (WaitForIdle, NextUIRequest, the event iterator) end the wait only.
//
// # Streaming a turn
//
// Client.Stream prompts and yields the turn as typed items (TextChunk, ReasoningChunk,
// ToolCallRequest, ToolCallComplete, RetryScheduled, CompactionComplete, and last
// TurnComplete), from the library's streaming summarizer, up to the library's prompt_complete
// event for the prompt; it keeps no history, so a turn of any length streams. Leaving the
// loop aborts the turn.
//
// # Turns
//
// A prompt ends where the agent will not go on, and the library decides where that is: at pi's
// agent_settled (pi 0.80.4 on), else at the last run's terminal agent_end after any retry of a
// failed LLM call or any overflow compaction the agent recovers with. An agent_end alone ends
// one run, not the prompt. PromptAndWait, WaitForIdle, CollectEvents, Stream and the
// prompt_complete event (queued for every client; Options.PromptCompleteEvents shows it to
// subscribers) all end there; this package adds no end of its own. The Turn holds every run
// in between and says what happened: Outcome (TurnAgentEnd, TurnAgentSettled, TurnAborted,
// TurnPromptResult, TurnNotInvoked), Attempts, Settled,
// FailedAttempts (each failure's error and what followed: a retry, a compaction, giving up, a
// cancelled retry) and Compactions. Abort while the agent waits to retry ends the turn at once
// as TurnAborted, and no retry follows. A program streaming a prompt's events stops at the
// prompt_complete event for its request id.
//
// # Events
//
// One goroutine per client (the pump) reads the library's event queue in batches while
// something wants events: an iteration of All, an Events channel, or registered host tools,
// host URI schemes or a policy handler. Each subscriber gets every event read while it is
// subscribed, through a backlog of its own. With nothing wanting events nothing is read, so
// events wait in the library's bounded queue for the next subscriber; what the pump reads
// while nobody subscribes is kept for the next subscriber. Every drop (past
// event_queue_capacity) is reported by an event_overflow event and counted in
// Counters.EventsDropped.
//
// An Events channel closes when ctx ends or the client's events end; Subscribe gives the same
// channel with Err, which says which.
//
// Every call that waits on the agent returns, with its result or its error, only once every
// event queued before that outcome has reached every subscriber (on its Events channel, or
// taken by its All loop; a subscriber busy in its loop body or with a full channel is not
// waited for). A host call that no handler and no subscriber can answer is answered at once
// with an error.
//
// # Lifetime
//
// Close stops the agent and frees the handle at once; Shutdown(ctx) is the graceful form (it
// waits within ctx for the running turns and the agent's idleness, then closes). A finalizer
// closes a Client that became unreachable, as a safety net only. Every method is safe for concurrent use, Close included.
package omprpc

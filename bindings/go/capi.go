package omprpc

// The only file besides client.go that touches C: conversions between Go and C strings,
// status names, versions, the ABI handshake.

/*
#include <stdlib.h>
#include <string.h>
#include "omprpc.h"
*/
import "C"

import (
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Timeout values of the C API.
const (
	timeoutInfinite = int64(C.OMPRPC_TIMEOUT_INFINITE)
	timeoutDefault  = int64(C.OMPRPC_TIMEOUT_DEFAULT)
)

// HeaderABIVersion is OMPRPC_ABI_VERSION of the header this package was compiled against.
const HeaderABIVersion = uint32(C.OMPRPC_ABI_VERSION)

// Version is the loaded library's version string.
func Version() string { return C.GoString(C.omprpc_version()) }

// ABIVersion is the loaded library's C ABI version (omprpc_abi_version()).
func ABIVersion() uint32 { return uint32(C.omprpc_abi_version()) }

func statusName(s Status) string { return C.GoString(C.omprpc_status_name(C.int(s))) }

var (
	abiOnce sync.Once
	abiErr  error
)

// abiMismatch is the error for a library whose ABI differs from the header's.
func abiMismatch(header, library uint32) error {
	if header == library {
		return nil
	}
	return newError("start", StatusInvalidArgument,
		"ABI mismatch: this Go package was compiled against OMPRPC_ABI_VERSION %d, but the loaded libomprpc (%s) "+
			"reports ABI %d; rebuild the library and the package from the same checkout", header, Version(), library)
}

// checkABI refuses a library built for another ABI; checked once, on the first Start.
func checkABI() error {
	abiOnce.Do(func() { abiErr = abiMismatch(HeaderABIVersion, ABIVersion()) })
	return abiErr
}

// cstring copies s to C memory (free it with C.free). A NUL byte would silently cut the
// string short in C, so it is refused.
func cstring(op, what, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, newError(op, StatusInvalidArgument, "%s contains a NUL byte", what)
	}
	return C.CString(s), nil
}

// optCString is cstring, with NULL for an empty s.
func optCString(op, what, s string) (*C.char, error) {
	if s == "" {
		return nil, nil
	}
	return cstring(op, what, s)
}

func freeC(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

// takeBytes copies a string the library returned into Go memory and releases it.
func takeBytes(p *C.char) []byte {
	if p == nil {
		return nil
	}
	n := C.strlen(p)
	b := make([]byte, int(n))
	adviseHugePages(b)
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
	if n >= freeInBackground {
		// Freeing a large string gives its pages back to the OS (munmap), ~15 ms for a
		// 64 MB turn: not on the caller's path. Nothing reads p after the copy.
		go C.omprpc_string_free(p)
	} else {
		C.omprpc_string_free(p)
	}
	return b
}

// freeInBackground is the size from which takeBytes frees the library's string on another
// goroutine; hugePagesFrom the size from which it asks for huge pages for its copy;
// copyAsideFrom the size from which takeTurn copies a turn on another goroutine (below it,
// starting one costs more than the overlap buys).
const (
	freeInBackground = 1 << 20
	hugePagesFrom    = 4 << 20
	copyAsideFrom    = 1 << 20
)

// takeString is takeBytes for text.
func takeString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
	C.omprpc_string_free(p)
	return s
}

// ms converts a duration to whole milliseconds, rounding up (a C deadline never passes
// before the Go one it stands for).
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// BuildArgv returns the argv Start would spawn for opts, exactly (system prompts included);
// it starts nothing.
func BuildArgv(opts Options) ([]string, error) {
	js, err := opts.startJSON(nil)
	if err != nil {
		return nil, err
	}
	cs, err := cstring("build_argv", "options", string(js))
	if err != nil {
		return nil, err
	}
	defer freeC(cs)
	var out, cerr *C.char
	st := C.omprpc_build_argv(cs, &out, &cerr)
	if st != C.OMPRPC_STATUS_OK {
		return nil, errorFromJSON("build_argv", Status(st), takeBytes(cerr))
	}
	var argv []string
	if err := unmarshal("build_argv", takeBytes(out), &argv); err != nil {
		return nil, err
	}
	return argv, nil
}

// --- structured results (omprpc_event_batch, omprpc_turn) --------------------------------------

// borrowed views a borrowed omprpc_str as Go bytes without copying: valid only while the
// object it borrows from is alive. nil for an absent one.
func borrowed(s C.omprpc_str) []byte {
	if s.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(s.data)), int(s.len))
}

// viewsOf is the array of n event views at p.
func viewsOf(p *C.omprpc_event_view, n C.size_t) []C.omprpc_event_view {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// takeBatch copies a batch's events into Go memory (one allocation for all their bytes) and
// frees the batch.
func takeBatch(op string, batch *C.omprpc_event_batch) ([]Event, error) {
	defer C.omprpc_event_batch_free(batch)
	var p *C.omprpc_event_view
	var n C.size_t
	var cerr *C.char
	if st := C.omprpc_event_batch_events(batch, &p, &n, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	views := viewsOf(p, n)
	total := 0
	for _, v := range views {
		total += int(v.json.len)
	}
	buf := make([]byte, total)
	evs := make([]Event, len(views))
	off := 0
	for i, v := range views {
		end := off + copy(buf[off:], borrowed(v.json))
		evs[i] = Event{Type: internType(borrowed(v.event_type)), Raw: buf[off:end:end]}
		off = end
	}
	return evs, nil
}

// takeTurn copies a turn into Go memory — its JSON once; the events, the messages and the
// other parts are slices of that copy, located by the library — and frees it.
func takeTurn(op string, turn *C.omprpc_turn) (*Turn, error) {
	t, size, err := readTurn(op, turn)
	if size >= freeInBackground {
		// As in takeBytes: a large turn's pages go back to the OS off the caller's path.
		go C.omprpc_turn_free(turn)
	} else {
		C.omprpc_turn_free(turn)
	}
	return t, err
}

// readTurn is takeTurn's copy; it returns the size of the turn's JSON, and returns only once
// nothing reads the turn any more (the copy included), so the caller may free it.
func readTurn(op string, turn *C.omprpc_turn) (*Turn, int, error) {
	var info C.omprpc_turn_info
	var cerr *C.char
	if st := C.omprpc_turn_get_info(turn, &info, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, 0, errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	whole := borrowed(info.turn_json)
	buf := make([]byte, len(whole))
	adviseHugePages(buf)
	// The copy runs while the library builds the event views and this builds the Events:
	// those only locate the parts, and nothing below reads buf before copied().
	copied := copyAside(buf, whole)
	defer copied()
	var p *C.omprpc_event_view
	var n C.size_t
	if st := C.omprpc_turn_events(turn, &p, &n, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, len(whole), errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	base := uintptr(unsafe.Pointer(info.turn_json.data))
	part := func(s C.omprpc_str) json.RawMessage {
		if s.data == nil {
			return nil
		}
		off := int(uintptr(unsafe.Pointer(s.data)) - base)
		end := off + int(s.len)
		return buf[off:end:end]
	}
	text := func(s C.omprpc_str) *string {
		if s.data == nil {
			return nil
		}
		v := string(borrowed(s))
		return &v
	}
	outcome, err := turnOutcome(op, info.outcome)
	if err != nil {
		return nil, len(whole), err
	}
	t := &Turn{
		RequestID:        string(borrowed(info.request_id)),
		AgentInvoked:     bool(info.agent_invoked),
		Outcome:          outcome,
		Attempts:         int(info.attempts),
		Settled:          bool(info.settled),
		AssistantMessage: part(info.assistant_message_json),
		AssistantText:    text(info.assistant_text),
		StopReason:       text(info.stop_reason),
		ErrorMessage:     text(info.error_message),
		PromptResult:     part(info.prompt_result_json),
		Summary:          part(info.summary_json),
	}
	// The record of attempts is the library's: read from its structure, decoded as it is.
	if err := turnList(op, info.failed_attempts_json, &t.FailedAttempts); err != nil {
		return nil, len(whole), err
	}
	if err := turnList(op, info.compactions_json, &t.Compactions); err != nil {
		return nil, len(whole), err
	}
	views := viewsOf(p, n)
	t.Events = make([]json.RawMessage, len(views))
	t.types = make([]string, len(views))
	for i, v := range views {
		t.Events[i] = part(v.json)
		t.types[i] = internType(borrowed(v.event_type))
	}
	var mp *C.omprpc_str
	var mn C.size_t
	if st := C.omprpc_turn_messages(turn, &mp, &mn, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, len(whole), errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	copied() // what follows decodes parts of buf
	if u := part(info.usage_json); len(u) > 0 {
		var usage MessageUsage
		if json.Unmarshal(u, &usage) == nil {
			t.Usage = &usage
		}
	}
	if mn > 0 {
		t.Messages = make([]AgentMessageValue, int(mn))
		for i, m := range unsafe.Slice(mp, int(mn)) {
			t.Messages[i] = agentMessage(part(m))
		}
	}
	return t, len(whole), nil
}

// copyAside copies src to dst: from copyAsideFrom bytes on another goroutine, so that the
// copy of a large turn (its page faults and its memory traffic) overlaps the caller's own
// work on the other CPU. wait returns once dst holds src (call it before reading dst or
// releasing src; any number of times).
func copyAside(dst, src []byte) (wait func()) {
	if len(src) < copyAsideFrom {
		copy(dst, src)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		copy(dst, src)
		close(done)
	}()
	return func() { <-done }
}

// turnList decodes one of the turn's JSON arrays (failedAttempts, compactions) into out;
// an absent or empty one leaves out nil.
func turnList[T any](op string, s C.omprpc_str, out *[]T) error {
	b := borrowed(s)
	if len(b) == 0 || string(b) == "[]" {
		return nil
	}
	return unmarshal(op, b, out)
}

// turnOutcome is the Go outcome of the library's; an unknown one is the library's error (the
// ABI version, checked at start, fixes the enum).
func turnOutcome(op string, o C.omprpc_turn_outcome) (TurnOutcome, error) {
	switch o {
	case C.OMPRPC_TURN_OUTCOME_AGENT_END:
		return TurnAgentEnd, nil
	case C.OMPRPC_TURN_OUTCOME_PROMPT_RESULT:
		return TurnPromptResult, nil
	case C.OMPRPC_TURN_OUTCOME_NOT_INVOKED:
		return TurnNotInvoked, nil
	case C.OMPRPC_TURN_OUTCOME_AGENT_SETTLED:
		return TurnAgentSettled, nil
	case C.OMPRPC_TURN_OUTCOME_ABORTED:
		return TurnAborted, nil
	}
	return 0, newError(op, StatusProtocol, "the library reported an unknown turn outcome %d", int(o))
}

// internType returns the common event types as shared constant strings (no allocation for
// the types every turn is made of), any other as a copy.
func internType(b []byte) string {
	switch string(b) {
	case "message_update":
		return "message_update"
	case "message_start":
		return "message_start"
	case "message_end":
		return "message_end"
	case "tool_execution_start":
		return "tool_execution_start"
	case "tool_execution_update":
		return "tool_execution_update"
	case "tool_execution_end":
		return "tool_execution_end"
	case "turn_start":
		return "turn_start"
	case "turn_end":
		return "turn_end"
	case "agent_start":
		return "agent_start"
	case "agent_end":
		return "agent_end"
	}
	return string(b)
}

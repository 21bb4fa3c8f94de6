package omprpc

/*
#include <stdlib.h>
#include "omprpc.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// HostTool is a tool the host provides to the agent (omp host tools). The agent sees Name,
// Description and the JSON-Schema Parameters; with a Handler, this package serves its calls.
type HostTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is a JSON-Schema object: a map, a struct or json.RawMessage.
	Parameters any    `json:"parameters"`
	Label      string `json:"label,omitempty"`
	Hidden     bool   `json:"hidden,omitempty"`
	LoadMode   string `json:"loadMode,omitempty"`
	// Handler serves the tool's calls. Without one, calls arrive as host_tool_call events
	// for the program to answer with HostToolUpdate / HostToolResult; a call that arrives
	// while nothing subscribes to the events (Events, All) is answered at once with an error.
	Handler HostToolHandler `json:"-"`
}

// HostToolHandler serves one host tool call, on its own goroutine. ctx is cancelled when
// the agent cancels the call (host_tool_cancel) or the client closes; update streams a
// partial result (a string, a ToolResult, or raw JSON). A returned error becomes an error
// result (isError) carrying its message; a panic too.
type HostToolHandler func(ctx context.Context, call HostToolCall, update func(partial any) error) (ToolResult, error)

// HostToolCall is a host_tool_call event.
type HostToolCall struct {
	ID         string          `json:"id"`         // the host call id: answer with it
	ToolCallID string          `json:"toolCallId"` // the model's tool call id
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments"`
	Raw        json.RawMessage `json:"-"`
}

// ToolResult is a host tool's (partial or final) result: content blocks (TextContent,
// ImageContent, …: each writes its own "type") and optional details.
type ToolResult struct {
	Content []MessageContent `json:"content"`
	Details any              `json:"details,omitempty"`
}

// TextResult is a result of one text block.
func TextResult(text string) ToolResult {
	return ToolResult{Content: []MessageContent{TextContent{Text: text}}}
}

// MarshalJSON writes a nil Content as [] (the library needs an array).
func (r ToolResult) MarshalJSON() ([]byte, error) {
	type wire ToolResult
	if r.Content == nil {
		r.Content = []MessageContent{}
	}
	return json.Marshal(wire(r))
}

// HostURIHandler serves one host URI request (HostURIScheme.Handler), on its own goroutine:
// a read returns the resource (HostURIContent), a write stores req.Content (the returned
// value is ignored). ctx is cancelled when the agent cancels the request (host_uri_cancel)
// or the client closes. A returned error becomes the reply's error; a panic too.
type HostURIHandler func(ctx context.Context, req HostURIRequest) (HostURIContent, error)

// HostURIRequest is a host_uri_request event.
type HostURIRequest struct {
	ID        string          `json:"id"`        // answer with it (HostURIResult)
	Operation string          `json:"operation"` // "read" or "write"
	URL       string          `json:"url"`       // "scheme://…"
	Content   string          `json:"content"`   // what a write stores
	Raw       json.RawMessage `json:"-"`
}

// HostURIContent is what a read of a host URI returns.
type HostURIContent struct {
	Content     string   `json:"content"`
	ContentType string   `json:"contentType,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	Immutable   bool     `json:"immutable,omitempty"`
}

type hostCall struct{ cancel context.CancelFunc }

type hostTools struct {
	reg      sync.Mutex // serialises registrations
	mu       sync.Mutex
	tools    []HostTool
	handlers map[string]HostToolHandler
	schemes  []HostURIScheme
	uris     map[string]HostURIHandler // by lowercased scheme
	calls    map[string]*hostCall      // host tool calls and URI requests, by id
	sem      chan struct{}
}

// schemeKey is a scheme as the agent and the library see it (trimmed, lowercased).
func schemeKey(scheme string) string { return strings.ToLower(strings.TrimSpace(scheme)) }

// installURIs makes schemes the registered set.
func (t *hostTools) installURIs(schemes []HostURIScheme) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.schemes = append([]HostURIScheme(nil), schemes...)
	t.uris = map[string]HostURIHandler{}
	for _, s := range schemes {
		if s.Handler != nil {
			t.uris[schemeKey(s.Scheme)] = s.Handler
		}
	}
}

func (t *hostTools) currentURIs() []HostURIScheme {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]HostURIScheme(nil), t.schemes...)
}

// demand reports whether the pump must read for the host: a registered tool or scheme (its
// calls are served, delivered, or answered at once) or a policy handler.
func (h *core) hostDemand() bool {
	t := &h.host
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tools) > 0 || len(t.schemes) > 0 || h.policy != nil
}

func (t *hostTools) init(concurrency int) {
	if concurrency <= 0 {
		concurrency = defaultHostToolConcurrency
	}
	t.sem = make(chan struct{}, concurrency)
	t.handlers = map[string]HostToolHandler{}
	t.uris = map[string]HostURIHandler{}
	t.calls = map[string]*hostCall{}
}

// install makes tools the registered set; reports whether any has a handler.
func (t *hostTools) install(tools []HostTool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tools = append([]HostTool(nil), tools...)
	t.handlers = map[string]HostToolHandler{}
	for _, tool := range tools {
		if tool.Handler != nil {
			t.handlers[tool.Name] = tool.Handler
		}
	}
	return len(t.handlers) > 0
}

func (t *hostTools) current() []HostTool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]HostTool(nil), t.tools...)
}

// SetHostTools registers tools with the agent, replacing its whole set, and returns the
// agent's answer ({"toolNames":[…]}). Tools with a Handler are served by this package.
func (c *Client) SetHostTools(ctx context.Context, tools []HostTool) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return c.h.setHostTools(ctx, tools)
}

// RegisterHostTool adds tool to the registered set (replacing one of the same name) and
// registers the set with the agent. It re-sends the whole set with set_host_tools, which
// every omp agent knows; AddHostTools sends only the new tool, but needs an agent of omp
// protocol 1.1 (a stock omp answers "Unknown command").
func (c *Client) RegisterHostTool(ctx context.Context, tool HostTool) error {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	tools := replaceOrAppend(c.h.host.current(), tool, toolKey)
	_, err := c.h.setHostTools(ctx, tools)
	return err
}

// replaceOrAppend replaces the item of list whose key is item's, or appends item.
func replaceOrAppend[T any](list []T, item T, key func(T) string) []T {
	for i := range list {
		if key(list[i]) == key(item) {
			list[i] = item
			return list
		}
	}
	return append(list, item)
}

type registerFn func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status

// registerHost sends a host registration (value as JSON). Its handlers are installed first,
// since a call may follow the agent's answer at once, and put back (restore) if it fails.
func (h *core) registerHost(ctx context.Context, op, what string, value any, install, restore func(), call registerFn) (json.RawMessage, error) {
	cj, err := rawJSON(op, what, value)
	if err != nil {
		return nil, err
	}
	install()
	h.ev.setHostDemand(h, h.hostDemand())
	refused := func() {
		restore()
		h.ev.setHostDemand(h, h.hostDemand())
	}
	var out *C.char
	err = h.request(ctx, op, cargs{cj}, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return call(p, cj, t, &out, perr)
	}, func(err error) { // left on cancellation: the agent's answer decides, when it comes
		if err != nil {
			refused()
			return
		}
		takeBytes(out)
	})
	if err != nil {
		if !isCancelled(err) {
			refused()
		}
		return nil, err
	}
	return takeBytes(out), nil
}

func (h *core) setHostTools(ctx context.Context, tools []HostTool) (json.RawMessage, error) {
	if tools == nil {
		tools = []HostTool{}
	}
	previous := h.host.current()
	return h.registerHost(ctx, "set_host_tools", "tools", tools,
		func() { h.host.install(tools) }, func() { h.host.install(previous) },
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_set_host_tools(p, js, t, out, perr)
		})
}

// AddHostTools registers more tools with the agent (add_host_tools, omp protocol 1.1),
// keeping those registered; a tool of the same name is replaced. It returns the agent's
// answer ({"toolNames":[…]}: every tool registered after the change). The handlers serve
// calls from the moment the request goes out; a refusal (ErrCommandFailed from an agent
// without the command, such as a stock omp; ErrInvalidArgument from a bridged client such
// as pi, whose host tools are fixed at start) leaves the registered set as it was.
func (c *Client) AddHostTools(ctx context.Context, tools ...HostTool) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return addHost(c.h, ctx, "add_host_tools", "tools", tools, c.h.host.current, c.h.installTools, toolKey,
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_add_host_tools(p, js, t, out, perr)
		})
}

// RemoveHostTools unregisters tools by name (remove_host_tools, omp protocol 1.1) and
// returns the agent's answer ({"toolNames":[…]}: the tools left). A name that is not
// registered is no error: the agent lists what is left. The handlers stay until the agent
// agreed (it may call them until then); a refusal leaves the set as it was.
func (c *Client) RemoveHostTools(ctx context.Context, names ...string) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return removeHost(c.h, ctx, "remove_host_tools", "tool names", names, c.h.host.current, c.h.installTools, toolKey, exactName,
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_remove_host_tools(p, js, t, out, perr)
		})
}

// toolKey is what names a host tool for the agent (exactly: exactName puts a name to remove
// in that form); uriSchemeKey, a host URI scheme (schemeKey's form).
func toolKey(t HostTool) string           { return t.Name }
func exactName(name string) string        { return name }
func uriSchemeKey(s HostURIScheme) string { return schemeKey(s.Scheme) }

// installTools and installURIs make the binding's sets (the handlers the pump dispatches to).
func (h *core) installTools(tools []HostTool)       { h.host.install(tools) }
func (h *core) installURIs(schemes []HostURIScheme) { h.host.installURIs(schemes) }

// addHost sends add_host_tools / add_host_uri_schemes with added; the binding's set becomes
// the current one with added merged in by key (installed before the request, since a call
// may follow the agent's answer at once; put back if the request fails).
func addHost[T any](h *core, ctx context.Context, op, what string, added []T, current func() []T, install func([]T), key func(T) string, call registerFn) (json.RawMessage, error) {
	if added == nil {
		added = []T{}
	}
	previous := current()
	merged := current()
	for _, item := range added {
		merged = replaceOrAppend(merged, item, key)
	}
	return h.registerHost(ctx, op, what, added, func() { install(merged) }, func() { install(previous) }, call)
}

// removeHost sends remove_host_tools / remove_host_uri_schemes with names; once the agent
// agreed, the items whose key is one of names (matched as the agent matches them: nameKey
// puts a name in key's form) leave the binding's set. Until then the agent may still call them.
func removeHost[T any](h *core, ctx context.Context, op, what string, names []string, current func() []T, install func([]T), key func(T) string, nameKey func(string) string, call registerFn) (json.RawMessage, error) {
	if names == nil {
		names = []string{}
	}
	cj, err := rawJSON(op, what, names)
	if err != nil {
		return nil, err
	}
	agreed := func() {
		install(without(current(), names, key, nameKey))
		h.ev.setHostDemand(h, h.hostDemand())
	}
	var out *C.char
	err = h.request(ctx, op, cargs{cj}, false, func(p *C.omprpc_client, t C.int64_t, perr **C.char) C.omprpc_status {
		return call(p, cj, t, &out, perr)
	}, func(err error) { // left on cancellation: the agent's answer decides, when it comes
		if err == nil {
			agreed()
			takeBytes(out)
		}
	})
	if err != nil {
		return nil, err
	}
	agreed()
	return takeBytes(out), nil
}

// without returns the items of list whose key is not one of names (in nameKey's form).
func without[T any](list []T, names []string, key func(T) string, nameKey func(string) string) []T {
	gone := make(map[string]bool, len(names))
	for _, name := range names {
		gone[nameKey(name)] = true
	}
	kept := list[:0]
	for _, item := range list {
		if !gone[key(item)] {
			kept = append(kept, item)
		}
	}
	return kept
}

// SetHostURISchemes registers host URI schemes, replacing the set, and returns the agent's
// answer ({"schemes":[…]}). Schemes with a Handler are served by this package; requests for
// the others arrive as host_uri_request events to answer with HostURIResult (while nothing
// subscribes to the events, they are answered at once with an error).
func (c *Client) SetHostURISchemes(ctx context.Context, schemes []HostURIScheme) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return c.h.setHostURISchemes(ctx, schemes)
}

// RegisterHostURIScheme adds scheme to the registered set (replacing one of the same name)
// and registers the set with the agent.
func (c *Client) RegisterHostURIScheme(ctx context.Context, scheme HostURIScheme) error {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	schemes := replaceOrAppend(c.h.host.currentURIs(), scheme, uriSchemeKey)
	_, err := c.h.setHostURISchemes(ctx, schemes)
	return err
}

func (h *core) setHostURISchemes(ctx context.Context, schemes []HostURIScheme) (json.RawMessage, error) {
	if schemes == nil {
		schemes = []HostURIScheme{}
	}
	previous := h.host.currentURIs()
	return h.registerHost(ctx, "set_host_uri_schemes", "schemes", schemes,
		func() { h.host.installURIs(schemes) }, func() { h.host.installURIs(previous) },
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_set_host_uri_schemes(p, js, t, out, perr)
		})
}

// AddHostURISchemes registers more host URI schemes (add_host_uri_schemes, omp protocol
// 1.1), keeping those registered; a scheme already registered is redefined. It returns the
// agent's answer ({"schemes":[…]}: every scheme registered after the change). The handlers
// serve requests from the moment the request goes out; a refusal (ErrCommandFailed from an
// agent without the command; the agent's error for a scheme it keeps for itself) leaves the
// registered set as it was.
func (c *Client) AddHostURISchemes(ctx context.Context, schemes ...HostURIScheme) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return addHost(c.h, ctx, "add_host_uri_schemes", "schemes", schemes, c.h.host.currentURIs, c.h.installURIs, uriSchemeKey,
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_add_host_uri_schemes(p, js, t, out, perr)
		})
}

// RemoveHostURISchemes unregisters host URI schemes by name (remove_host_uri_schemes, omp
// protocol 1.1; matched trimmed and case-insensitively, as the agent does) and returns the
// agent's answer ({"schemes":[…]}: the schemes left). An unknown scheme is no error. The
// handlers stay until the agent agreed; a refusal leaves the set as it was.
func (c *Client) RemoveHostURISchemes(ctx context.Context, schemes ...string) (json.RawMessage, error) {
	defer runtime.KeepAlive(c)
	c.h.host.reg.Lock()
	defer c.h.host.reg.Unlock()
	return removeHost(c.h, ctx, "remove_host_uri_schemes", "schemes", schemes, c.h.host.currentURIs, c.h.installURIs, uriSchemeKey, schemeKey,
		func(p *C.omprpc_client, js *C.char, t C.int64_t, out **C.char, perr **C.char) C.omprpc_status {
			return C.omprpc_client_remove_host_uri_schemes(p, js, t, out, perr)
		})
}

// resultJSON encodes a tool result: a Go string is a text result, json.RawMessage is sent
// as is, anything else (ToolResult …) is marshalled.
func resultJSON(op string, v any) (*C.char, error) {
	if s, ok := v.(string); ok {
		js, _ := json.Marshal(s)
		return cstring(op, "result", string(js))
	}
	if v == nil {
		return nil, newError(op, StatusInvalidArgument, "a host tool result must not be nil")
	}
	return rawJSON(op, "result", v)
}

// HostToolUpdate streams a partial result for host call callID (a string, a ToolResult or
// raw JSON). ErrNotFound for an unknown call, ErrCancelled if the agent cancelled it.
func (c *Client) HostToolUpdate(callID string, partial any) error {
	defer runtime.KeepAlive(c)
	return c.h.hostToolUpdate(callID, partial)
}

func (h *core) hostToolUpdate(callID string, partial any) error {
	const op = "host_tool_update"
	cid, err := cstring(op, "call id", callID)
	if err != nil {
		return err
	}
	defer freeC(cid)
	cr, err := resultJSON(op, partial)
	if err != nil {
		return err
	}
	defer freeC(cr)
	return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_host_tool_update(p, cid, cr, perr)
	})
}

// HostToolResult sends the final result of host call callID. ErrNotFound for an unknown
// (or already answered) call; ErrCancelled if the agent cancelled it (the result is dropped).
func (c *Client) HostToolResult(callID string, result any, isError bool) error {
	defer runtime.KeepAlive(c)
	return c.h.hostToolResult(callID, result, isError)
}

func (h *core) hostToolResult(callID string, result any, isError bool) error {
	const op = "host_tool_result"
	cid, err := cstring(op, "call id", callID)
	if err != nil {
		return err
	}
	defer freeC(cid)
	cr, err := resultJSON(op, result)
	if err != nil {
		return err
	}
	defer freeC(cr)
	return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_host_tool_result(p, cid, cr, C.bool(isError), perr)
	})
}

// HostURIResult answers host URI request requestID: {"content","contentType"?,"notes"?,
// "immutable"?} for a read, {} for a write, {"error":"…"} for a failure (raw JSON or a
// value that marshals to it).
func (c *Client) HostURIResult(requestID string, result any) error {
	defer runtime.KeepAlive(c)
	return c.h.hostURIResult(requestID, result)
}

func (h *core) hostURIResult(requestID string, result any) error {
	const op = "host_uri_result"
	cid, err := cstring(op, "request id", requestID)
	if err != nil {
		return err
	}
	defer freeC(cid)
	if result == nil {
		return newError(op, StatusInvalidArgument, "a host URI result must not be nil")
	}
	cr, err := rawJSON(op, "result", result)
	if err != nil {
		return err
	}
	defer freeC(cr)
	return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_host_uri_result(p, cid, cr, perr)
	})
}

// --- dispatch (on the pump goroutine) ------------------------------------------------------

// dispatchHost starts the handlers of the batch's host calls; subscribed says whether a
// subscriber will see the batch (and may answer the calls that have no handler).
func (h *core) dispatchHost(batch []Event, subscribed bool) {
	for _, ev := range batch {
		switch ev.Type {
		case "host_tool_call":
			h.startHostCall(ev, subscribed)
		case "host_uri_request":
			h.startURIRequest(ev, subscribed)
		case "policy_eval":
			if h.policy != nil {
				h.startPolicyEval(ev)
			}
		case "host_tool_cancel", "host_uri_cancel":
			var c struct {
				TargetID string `json:"targetId"`
			}
			if ev.Decode(&c) == nil {
				h.host.mu.Lock()
				if call := h.host.calls[c.TargetID]; call != nil {
					call.cancel()
				}
				h.host.mu.Unlock()
			}
		}
	}
}

func (h *core) startHostCall(ev Event, subscribed bool) {
	call := HostToolCall{Raw: ev.Raw}
	if ev.Decode(&call) != nil || call.ID == "" {
		return // the library answers malformed calls itself
	}
	h.host.mu.Lock()
	handler := h.host.handlers[call.ToolName]
	h.host.mu.Unlock()
	if handler == nil {
		if !subscribed {
			// Nobody can answer it: say so now rather than let the agent wait for its deadline.
			_ = h.hostToolResult(call.ID, TextResult(fmt.Sprintf(
				"host tool %s has no handler and nothing subscribes to the client's events", call.ToolName)), true)
		}
		return // the program answers it from the event
	}
	h.serveHost(call.ID, func(ctx context.Context) {
		res, err := callHandler(ctx, handler, call, func(partial any) error {
			return h.hostToolUpdate(call.ID, partial)
		})
		if err != nil {
			h.sendHostResult(call, TextResult(err.Error()), true)
			return
		}
		h.sendHostResult(call, res, false)
	}, func() {
		// Cancelled (or closing) before it started: the reply only settles the library's
		// record of the call (it answers CANCELLED).
		h.sendHostResult(call, TextResult("host tool call cancelled"), true)
	})
}

// serveHost runs work for host call (or URI request) id on its own goroutine, at most
// HostToolConcurrency at once; its ctx ends on the agent's cancel for id or on Close. When
// ctx ends before a slot is free, cancelled runs instead.
func (h *core) serveHost(id string, work func(ctx context.Context), cancelled func()) {
	t := &h.host
	ctx, cancel := context.WithCancel(h.base)
	hc := &hostCall{cancel: cancel}
	t.mu.Lock()
	if old := t.calls[id]; old != nil {
		old.cancel()
	}
	t.calls[id] = hc
	t.mu.Unlock()
	go func() {
		defer func() {
			hc.cancel()
			t.mu.Lock()
			if t.calls[id] == hc {
				delete(t.calls, id)
			}
			t.mu.Unlock()
		}()
		select {
		case t.sem <- struct{}{}:
		case <-ctx.Done():
			cancelled()
			return
		}
		defer func() { <-t.sem }()
		work(ctx)
	}()
}

func callHandler(ctx context.Context, handler HostToolHandler, call HostToolCall, update func(any) error) (res ToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("host tool %s panicked: %v", call.ToolName, p)
		}
	}()
	return handler(ctx, call, update)
}

// sendHostResult sends a handler's outcome. A result the library refuses is replaced by an
// error result, so the agent is never left waiting; a cancelled, finished or closed call
// needs nothing more.
func (h *core) sendHostResult(call HostToolCall, res ToolResult, isError bool) {
	err := h.hostToolResult(call.ID, res, isError)
	if errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidJSON) {
		_ = h.hostToolResult(call.ID, TextResult(fmt.Sprintf("host tool %s returned an invalid result: %v", call.ToolName, err)), true)
	}
}

func (h *core) startURIRequest(ev Event, subscribed bool) {
	req := HostURIRequest{Raw: ev.Raw}
	if ev.Decode(&req) != nil || req.ID == "" {
		return // the library answers malformed requests itself
	}
	scheme, _, _ := strings.Cut(req.URL, ":")
	h.host.mu.Lock()
	handler := h.host.uris[schemeKey(scheme)]
	h.host.mu.Unlock()
	if handler == nil {
		if !subscribed {
			_ = h.hostURIResult(req.ID, map[string]string{"error": fmt.Sprintf(
				"host URI scheme %q has no handler and nothing subscribes to the client's events", schemeKey(scheme))})
		}
		return // the program answers it from the event
	}
	h.serveHost(req.ID, func(ctx context.Context) {
		res, err := callURIHandler(ctx, handler, req)
		var reply any = map[string]any{}
		switch {
		case err != nil:
			reply = map[string]string{"error": err.Error()}
		case req.Operation != "write":
			reply = res
		}
		// A result the library refuses is replaced by an error, so the agent is never left waiting.
		if e := h.hostURIResult(req.ID, reply); errors.Is(e, ErrInvalidArgument) || errors.Is(e, ErrInvalidJSON) {
			_ = h.hostURIResult(req.ID, map[string]string{"error": fmt.Sprintf("host URI %s: invalid result: %v", req.URL, e)})
		}
	}, func() {
		_ = h.hostURIResult(req.ID, map[string]string{"error": "host URI request cancelled"})
	})
}

func callURIHandler(ctx context.Context, handler HostURIHandler, req HostURIRequest) (res HostURIContent, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("host URI handler for %s panicked: %v", req.URL, p)
		}
	}()
	return handler(ctx, req)
}

// PolicyEval is a policy_eval event: the agent asks whether one of its own tools may run.
type PolicyEval struct {
	ID         string          `json:"id"` // answer with it (Client.PolicyVerdict)
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	Arguments  json.RawMessage `json:"arguments"`
	// ParentToolCallID: the call that made this one (pi 0.99+: a codemode script's call);
	// empty for a call the model made.
	ParentToolCallID string          `json:"parentToolCallId,omitempty"`
	Raw              json.RawMessage `json:"-"`
}

// PolicyHandler decides a policy_eval (ToolPolicy.Handler), on its own goroutine: allow, or
// block with reason. An error or a panic blocks the tool with its message. ctx ends when
// the client closes.
type PolicyHandler func(ctx context.Context, ev PolicyEval) (allow bool, reason string, err error)

func (h *core) startPolicyEval(ev Event) {
	q := PolicyEval{Raw: ev.Raw}
	if ev.Decode(&q) != nil || q.ID == "" {
		return // nothing to answer; the policy's timeout decides
	}
	go func() {
		allow, reason, err := callPolicy(h.base, h.policy, q)
		if err != nil {
			allow, reason = false, err.Error()
		}
		// ErrNotFound (timed out, or answered by PolicyVerdict) and ErrClosed need nothing more.
		_ = h.policyVerdict(q.ID, allow, reason)
	}()
}

func callPolicy(ctx context.Context, handler PolicyHandler, q PolicyEval) (allow bool, reason string, err error) {
	defer func() {
		if p := recover(); p != nil {
			allow, err = false, fmt.Errorf("policy handler panicked on %s: %v", q.ToolName, p)
		}
	}()
	return handler(ctx, q)
}

// PolicyVerdict answers a policy_eval event (ToolPolicy in "host" mode): allow the agent's
// tool call, or block it with reason ("" gives a default reason). ErrNotFound for an
// unknown id; no answer within the policy's timeout blocks the tool (unless it fails open).
func (c *Client) PolicyVerdict(requestID string, allow bool, reason string) error {
	defer runtime.KeepAlive(c)
	return c.h.policyVerdict(requestID, allow, reason)
}

func (h *core) policyVerdict(requestID string, allow bool, reason string) error {
	const op = "policy_verdict"
	cid, err := cstring(op, "request id", requestID)
	if err != nil {
		return err
	}
	defer freeC(cid)
	cr, err := optCString(op, "reason", reason)
	if err != nil {
		return err
	}
	defer freeC(cr)
	return h.do(op, func(p *C.omprpc_client, perr **C.char) C.omprpc_status {
		return C.omprpc_client_policy_verdict(p, cid, C.bool(allow), cr, perr)
	})
}

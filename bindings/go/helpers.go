package omprpc

// The library's capabilities that need no client: turn summaries (one-shot and streaming),
// the environment allow-list, prompt content blocks, custom-provider configuration.

/*
#include <stdlib.h>
#include "omprpc.h"
*/
import "C"

import (
	"encoding/json"
	"os"
	"runtime"
	"sync"
)

// callStatic runs a C function of no client with one owned string out-parameter.
func callStatic(op string, fn func(out, perr **C.char) C.omprpc_status) ([]byte, error) {
	var out, cerr *C.char
	if st := fn(&out, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	return takeBytes(out), nil
}

// callJSON runs a C function of no client whose one argument is options (marshalled; nil:
// NULL) and decodes its owned JSON answer into result.
func callJSON(op string, options, result any, fn func(co *C.char, out, perr **C.char) C.omprpc_status) error {
	co, err := rawJSON(op, "options", options)
	if err != nil {
		return err
	}
	defer freeC(co)
	js, err := callStatic(op, func(out, perr **C.char) C.omprpc_status { return fn(co, out, perr) })
	if err != nil {
		return err
	}
	return unmarshal(op, js, result)
}

// --- turn summaries ------------------------------------------------------------------------

// Summary is a turn summary (docs/c-api.md, "The turn JSON"): the text and reasoning in
// arrival order, the tool calls paired with their outcomes, the stop reasons and the usage.
// Turn.Summary holds the same as JSON when the client was started with TurnSummary;
// ParseSummary reads it.
type Summary struct {
	// Complete: the agent will not go on (agent_settled, or a terminal agent_end after a run
	// that did not fail); always true in a Turn's summary (the library decided the turn ended).
	Complete bool   `json:"complete"`
	Text     string `json:"text"` // all the text
	// FinalText is the last assistant message's text; nil when there was none.
	FinalText   *string           `json:"finalText"`
	Reasoning   string            `json:"reasoning"`
	Chunks      []SummaryChunk    `json:"chunks"`
	ToolCalls   []SummaryToolCall `json:"toolCalls"`
	StopReason  *string           `json:"stopReason"`
	StopReasons []SummaryStop     `json:"stopReasons"` // abnormal stops: error, aborted, length
	// Usage is summed over the turn's LLM calls (ContextTokens: the last call's total); nil
	// when no call reported any.
	Usage        *Usage  `json:"usage"`
	MessageUsage []Usage `json:"messageUsage"` // per LLM call
	// Attempts, FailedAttempts and Compactions are the record of attempts, as in a Turn.
	Attempts       int             `json:"attempts"`
	FailedAttempts []FailedAttempt `json:"failedAttempts"`
	Compactions    []Compaction    `json:"compactions"`
	// Raw is the library's JSON, verbatim.
	Raw json.RawMessage `json:"-"`
}

// SummaryChunk is a run of text or reasoning (Kind "text" or "reasoning").
type SummaryChunk struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// SummaryToolCall is a tool call, start and end paired by ToolCallID. Outcome is "success",
// "error", "blocked" (by the tool policy; Reason says why) or "pending".
//
// Calls that another tool made (pi 0.99 on: a codemode script's inner calls) are items too,
// in start order: ParentToolCallID names the call that made one (nil for a call of the model),
// and that call's Children lists their ToolCallIDs, so the list renders as a tree.
type SummaryToolCall struct {
	ToolCallID       string          `json:"toolCallId"`
	ToolName         string          `json:"toolName"`
	Args             json.RawMessage `json:"args"`
	Outcome          string          `json:"outcome"`
	Result           json.RawMessage `json:"result"`
	Reason           *string         `json:"reason"`
	ParentToolCallID *string         `json:"parentToolCallId"`
	Children         []string        `json:"children"`
}

// SummaryStop is an abnormal stop of an assistant message.
type SummaryStop struct {
	Reason       string  `json:"reason"`
	ErrorMessage *string `json:"errorMessage"`
}

// Usage is token usage: one LLM call's, or a turn's (then ContextTokens and Calls are set).
type Usage struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	Cost             float64 `json:"cost"`
	Model            *string `json:"model"`
	ContextTokens    int64   `json:"contextTokens,omitempty"`
	Calls            int     `json:"calls,omitempty"`
}

// ParseSummary reads a summary's JSON (Turn.Summary); nil for nil or JSON null.
func ParseSummary(raw json.RawMessage) (*Summary, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := &Summary{Raw: raw}
	if err := unmarshal("summary", raw, s); err != nil {
		return nil, err
	}
	return s, nil
}

// ParsedSummary is ParseSummary(t.Summary).
func (t *Turn) ParsedSummary() (*Summary, error) { return ParseSummary(t.Summary) }

func summaryOptions(op, model string) (*C.char, error) {
	if model == "" {
		return nil, nil
	}
	return rawJSON(op, "options", map[string]string{"model": model})
}

// eventsJSON is a JSON array of raw events: json.RawMessage / []byte as they are (one
// array), []json.RawMessage or []Event joined, anything else marshalled.
func eventsJSON(op string, events any) (*C.char, error) {
	join := func(n int, at func(i int) []byte) []byte {
		size := 2
		for i := 0; i < n; i++ {
			size += len(at(i)) + 1
		}
		b := make([]byte, 0, size)
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, at(i)...)
		}
		return append(b, ']')
	}
	switch ev := events.(type) {
	case []json.RawMessage:
		return cstring(op, "events", string(join(len(ev), func(i int) []byte { return ev[i] })))
	case []Event:
		return cstring(op, "events", string(join(len(ev), func(i int) []byte { return ev[i].Raw })))
	case nil:
		return cstring(op, "events", "[]")
	}
	return rawJSON(op, "events", events)
}

// Summarize is the turn summary of raw events: a Turn's Events ([]json.RawMessage), events
// from the pump ([]Event), a JSON array (json.RawMessage / []byte), or any value that
// marshals to one. model is the configured model ("" for none), named in usage whose
// message names none.
func Summarize(events any, model string) (*Summary, error) {
	const op = "summarize"
	ce, err := eventsJSON(op, events)
	if err != nil {
		return nil, err
	}
	defer freeC(ce)
	co, err := summaryOptions(op, model)
	if err != nil {
		return nil, err
	}
	defer freeC(co)
	js, err := callStatic(op, func(out, perr **C.char) C.omprpc_status {
		return C.omprpc_summarize(ce, co, out, perr)
	})
	if err != nil {
		return nil, err
	}
	return ParseSummary(js)
}

// Summarizer is a streaming turn summarizer (omprpc_summarizer_*): Feed it raw events in
// order; each gives the derived items it produced; Summary is the summary so far. Safe for
// concurrent use. Close releases it (a finalizer does too, eventually).
type Summarizer struct {
	mu  sync.Mutex
	ptr *C.omprpc_summarizer
}

// NewSummarizer returns a summarizer; model as for Summarize.
func NewSummarizer(model string) (*Summarizer, error) {
	const op = "summarizer_new"
	co, err := summaryOptions(op, model)
	if err != nil {
		return nil, err
	}
	defer freeC(co)
	var p *C.omprpc_summarizer
	var cerr *C.char
	if st := C.omprpc_summarizer_new(co, &p, &cerr); st != C.OMPRPC_STATUS_OK {
		return nil, errorFromJSON(op, Status(st), takeBytes(cerr))
	}
	s := &Summarizer{ptr: p}
	runtime.SetFinalizer(s, (*Summarizer).Close)
	return s, nil
}

// DerivedItem is what one event contributes to a turn: Kind is "text", "reasoning_start",
// "reasoning", "tool_start", "tool_update", "tool_end", "message_end", "stop", "turn_end"
// (one run's end), or of the agent's recovery "retry" (attempt, maxAttempts, delayMs, error:
// it waits to retry), "retry_end" (success, attempt, finalError), "compaction" (reason,
// aborted, willRetry, errorMessage) and "settled" (aborted: the agent will not go on); Raw
// has the item's other members (text, toolCallId, outcome, usage …; the tool items'
// parentToolCallId names the call that made theirs, null for a call of the model).
type DerivedItem struct {
	Kind string
	Raw  json.RawMessage
}

// Feed feeds one raw event (json.RawMessage, []byte, an Event, or a value that marshals to
// a JSON object) and returns the derived items it produced (often none).
func (s *Summarizer) Feed(event any) ([]DerivedItem, error) {
	const op = "summarizer_feed"
	if ev, ok := event.(Event); ok {
		event = ev.Raw
	}
	ce, err := rawJSON(op, "event", event)
	if err != nil {
		return nil, err
	}
	if ce == nil {
		return nil, newError(op, StatusInvalidArgument, "the event must not be nil")
	}
	defer freeC(ce)
	js, err := s.call(op, func(p *C.omprpc_summarizer, out, perr **C.char) C.omprpc_status {
		return C.omprpc_summarizer_feed(p, ce, out, perr)
	})
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := unmarshal(op, js, &raws); err != nil {
		return nil, err
	}
	items := make([]DerivedItem, len(raws))
	for i, r := range raws {
		var k struct {
			Kind string `json:"kind"`
		}
		if err := unmarshal(op, r, &k); err != nil {
			return nil, err
		}
		items[i] = DerivedItem{Kind: k.Kind, Raw: r}
	}
	return items, nil
}

// Summary is the summary of everything fed so far.
func (s *Summarizer) Summary() (*Summary, error) {
	js, err := s.call("summarizer_summary", func(p *C.omprpc_summarizer, out, perr **C.char) C.omprpc_status {
		return C.omprpc_summarizer_summary(p, out, perr)
	})
	if err != nil {
		return nil, err
	}
	return ParseSummary(js)
}

func (s *Summarizer) call(op string, fn func(p *C.omprpc_summarizer, out, perr **C.char) C.omprpc_status) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return nil, newError(op, StatusInvalidArgument, "the summarizer is closed")
	}
	return callStatic(op, func(out, perr **C.char) C.omprpc_status { return fn(s.ptr, out, perr) })
}

// Close releases the summarizer. Idempotent; always nil.
func (s *Summarizer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.omprpc_summarizer_free(s.ptr)
		s.ptr = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// --- environment, prompt content, provider config -----------------------------------------

// EnvAllowlisted is this process's environment through the library's allow-list: only the
// names a coding agent needs (PATH, HOME, locale, proxies, TLS, NODE_*, PI_*, XDG_* …), plus
// the exact names in passthrough (e.g. one API key). Deny by default. (To give the agent
// exactly this: Options{InheritEnv: InheritAllowlist, EnvPassthrough: …}.)
func EnvAllowlisted(passthrough ...string) (map[string]string, error) {
	const op = "env_allowlisted"
	var opts any
	if len(passthrough) > 0 {
		opts = map[string][]string{"passthrough": passthrough}
	}
	co, err := rawJSON(op, "options", opts)
	if err != nil {
		return nil, err
	}
	defer freeC(co)
	js, err := callStatic(op, func(out, perr **C.char) C.omprpc_status {
		return C.omprpc_env_allowlisted(co, out, perr)
	})
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	if err := unmarshal(op, js, &env); err != nil {
		return nil, err
	}
	return env, nil
}

// PromptContent is a prompt built from content blocks: the message and its images.
type PromptContent struct {
	Message string         `json:"message"`
	Images  []ImageContent `json:"images"`
}

// PromptFromContent turns content blocks into a message and images:
// {"type":"text","text"}, {"type":"image","path"|"data_uri"} (the type is checked from the
// bytes: PNG, JPEG, GIF, WebP), {"type":"file","path"|"data_uri"|"text","name"?} (UTF-8
// text, inlined). An unknown block type, an unreadable file or a mislabelled image is
// ErrInvalidArgument. Prompt, PromptAndWait and AbortAndPrompt take the same blocks as
// PromptOptions.Content.
func PromptFromContent(blocks []any) (*PromptContent, error) {
	const op = "prompt_from_content"
	if blocks == nil {
		blocks = []any{}
	}
	cb, err := rawJSON(op, "blocks", blocks)
	if err != nil {
		return nil, err
	}
	defer freeC(cb)
	js, err := callStatic(op, func(out, perr **C.char) C.omprpc_status {
		return C.omprpc_prompt_from_content(cb, out, perr)
	})
	if err != nil {
		return nil, err
	}
	pc := &PromptContent{}
	if err := unmarshal(op, js, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// Provider is one custom provider of ProviderConfig (pi's models.json / omp's models.yml).
// Name the API key by environment variable (APIKeyEnv): the agent reads the variable at run
// time, nothing secret is written to disk, and the name comes back for EnvPassthrough.
type Provider struct {
	BaseURL    string            `json:"baseUrl"`
	API        string            `json:"api"` // e.g. "openai-completions"
	APIKeyEnv  string            `json:"apiKeyEnv,omitempty"`
	APIKey     string            `json:"apiKey,omitempty"`
	AuthHeader *bool             `json:"authHeader,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Compat     any               `json:"compat,omitempty"`
	// Models: at least one, each with an "id" (maps or structs: contextWindow, maxTokens …).
	Models []any `json:"models"`
}

// ProviderOptions are the options of ProviderConfig.
type ProviderOptions struct {
	Flavor    Flavor              `json:"flavor,omitempty"` // FlavorPi (models.json, the default) or FlavorOmp (models.yml)
	Dir       string              `json:"dir,omitempty"`    // default: a new private directory (0700)
	Model     string              `json:"model,omitempty"`  // "provider/id"; default: the first model listed
	Providers map[string]Provider `json:"providers"`
}

// ProviderSetup is a written provider config: File in the agent directory Dir; start the
// agent with Apply(&opts), and Remove the directory when done.
type ProviderSetup struct {
	Dir            string            `json:"dir"`
	File           string            `json:"file"`
	Env            map[string]string `json:"env"`
	Model          string            `json:"model"`
	EnvPassthrough []string          `json:"envPassthrough"`
}

// ProviderConfig writes a custom-provider config for the agent (omprpc_provider_config).
func ProviderConfig(opts ProviderOptions) (*ProviderSetup, error) {
	ps := &ProviderSetup{}
	err := callJSON("provider_config", opts, ps, func(co *C.char, out, perr **C.char) C.omprpc_status {
		return C.omprpc_provider_config(co, out, perr)
	})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// Apply merges the config into start options: its Env on top of opts.Env, its
// EnvPassthrough names, and its Model (when opts has none).
func (p *ProviderSetup) Apply(opts *Options) {
	if len(p.Env) > 0 {
		env := make(map[string]string, len(opts.Env)+len(p.Env))
		for k, v := range opts.Env {
			env[k] = v
		}
		for k, v := range p.Env {
			env[k] = v
		}
		opts.Env = env
	}
	for _, name := range p.EnvPassthrough {
		found := false
		for _, have := range opts.EnvPassthrough {
			found = found || have == name
		}
		if !found {
			opts.EnvPassthrough = append(opts.EnvPassthrough, name)
		}
	}
	if opts.Model == "" {
		opts.Model = p.Model
	}
}

// Remove deletes the agent directory and the config in it.
func (p *ProviderSetup) Remove() error { return os.RemoveAll(p.Dir) }

// --- tool-parameter schemas, skills -------------------------------------------------------

// SanitizedSchema is a tool-parameter schema from SanitizeSchema and what was taken out of
// it: each removed keyword and union branch not chosen, with its JSON-pointer path.
type SanitizedSchema struct {
	Schema  json.RawMessage `json:"schema"`
	Dropped []DroppedPart   `json:"dropped"`
}

// DroppedPart is one thing SanitizeSchema took out: Path is a JSON pointer into the input.
type DroppedPart struct {
	Path   string          `json:"path"`
	Reason string          `json:"reason"`
	Value  json.RawMessage `json:"value"`
}

// SanitizeSchema makes a JSON Schema for tool parameters (a map, a struct or
// json.RawMessage) into the shape LLM providers accept (opt-in; docs/c-api.md): local $refs
// inlined with their sibling keywords on top, anyOf/oneOf collapsed to the object branch
// (else the first non-null typed one), allOf of objects merged, examples / default /
// additionalProperties / $schema / $id / $comment removed, descriptions kept. A recursive or
// remote $ref is ErrInvalidArgument; an output over maxNodes schema nodes (0: the default,
// 100000) is ErrLimitExceeded. Options.SanitizeToolSchemas applies it to the start's host tools.
func SanitizeSchema(schema any, maxNodes int) (*SanitizedSchema, error) {
	const op = "sanitize_schema"
	cs, err := rawJSON(op, "schema", schema)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return nil, newError(op, StatusInvalidArgument, "the schema must not be nil")
	}
	defer freeC(cs)
	var opts any
	if maxNodes != 0 {
		opts = map[string]int{"max_nodes": maxNodes}
	}
	co, err := rawJSON(op, "options", opts)
	if err != nil {
		return nil, err
	}
	defer freeC(co)
	js, err := callStatic(op, func(out, perr **C.char) C.omprpc_status {
		return C.omprpc_sanitize_schema(cs, co, out, perr)
	})
	if err != nil {
		return nil, err
	}
	s := &SanitizedSchema{}
	if err := unmarshal(op, js, s); err != nil {
		return nil, err
	}
	return s, nil
}

// SkillsOptions are the input of SkillsFlags.
type SkillsOptions struct {
	Flavor       Flavor `json:"flavor"`                  // FlavorOmp or FlavorPi
	AgentVersion string `json:"agent_version,omitempty"` // "X.Y.Z"; "" for the newest
	// Skills is "all", "none", or a []string: names (glob patterns) for omp, paths (entries
	// with a '/') for pi from 0.50 (older pi: "all" or "none" only).
	Skills any `json:"skills"`
	// Tools is the --tools allow-list, if any (nil: none given).
	Tools []string `json:"tools,omitempty"`
}

// SkillFlags is what SkillsFlags returns: the argv flags; NeedsRead, as the agent lists
// skills only with the read tool on; Tools, the allow-list given with read added then.
type SkillFlags struct {
	Flags     []string `json:"flags"`
	NeedsRead bool     `json:"needs_read"`
	Tools     []string `json:"tools"`
}

// SkillsFlags gives the flags that select skills for an agent and version
// (omprpc_skills_flags). What the agent cannot express (a name for pi, a path for omp, a
// subset for pi before 0.50) is ErrInvalidArgument. Options.Skills applies the same to the argv Start builds.
func SkillsFlags(opts SkillsOptions) (*SkillFlags, error) {
	f := &SkillFlags{}
	err := callJSON("skills_flags", opts, f, func(co *C.char, out, perr **C.char) C.omprpc_status {
		return C.omprpc_skills_flags(co, out, perr)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

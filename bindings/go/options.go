package omprpc

import (
	"context"
	"encoding/json"
	"time"
)

// Options are the start options of docs/c-api.md ("Start options"). Every field maps to the
// snake_case key in its json tag; a zero value leaves the library's default. Fields that
// need a third state (unset / false, or unset / a number / no limit) are pointers: use
// Ptr(v), and Unlimited() for "null: no limit". Durations are converted to whole
// milliseconds (rounded up); a negative duration means "no deadline".
type Options struct {
	// Command is the exact argv to spawn; every flag option below is then ignored.
	Command            []string `json:"command,omitempty"`
	Executable         string   `json:"executable,omitempty"` // argv[0] for the builder ("omp")
	Flavor             Flavor   `json:"flavor,omitempty"`     // FlavorOmp, FlavorPi or FlavorAuto
	Provider           string   `json:"provider,omitempty"`
	Model              string   `json:"model,omitempty"`
	SessionDir         string   `json:"session_dir,omitempty"`
	Thinking           string   `json:"thinking,omitempty"`
	SystemPrompt       string   `json:"system_prompt,omitempty"`
	AppendSystemPrompt string   `json:"append_system_prompt,omitempty"`
	ProviderSessionID  string   `json:"provider_session_id,omitempty"` // omp only
	// Tools: nil leaves it unset, an empty non-nil slice gives --no-tools.
	Tools       []string `json:"tools,omitzero"`
	NoSession   bool     `json:"no_session,omitempty"`
	NoSkills    bool     `json:"no_skills,omitempty"`
	NoRules     bool     `json:"no_rules,omitempty"`
	NoTitle     *bool    `json:"no_title,omitempty"`
	RPCDefaults *bool    `json:"rpc_defaults,omitempty"`
	Extensions  []string `json:"extensions,omitempty"`
	ExtraArgs   []string `json:"extra_args,omitempty"`

	// Skills selects the skills to load: "all", "none" or a []string (see SkillsFlags); nil
	// leaves the agent's default. Contradicting NoSkills is an error.
	Skills any `json:"skills,omitempty"`
	// SanitizeToolSchemas passes HostTools' parameter schemas through SanitizeSchema.
	SanitizeToolSchemas bool `json:"sanitize_tool_schemas,omitempty"`

	// What the agent loads and reaches beyond what the host names (docs/agents.md, "Options
	// that mean what they say"); an option the running version cannot honour fails Start
	// with ErrInvalidArgument naming the version.
	//
	// TrustProject: nil or false keeps the repository's own resources out on pi (.pi/extensions,
	// .pi/settings.json, .pi/mcp.json …: --no-approve from pi 0.79, discovery switched off
	// before); Ptr(true) loads them. On omp nil leaves its discovery, Ptr(false) passes
	// --no-extensions.
	TrustProject *bool `json:"trust_project,omitempty"`
	// MCP: nil or false starts no MCP server (pi 1.0.4 on: --no-mcp); Ptr(true) lets pi's MCP
	// configuration load, with Tools still deciding which MCP tools are reachable.
	MCP *bool `json:"mcp,omitempty"`
	// ContextFiles: Ptr(false) keeps AGENTS.md / CLAUDE.md out (pi 0.67.4 on).
	ContextFiles *bool `json:"context_files,omitempty"`
	// ExcludeTools takes tools away (pi 0.77 on; `*` patterns from 1.0.4).
	ExcludeTools []string `json:"exclude_tools,omitempty"`

	Cwd string `json:"cwd,omitempty"`
	// Env is the agent's environment: exactly this, plus what InheritEnv and EnvPassthrough add.
	Env            map[string]string `json:"env,omitempty"`
	InheritEnv     Inherit           `json:"inherit_env,omitempty"`
	EnvPassthrough []string          `json:"env_passthrough,omitempty"` // exact names copied from this process
	// SystemPromptViaFile hands system prompts to the agent as files, not in its argv.
	SystemPromptViaFile bool      `json:"system_prompt_via_file,omitempty"`
	Handshake           Handshake `json:"handshake,omitempty"` // HandshakeReady, HandshakeProbe or HandshakeNone
	// Launcher is an argv prefix the agent runs behind: a sandbox (bwrap, unshare, ip netns
	// exec) or another host (ssh -T host, docker exec -i ctr, kubectl exec -i pod --). What
	// close means through each: docs/launcher.md.
	Launcher []string `json:"launcher,omitempty"`
	// LauncherEnv: "auto", "process" (the launcher hands its environment on) or "command" (Env
	// and Cwd travel as an `env -C DIR NAME=VALUE …` prefix; the default for ssh, docker,
	// podman, kubectl, sudo).
	LauncherEnv LauncherEnv `json:"launcher_env,omitempty"`
	// LauncherShell quotes each word for the far side's shell (default: on for ssh only).
	LauncherShell *bool `json:"launcher_shell,omitempty"`
	// RecordPath records every frame, both directions, to this JSONL file (created 0600; it
	// holds prompts and tool output). `omprpc-fake-agent --replay FILE` plays it back.
	RecordPath string `json:"record_path,omitempty"`

	StartupTimeout time.Duration `json:"-"` // startup_timeout_ms (30 s); Start's ctx deadline also bounds it
	RequestTimeout time.Duration `json:"-"` // request_timeout_ms (30 s): requests whose ctx has no deadline
	TurnTimeout    time.Duration `json:"-"` // turn_timeout_ms (none): PromptAndWait / CollectEvents / WaitForIdle
	StopGrace      time.Duration `json:"-"` // stop_grace_ms (2 s)
	KillGrace      time.Duration `json:"-"` // kill_grace_ms (1 s)
	// TurnIdleTimeout (turn_idle_timeout_ms) fails a waiting turn when no event arrives for this long.
	TurnIdleTimeout time.Duration `json:"-"`
	// HostToolTimeout (host_tool_timeout_ms): the bridge extension fails a host tool call after this long.
	HostToolTimeout time.Duration `json:"-"`

	MaxEventHistory       *int `json:"max_event_history,omitempty"` // 10000; Unlimited() for none
	MaxStderrLines        *int `json:"max_stderr_lines,omitempty"`  // 512
	MaxFrameBytes         *int `json:"max_frame_bytes,omitempty"`
	MaxOutboundFrameBytes *int `json:"max_outbound_frame_bytes,omitempty"`
	EventQueueCapacity    *int `json:"event_queue_capacity,omitempty"`  // 65536
	EventQueueMaxBytes    *int `json:"event_queue_max_bytes,omitempty"` // 256 MiB
	MaxTurnBytes          *int `json:"max_turn_bytes,omitempty"`        // 1 GiB
	// TurnEvents is which events a turn retains: "all", "no_updates" or "none".
	TurnEvents TurnEvents `json:"turn_events,omitempty"`

	NegotiateV2   *bool         `json:"negotiate_v2,omitempty"`   // true
	InvalidFrames InvalidFrames `json:"invalid_frames,omitempty"` // InvalidFramesFatal or InvalidFramesSkip

	// HostTools are registered during start; the ones with a Handler are served by this
	// package (see RegisterHostTool), the others arrive as host_tool_call events.
	HostTools      []HostTool      `json:"host_tools,omitempty"`
	HostURISchemes []HostURIScheme `json:"host_uri_schemes,omitempty"`
	UIPolicy       *UIPolicy       `json:"ui_policy,omitempty"`
	// Bridge serves host tools through the library's tool bridge: "auto" (pi), "always", "never".
	Bridge          Bridge          `json:"bridge,omitempty"`
	BridgeTransport BridgeTransport `json:"bridge_transport,omitempty"` // TransportUnix or TransportTCP
	// BridgeListen is the "IP:port" the bridge binds (TCP; default "127.0.0.1:0"), and
	// BridgeAdvertise the "host:port" the extension dials (default: the bound address; port 0:
	// the bound port): an agent in another network namespace, container or host reaches the
	// bridge there. Either one selects TCP. The docs/c-api.md section "The bridge over TCP".
	BridgeListen    string `json:"bridge_listen,omitempty"`
	BridgeAdvertise string `json:"bridge_advertise,omitempty"`
	// ToolPolicy gates the agent's own tools (needs the bridge extension).
	ToolPolicy *ToolPolicy `json:"tool_policy,omitempty"`
	// TurnSummary adds a summary to PromptAndWait's Turn.
	TurnSummary bool `json:"turn_summary,omitempty"`
	// PromptCompleteEvents shows the library's prompt_complete events to All, Events and
	// Subscribe: one when a prompt completes, right after the frame that completed it:
	// {"type":"prompt_complete","omprpc":true,"requestId","outcome","agentInvoked","error"?},
	// outcome a TurnOutcome name or "failed". The end to wait for when streaming a prompt's
	// events (an agent_end is not the end when the agent retries, compacts or settles later).
	// The library queues them for every client (the start option prompt_complete_events is
	// always on: Stream ends its turn there), and its activity watcher probes the agent where
	// the stream leaves it open; without this option this package keeps them from subscribers.
	PromptCompleteEvents bool `json:"-"`
	// LogLevel ("error", "warn", "info", "debug", "trace"; empty: off) makes the library keep
	// log records for Logs / ForwardLogs; LogQueueCapacity bounds them (1024).
	LogLevel         LogLevel `json:"log_level,omitempty"`
	LogQueueCapacity *int     `json:"log_queue_capacity,omitempty"`

	// Extra is merged into the options JSON last (it overrides the fields above): an escape
	// hatch for options this struct does not name yet. A nil value sends JSON null.
	Extra map[string]any `json:"-"`

	// HostToolConcurrency bounds the host tool handlers running at once (default 8).
	// A Go-side setting: it is not sent to the library.
	HostToolConcurrency int `json:"-"`
}

// Ptr returns a pointer to v, for the optional fields of Options and UIPolicy.
func Ptr[T any](v T) *T { return &v }

// Unlimited is the value of a limit option (MaxEventHistory …) that removes the limit
// (JSON null).
func Unlimited() *int { return Ptr(-1) }

const defaultHostToolConcurrency = 8

// optionsWire has the fields of Options and none of its methods.
type optionsWire Options

// startJSON is the options JSON for the library, as the caller gave them (BuildArgv). With a
// ctx deadline, startup_timeout_ms is lowered to what is left of it.
func (o Options) startJSON(ctx context.Context) ([]byte, error) {
	return o.optionsJSON(ctx, false)
}

// clientJSON is startJSON with what every client of this package needs: Start sends it.
func (o Options) clientJSON(ctx context.Context) ([]byte, error) {
	return o.optionsJSON(ctx, true)
}

func (o Options) optionsJSON(ctx context.Context, forClient bool) ([]byte, error) {
	base, err := json.Marshal(optionsWire(o))
	if err != nil {
		return nil, newError("start", StatusInvalidJSON, "options: %v", err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, newError("start", StatusInvalidJSON, "options: %v", err)
	}
	for key, d := range map[string]time.Duration{
		"startup_timeout_ms":   o.StartupTimeout,
		"request_timeout_ms":   o.RequestTimeout,
		"turn_timeout_ms":      o.TurnTimeout,
		"stop_grace_ms":        o.StopGrace,
		"kill_grace_ms":        o.KillGrace,
		"turn_idle_timeout_ms": o.TurnIdleTimeout,
		"host_tool_timeout_ms": o.HostToolTimeout,
	} {
		switch {
		case d < 0:
			m[key] = -1
		case d > 0:
			m[key] = ms(d)
		}
	}
	for key, p := range map[string]*int{
		"max_event_history":        o.MaxEventHistory,
		"max_stderr_lines":         o.MaxStderrLines,
		"max_frame_bytes":          o.MaxFrameBytes,
		"max_outbound_frame_bytes": o.MaxOutboundFrameBytes,
		"event_queue_capacity":     o.EventQueueCapacity,
		"event_queue_max_bytes":    o.EventQueueMaxBytes,
		"max_turn_bytes":           o.MaxTurnBytes,
	} {
		if p != nil && *p < 0 {
			m[key] = nil
		}
	}
	for k, v := range o.Extra {
		m[k] = v
	}
	if forClient {
		// Stream ends its turn at the library's prompt_complete event, so every client
		// queues them; All, Events and Subscribe show them only to a client that asked
		// (showsCompletions).
		m["prompt_complete_events"] = true
	}
	if ctx != nil {
		if d, ok := ctx.Deadline(); ok {
			left := ms(time.Until(d))
			if left < 1 {
				left = 1
			}
			v, present := m["startup_timeout_ms"]
			cur, isNumber := number(v)
			if !present || v == nil || (isNumber && (cur < 0 || cur > float64(left))) {
				m["startup_timeout_ms"] = left
			}
		}
	}
	js, err := json.Marshal(m)
	if err != nil {
		return nil, newError("start", StatusInvalidJSON, "options: %v", err)
	}
	return js, nil
}

// showsCompletions reports whether the caller asked for the library's prompt_complete events
// (PromptCompleteEvents, or prompt_complete_events in Extra): All, Events and Subscribe
// deliver them only then.
func (o Options) showsCompletions() bool {
	asked, _ := o.Extra["prompt_complete_events"].(bool)
	return o.PromptCompleteEvents || asked
}

// number reads a JSON number held as any Go numeric type.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// Inherit is the inherit_env option: which part of this process's environment the agent
// gets under Env.
type Inherit string

// The values of Inherit.
const (
	InheritDefault   Inherit = ""          // unset: the core's default, the allow-list with the provider keys pi and omp read
	InheritNothing   Inherit = "nothing"   // exactly Env (sent as false): nothing of this process's
	InheritAll       Inherit = "all"       // all of this process's environment
	InheritAllowlist Inherit = "allowlist" // only the names an agent needs (PATH, HOME, locale, proxies …)
)

// MarshalJSON writes InheritAll as true, InheritNothing as false, others as their name.
func (i Inherit) MarshalJSON() ([]byte, error) {
	switch i {
	case InheritAll:
		return []byte("true"), nil
	case InheritNothing:
		return []byte("false"), nil
	}
	return json.Marshal(string(i))
}

// ToolPolicy is the tool_policy option: a gate over the agent's own tools. Mode "host" asks
// the program: Handler when set, else policy_eval events answered with Client.PolicyVerdict
// (subscribe before the agent asks: while handlers run, events nobody subscribes to are
// dropped); "rules" decides in the library. It fails closed unless FailOpen.
type ToolPolicy struct {
	Mode    PolicyMode        `json:"mode"`
	Allow   []string          `json:"allow,omitempty"`
	Block   map[string]string `json:"block,omitempty"`   // tool name → reason
	Default PolicyDefault     `json:"default,omitempty"` // PolicyAllow or PolicyBlock
	// Timeout (timeout_ms, 30 s) blocks a tool the host did not decide on in time.
	Timeout  time.Duration `json:"-"`
	FailOpen bool          `json:"fail_open,omitempty"`
	// Handler answers every policy_eval in host mode (a Go-side setting, not sent).
	Handler PolicyHandler `json:"-"`
}

// MarshalJSON sends Timeout as timeout_ms.
func (p ToolPolicy) MarshalJSON() ([]byte, error) {
	type wire ToolPolicy
	w := struct {
		wire
		TimeoutMS int64 `json:"timeout_ms,omitempty"`
	}{wire: wire(p), TimeoutMS: ms(p.Timeout)}
	return json.Marshal(w)
}

// PromptOptions are the options of Prompt, PromptAndWait and AbortAndPrompt.
type PromptOptions struct {
	Images []ImageContent `json:"images,omitempty"`
	// Content are blocks appended to the message: {"type":"text","text"},
	// {"type":"image","path"|"data_uri"}, {"type":"file","path"|"data_uri"|"text","name"?}.
	Content []any `json:"content,omitempty"`
	// StreamingBehavior queues a prompt into a running turn: "steer" or "followUp".
	StreamingBehavior StreamingBehavior `json:"streamingBehavior,omitempty"`
}

// UIPolicy is the headless UI policy: the library answers interactive UI requests itself.
// A nil field cancels requests of that kind (nil Confirm cancels confirms).
type UIPolicy struct {
	Confirm *bool   `json:"confirm"`
	Select  *string `json:"select"`
	Input   *string `json:"input"`
	Editor  *string `json:"editor"`
}

// HostURIScheme is a host URI scheme registration. With a Handler, this package serves its
// requests; without one, they arrive as host_uri_request events for the program to answer
// with HostURIResult (a request that arrives while nothing subscribes to the events is
// answered at once with an error).
type HostURIScheme struct {
	Scheme      string         `json:"scheme"`
	Description string         `json:"description,omitempty"`
	Writable    bool           `json:"writable,omitempty"`
	Immutable   bool           `json:"immutable,omitempty"`
	Handler     HostURIHandler `json:"-"`
}

// The enum-valued options are named string types, one constant per value: a typo in a
// constant's name does not compile. Untyped string constants still assign ("pi" is a
// Flavor), so a value this package does not name yet can be given as it is.

// Flavor is the agent flavour (flavor; also ProviderOptions.Flavor, SkillsOptions.Flavor).
type Flavor string

const (
	FlavorOmp  Flavor = "omp"
	FlavorPi   Flavor = "pi"
	FlavorAuto Flavor = "auto" // detected from the agent (Options only)
)

// Handshake is how Start knows the agent is up (handshake).
type Handshake string

const (
	HandshakeReady Handshake = "ready" // omp's ready frame
	HandshakeProbe Handshake = "probe" // a get_state probe (pi)
	HandshakeNone  Handshake = "none"
)

// LauncherEnv is how Env and Cwd cross a Launcher (launcher_env; docs/launcher.md).
type LauncherEnv string

const (
	LauncherEnvAuto    LauncherEnv = "auto"
	LauncherEnvProcess LauncherEnv = "process" // the launcher hands its environment on
	LauncherEnvCommand LauncherEnv = "command" // an `env -C DIR NAME=VALUE …` prefix
)

// TurnEvents is which events a turn retains (turn_events).
type TurnEvents string

const (
	TurnEventsAll       TurnEvents = "all"
	TurnEventsNoUpdates TurnEvents = "no_updates" // all but message_update (each repeats the whole partial message)
	TurnEventsNone      TurnEvents = "none"
)

// InvalidFrames is what a line that is not a JSON object does (invalid_frames).
type InvalidFrames string

const (
	InvalidFramesFatal InvalidFrames = "fatal" // the default
	InvalidFramesSkip  InvalidFrames = "skip"  // record a protocol error and go on
)

// Bridge is when host tools go through the library's tool bridge (bridge).
type Bridge string

const (
	BridgeAuto   Bridge = "auto" // for pi
	BridgeAlways Bridge = "always"
	BridgeNever  Bridge = "never"
)

// BridgeTransport is the bridge's transport (bridge_transport).
type BridgeTransport string

const (
	TransportUnix BridgeTransport = "unix"
	TransportTCP  BridgeTransport = "tcp"
)

// LogLevel is the level of the log records kept (log_level).
type LogLevel string

const (
	LogOff   LogLevel = "off"
	LogError LogLevel = "error"
	LogWarn  LogLevel = "warn"
	LogInfo  LogLevel = "info"
	LogDebug LogLevel = "debug"
	LogTrace LogLevel = "trace"
)

// PolicyMode is ToolPolicy.Mode.
type PolicyMode string

const (
	PolicyHost  PolicyMode = "host"  // the program decides (Handler, or policy_eval events)
	PolicyRules PolicyMode = "rules" // the library decides from Allow / Block / Default
)

// PolicyDefault is ToolPolicy.Default: the verdict for a tool the rules do not name.
type PolicyDefault string

const (
	PolicyAllow PolicyDefault = "allow"
	PolicyBlock PolicyDefault = "block"
)

// StreamingBehavior queues a prompt into a running turn (PromptOptions.StreamingBehavior).
type StreamingBehavior string

const (
	StreamingSteer    StreamingBehavior = "steer"
	StreamingFollowUp StreamingBehavior = "followUp"
)

//! `omprpc-fake-agent`: a scriptable, deterministic fake of `omp --mode rpc`
//! and `pi --mode rpc`, the test double of every omprpc test suite.
//!
//! JSON lines on stdin (commands), JSON lines on stdout (responses and
//! events), free text on stderr. Every stdout frame is one line of compact
//! JSON + `"\n"`, written through one buffered writer flushed after each
//! logical batch. Key order follows the seed's `FAKE_SERVER`. Blank input
//! lines are skipped; stdin EOF → flush and exit 0 (unless a scenario says
//! otherwise).
//!
//! # Command line
//!
//! `omprpc-fake-agent [--flavor omp|pi] [--scenario NAME] [--v2] [anything else]`
//!
//! * `--flavor=X` / `--scenario=X` forms work too. Every other argument
//!   (`--mode rpc`, `--model x`, `--no-title`, …) is ignored. An unknown
//!   flavor or scenario name → message on stderr, exit 2.
//! * Fallbacks when the flag is absent: env `OMPRPC_FAKE_FLAVOR`,
//!   `OMPRPC_FAKE_SCENARIO`, `OMPRPC_FAKE_V2=1`.
//! * `OMPRPC_FAKE_ARGV_FILE=path`: the arguments **after argv\[0\]** are
//!   written there as a JSON array of strings, before anything else happens.
//! * `OMPRPC_FAKE_ENV_FILE=path`: the whole environment is written there as a
//!   JSON object (keys sorted).
//! * `OMPRPC_FAKE_V2_FAIL=1` (with `--v2`): advertise v2 but refuse
//!   `negotiate_protocol` (`success:false`, "Unsupported protocol version").
//! * `OMPRPC_FAKE_GRANDCHILD=path`: the path of scenario `grandchild`.
//! * `OMPRPC_FAKE_STATE_DELAY_MS=N`: `get_state` answers N ms late (and nothing else is read
//!   meanwhile), as an agent busy elsewhere would.
//! * `--version`, `--extension PATH`, env `OMPRPC_FAKE_VERSION` and
//!   `OMPRPC_FAKE_DROP_EXTENSION=1`: see `extension.rs` (the bridge hello).
//! * `OMPRPC_FAKE_VERSION` (pi; default 0.73.1) is also the pi the fake behaves as, in every
//!   scenario (`agent/versions.rs`): from 0.75.4 every `agent_end` carries `willRetry`; from
//!   0.80.4 the work ends with `{"type":"agent_settled","aborted":…}` (after the last
//!   `agent_end` and what closes the work; before the `abort` response that ended it) and
//!   `get_state` says `isStreaming` until then; from 0.83.0 a streaming assistant
//!   `message_start` says `stopReason:"pending"`; from 0.84.0 `message_update` is delta-only
//!   (`usage`, no `message`/`partial`); from 0.86.0 the session's first run lists a system
//!   message (recovery scenarios); from 0.87.0 a failed attempt left out is an
//!   `entry_appended` context_edit; from 0.99.0 prompt/steer/follow_up responses carry
//!   `data.disposition` ("started", "queued" — `streamingBehavior`, a live run, every
//!   steer/follow-up —, "handled" — `/noop`). Measured on pi 0.73.1 and 1.6.0.
//! * `--protocol 1.1` (env `OMPRPC_FAKE_PROTOCOL=1.1`, omp flavour): the "omp-rpc" 1.1.0
//!   server of the omp fork `omp_rpc` is written for — typed errors, frame metadata,
//!   operations, session entries, incremental host registration; see `agent/rpc11.rs`.
//! * `--replay FILE [--replay-speed X]`: instead of all of the below, play back a session
//!   recorded with the client's `record_path` option (see `replay.rs`): the recorded agent
//!   frames in order, each recorded client frame checked against the live one (a mismatch →
//!   stderr + exit 1), responses re-addressed to the live request ids.
//!
//! # Flavors
//!
//! * `omp` (default): first line `{"type":"ready"}`; with `--v2`
//!   `{"type":"ready","protocolVersion":1,"supportedProtocolVersions":[1,2],"maxFrameBytes":1048576,"maxReassembledFrameBytes":67108864}`.
//!   `negotiate_protocol` with `protocolVersion:2` then answers
//!   `data:{"protocolVersion":2}` and, right after that response, every frame
//!   whose compact JSON length + 1 exceeds 1 MiB (so a 1,048,576-byte frame IS
//!   chunked) goes out as consecutive
//!   `{"type":"rpc_chunk","chunkId":"rpc-<n>","index":i,"count":k,"byteLength":L,"data":"<base64>"}`
//!   (n = 1, 2, … per chunked frame; L = JSON length without the newline;
//!   slices of 262,144 bytes). Frames over 64 MiB are chunked anyway (count >
//!   256) so clients can test their limit. Without `--v2` (or with
//!   `OMPRPC_FAKE_V2_FAIL=1`, or another version) `negotiate_protocol` fails
//!   with its id: "Unsupported protocol version". Without v2 big frames are
//!   written as one line, whatever their size.
//! * `pi`: no ready frame at all. `set_host_tools`, `set_host_uri_schemes`
//!   and `negotiate_protocol` are unknown commands, and an unknown command
//!   gets an **id-less** `{"type":"response","command":"<type>","success":false,"error":"Unknown command: <type>"}`.
//!   Prompts "needs ui" / "needs confirm" / "needs cancel" send the
//!   `extension_ui_request` **before** the prompt's response; the response
//!   comes only when the `extension_ui_response` arrives, followed by
//!   `ui_response_seen` and the "ui acknowledged" turn. Everything else as omp.
//!
//! # Default scenario: commands
//!
//! State and data are those of the seed's `FAKE_SERVER` (sessionId
//! "fake-session", model claude-sonnet-4-5 / anthropic, thinking "medium",
//! modes one-at-a-time / one-at-a-time / immediate, session name
//! "Scratchpad", …). Responses are `{"id","type":"response","command","success","data"?}`
//! (id omitted when the request had none or `null`); failures carry `"error"`.
//!
//! | command | answer `data` |
//! |---|---|
//! | get_state | FAKE_SERVER state + `fastModeEnabled`, `fastModeActive`, `tokensPerSecond:7.25`; `dumpTools` = read + registered host tools verbatim |
//! | set_host_tools | `{toolNames}` (stores the tools) |
//! | set_host_uri_schemes | `{schemes:[trimmed lowercased names]}` (items `{scheme}` or strings) |
//! | set_todos | `{todoPhases}` (stored, shown in get_state) |
//! | get_messages | `{messages}` (the last turn's messages) |
//! | get_messages_page | `{messages,totalMessages,nextCursor}`; `limit` 1..256 (default 100), `cursor` = decimal offset string; nextCursor null at the end |
//! | set_model | the model info (provider, modelId required) |
//! | cycle_model | `{model,thinkingLevel,isScoped:false}` toggling 4-5 ↔ 4-6 |
//! | get_available_models | `{models:[4-5, 4-6]}` |
//! | set_thinking_level, set_steering_mode, set_follow_up_mode, set_interrupt_mode, set_auto_compaction, set_auto_retry, set_session_name | `{}` (field stored verbatim) |
//! | cycle_thinking_level | `{level}`: "high" unless it was "high", then "low" |
//! | compact | `{summary:"trimmed",shortSummary:"trimmed",firstKeptEntryId:"entry-1",tokensBefore:123}` |
//! | bash | `{output:"hello\n",exitCode:0,cancelled:false,truncated:false,totalLines:1,totalBytes:6,outputLines:1,outputBytes:6}` |
//! | abort_bash, abort_retry, steer, follow_up, abort | `{}` |
//! | get_session_stats | FAKE_SERVER stats (tokens.total 15) |
//! | export_html | `{path: outputPath or "/tmp/session.html"}` |
//! | new_session, switch_session | `{cancelled:false}` |
//! | branch | `{text:"branch created",cancelled:false}`; get_branch_messages then returns `[{entryId,text:"branch message"}]` |
//! | get_last_assistant_text | `{text}` (null before any turn) |
//! | set_fast_mode | `{enabled, active: enabled}` |
//! | get_available_commands | `{commands:[]}` |
//! | set_subagent_subscription, get_subagents, get_subagent_messages (omp) | `{level}` (off/progress/events), `{subagents:[]}`, failure "Unknown subagent or session file unavailable: <id>" |
//! | get_fork_messages, fork, clone, get_commands (pi) | `{messages:[{entryId,text:"say hello"}]}`, `{text:"say hello",cancelled:false}`, `{cancelled:false}`, `{commands:[{name:"quiet",…,source:"extension"}]}` |
//! | (each agent's own commands above) | unknown to the other flavour |
//! | handoff | `null` |
//! | negotiate_protocol | see Flavors |
//! | widget_layout | id-less `{"type":"response","command":"widget_layout","success":true}` + event `{"type":"widget_layout_seen","frame":<frame as received>}` |
//! | prompt, abort_and_prompt | see Prompt messages |
//! | anything else | omp: failure **with** id, `unsupported: <type>`; pi: see Flavors |
//!
//! Malformed input: not JSON / not UTF-8 / not an object → id-less
//! `{"type":"response","command":"parse","success":false,"error":"Failed to parse command: …"}`.
//! No `type` → `command:"parse"`, error "missing field: type" (with the id if
//! any). A missing required field → failure with the id, "missing field: X"
//! (wrong type: "invalid field: X (expected …)").
//!
//! Control frames (no response; the received frame is echoed verbatim in the
//! `*_seen` events):
//! * `extension_ui_response` → `{"type":"ui_response_seen","frame":…}`, then
//!   the "ui acknowledged" turn (agent_start … agent_end, text "ui
//!   acknowledged") — except for ids whose request expects no turn ("ui then
//!   tool", "passive ui", "ui dismiss": echo only) and for a second answer to
//!   the same id (echo only). Unknown ids behave like FAKE_SERVER (echo +
//!   turn).
//! * `host_tool_update` / `host_tool_result` for an open host call →
//!   `tool_execution_update` / `tool_execution_end` (+ `{"type":"agent_end","messages":[]}`)
//!   with that call's toolCallId / toolName / args; `partialResult`,
//!   `result`, `isError` (default false) copied verbatim. Unknown or closed
//!   ids are ignored, and so are updates for the echo-only calls of "bad host
//!   call" / "unknown host tool".
//! * `host_uri_result` for an open request → `{"type":"host_uri_result_seen","frame":…}`
//!   then `{"type":"agent_end","messages":[]}`; unknown ids ignored.
//!
//! # Default scenario: prompt messages
//!
//! `prompt` / `abort_and_prompt` first answer `{"id","type":"response","command","success":true}`
//! (no `data`) unless stated. "The normal turn" = FAKE_SERVER's
//! `emit_prompt_turn("pong")`: agent_start, turn_start, message_start
//! (partial with empty text), message_update (text_delta "pong"),
//! message_end, turn_end (`toolResults:[]`), agent_end (`messages:[assistant]`).
//! Missing `message` → failure "missing field: message". The messages come in
//! families, each in its module under `agent/`: `turns.rs`, `ui.rs`, `host.rs`,
//! `volume.rs`, `faults.rs`, `responses.rs`, `activity.rs`, `gate.rs`, `recovery.rs`.
//! The frames below are the default pi's (0.73.1) and omp's; a newer fake pi adds what its
//! version writes (see `OMPRPC_FAKE_VERSION` above).
//!
//! | message | behaviour |
//! |---|---|
//! | needs ui | `extension_ui_request` ui-1 input (title "Need input", placeholder "value"); the answer triggers the ui acknowledged turn |
//! | needs confirm | ui-2 confirm (title "Confirm", message "Continue?"); same |
//! | needs cancel | ui-3 editor (title "Edit", placeholder "value"); same |
//! | needs host tool | agent_start, `host_tool_call` {id host-call-1, toolCallId toolu_host_1, toolName echo_host, arguments {message:"hello"}} |
//! | needs xd tool | agent_start, `tool_execution_start` {toolu_host_1, toolName "write", args {path:"xd://echo_host",content:"{\"message\":\"hello\"}"}}, then the host-call-1 call for echo_host; update/end events then say toolName "write" |
//! | needs host uri | agent_start, `{"type":"host_uri_request","id":"uri-1","operation":"read","url":"memo://notes/today"}` (protocol 1.1: `url` `…?range=0-99`, `maxContentBytes:1032192`, `acceptsBase64:false`, `range:{start:0,end:99,unit:"byte"}`) |
//! | needs host uri write | same with operation write and `content:"new text"` |
//! | cancel host tool | agent_start, host-call-1 call, 100 ms pause, `{"type":"host_tool_cancel","id":"cancel-1","targetId":"host-call-1"}`, agent_end `[]`; a later result is ignored |
//! | bad host call | agent_start, `{"type":"host_tool_call","id":"host-call-bad","toolCallId":"t","toolName":"echo_host","arguments":"not an object"}`; its host_tool_result → `{"type":"host_result_seen","frame":…}`, agent_end `[]` |
//! | unknown host tool | agent_start, call {id host-call-unknown, toolCallId toolu_unknown, toolName no_such_tool, arguments {message:"hello"}}; result echoed like bad host call |
//! | notifications | `extension_error` (extensionPath /tmp/ext.py, event run, error boom), `{"type":"unknown_future_event","value":1}`, normal turn |
//! | slow | normal turn with a 300 ms pause after the message_update |
//! | all events | normal turn with FAKE_SERVER's tool/compaction/retry/ttsr/todo events before message_end |
//! | local | response `data:{"agentInvoked":false}`, no events |
//! | prompt result | response, then `{"type":"prompt_result","id":<request id>,"agentInvoked":false}`, no agent_end |
//! | late failure | response, then a second response with the same id, `success:false`, error "late failure"; no events |
//! | compacted | agent_start, message_start, message_end (assistant "pong"), message_end `{"role":"custom","customType":"terminal","content":"terminal","display":true,"timestamp":2}`, agent_end `{messages:[terminal], messageCount:2}` |
//! | non-terminal | turn "first" ending with agent_end `{messages:[first], isTerminal:false}`, then the normal turn |
//! | thinking | turn whose assistant content is `[{type:thinking,thinking:"hmm"},{type:text,text:"visible"}]` (thinking_delta then text_delta) |
//! | burst N | agent_start, turn_start, message_start, N identical `message_update` lines of exactly 640 bytes (+ newline), message_end, turn_end, agent_end (assistant "pong") |
//! | big N | agent_start, message_end whose assistant text is N bytes, agent_end |
//! | exact MiB | agent_start, a message_end line of exactly 1,048,576 bytes (without newline), agent_end |
//! | huge N | agent_start, tool_execution_start (tool-huge, read), tool_execution_end whose `result.content[0].text` has N bytes, agent_end `[]` |
//! | crash | agent_start, one message_update, "fatal: crashed\n" on stderr, exit 3 |
//! | hang | response only, then nothing (keeps serving stdin) |
//! | stderr N | N stderr lines "stderr line 1" … "stderr line N", then the normal turn |
//! | garbage | the stdout line `this is not json`, then the normal turn |
//! | grandchild PATH | spawns a grandchild in our process group (pid → PATH.pid, heartbeat → PATH.beat every 20 ms), then the normal turn |
//! | ui then tool | ui-9 input request immediately followed by the normal turn (its answer is only echoed) |
//! | passive ui | requests ui-notify (notify), ui-status (setStatus), ui-widget (setWidget, widgetKey fake-widget, widgetLines), ui-url (open_url), then the normal turn |
//! | unknown ui | ui-ask with method "ask"; its answer → ui_response_seen + ui acknowledged turn |
//! | ui dismiss | ui-5 select (options ["a","b"]), 50 ms later `{"type":"extension_ui_request","id":"ui-6","method":"cancel","targetId":"ui-5"}`, then the normal turn |
//! | duplicate response | the success response twice, then the normal turn |
//! | queued | response only (for prompts sent with streamingBehavior) |
//! | hang | (above) — `get_state` then says `isStreaming:true` |
//! | stream until abort | a live run streaming "thinking " until `abort`; steer/follow_up queue (see `agent/activity.rs`: omp runs a queued steer by itself after the abort, pi parks it; a follow_up finishes the answer and runs in the same run) |
//! | handoff | omp's compaction handoff: compaction events, a run ending `agent_end {isTerminal:false}`, then nothing |
//! | /noop | an extension command: no run (omp adds `prompt_result {agentInvoked:false}`) |
//! | retry once [MS] | the LLM call fails with a 500, the agent retries after MS ms (default 100) and answers "recovered". pi: user message, failed assistant (`stopReason:"error"`, `errorMessage` "500 The server had an error…"; pi 0.80.4+ "500: {\"code\":null,…}"), `turn_end`, `agent_end` (pi 0.75.4+ `willRetry:true`), `auto_retry_start {attempt:1,maxAttempts:3,delayMs:MS,errorMessage}`, (0.87+: `entry_appended`); after the delay agent_start, turn_start, the answer's message_start/updates/message_end, `auto_retry_end {success:true,attempt:1}`, turn_end, agent_end (0.80.4+: `agent_settled`). omp 18.2.3: no agent_end for the failed run; `auto_retry_start {…,maxAttempts:10,delayMs:MS.4…,errorId}` after its turn_end; the new run ends turn_end, `auto_retry_end {…,retryErrors}`, `agent_end {isTerminal:true}`. `get_state` in the delay: `isStreaming` false on pi < 0.80.4, true on pi 0.80.4+ and omp. See `agent/recovery.rs` |
//! | rate limited [MS] | the same with a 429 ("429 Rate limit reached for requests…") |
//! | retry until abort [MS] | the same with a 60 s delay (or MS ms). `abort` in it: pi `auto_retry_end {success:false,attempt:1,finalError:"Retry cancelled"}` (0.80.4+: `agent_settled {aborted:true}`), the response; omp `auto_retry_end`, the failed run's `agent_end {isTerminal:true}`, the response. `abort_retry`: pi `auto_retry_end`, the response (0.80.4+: then `agent_settled {aborted:false}`); omp the response, `auto_retry_end`, `agent_end`. A prompt in the delay: pi < 0.80.4 takes it into the retry's run, pi 0.80.4+ refuses it ("Agent is already processing. Specify streamingBehavior…"), omp acknowledges then refuses it |
//! | retries exhausted | every attempt fails, maxAttempts 2 (delays 100, 200 ms): the retry runs fail alike (no user message); then pi `agent_end` (`willRetry:false`), `auto_retry_end {success:false,attempt:2,finalError}` (0.80.4+: `agent_settled`); omp `auto_retry_end {…,retryErrors}`, `agent_end {isTerminal:true}` |
//! | overflow [MS] | a context-length error (400 "…maximum context length…"). pi < 0.79.8: `agent_end`, `compaction_start {reason:"overflow"}`, MS ms (default 100) with `get_state` `isCompacting:true`, `compaction_end {reason:"overflow",result,aborted:false,willRetry:true}`, a new run answering "recovered" (an `abort` meanwhile is answered and changes nothing); pi 0.79.8+ gives up: `agent_end`, (0.87+: `entry_appended`), (0.80.4+: `agent_settled`); omp: `auto_compaction_start {reason:"overflow",action:"shake"}`, `auto_compaction_end {…,skipped:true,willRetry:false,errorMessage}`, `auto_compaction_start {…,action:"context-full"}`, MS ms (`isStreaming`, `isCompacting`), `auto_compaction_end {…,result,willRetry:true}`, the new run (`abort` meanwhile: `auto_compaction_end {aborted:true,willRetry:false}`, the failed run's `agent_end`, the response) |
//! | failed call | a 400 ("400 Invalid request: bad parameter") the agent does nothing about: the failed run's `agent_end` (omp `isTerminal:true`; pi 0.80.4+ then `agent_settled`), nothing more |
//! | gated TOOL JSON-ARGS | the model calls TOOL (e.g. `gated bash {"command":"echo hi"}`) and pi's `tool_call` hook asks the loaded bridge extension's gate (`policy_eval` over the bridge, the verdict awaited): blocked → `tool_execution_end` isError with the reason; allowed or no gate → the tool "runs" (`bash`: `echo X` outputs `X\n`, else `hello\n`; nothing is executed); then the answer "after: <result>" — pi 0.73.1's frames, see `agent/gate.rs` |
//! | anything else | the normal turn |
//!
//! Generated texts ("big", "exact MiB", "huge", burst padding) are the
//! pattern `abc…xyzabc…` (byte i = `b'a' + i % 26`). When the full agent_end
//! of "big"/"exact MiB" would not fit in 1 MiB it is compacted like omp does:
//! `{"type":"agent_end","messages":[],"messageCount":1}`. "big"/"huge" cap N
//! at 512 MiB; a non-numeric N makes the message an ordinary prompt.
//!
//! # Scenarios (`--scenario NAME`)
//!
//! The ready frame follows `--flavor` / `--v2` wherever one is sent.
//!
//! | name | behaviour |
//! |---|---|
//! | default | the above |
//! | idless-error | ready; set_host_tools → success `{toolNames:[]}` with id; every other command → id-less failure `unsupported: <type>` |
//! | late-failure | ready; set_host_tools → `{toolNames:[]}`; prompt → success then same-id failure "late failure"; others → success without data |
//! | stderr | "first\n", "second\n" on stderr, ready, answers set_host_tools only |
//! | invalid-json | ready, the line `{"type":"broken"`, then reads stdin until EOF |
//! | broken-startup | prints `not-json`, exits 0 |
//! | exit-early | "boom: no model configured\n" on stderr, exit 1, nothing on stdout |
//! | hanging | ready, acknowledges the first prompt, then reads stdin until EOF |
//! | grandchild | spawns the grandchild at env `OMPRPC_FAKE_GRANDCHILD` (PATH.pid / PATH.beat), ready, serves the default commands until EOF, then sleeps 30 s |
//! | ignore-term | ignores SIGTERM; ready; serves the default commands; after EOF sleeps forever (only SIGKILL ends it) |
//! | stdout-close | ready, then closes fd 1, reads stdin until EOF, exits 0 |
//! | stdin-close | ready, then closes fd 0 and sleeps 30 s with stdout open (the client's writes meet EPIPE) |
//! | silent | nothing on stdout; reads stdin until EOF |
//! | half-line | ready, then `{"type":"agent_st` without newline, exit 0 |
//! | invalid-utf8 | ready, the line `{"type":"x","v":"\xff\xfe"}` (raw bytes), then the default server |
//! | stderr-flood | ready; a thread writes 50,000,000 bytes to stderr (50,000 lines of 1000 bytes: `stderr flood line 00000000 ###…`) while the default server runs; after stdin EOF the process exits only once all of it was written |
//! | chunk-violation | forces omp + v2; after a successful negotiate_protocol response emits `{"type":"rpc_chunk","chunkId":"rpc-1","index":1,"count":2,"byteLength":1048577,"data":"e30="}` (sequence not starting at 0), then the default server |
//! | slow-start | sleeps 500 ms (env `OMPRPC_FAKE_SLOW_START_MS`: that many), then the default server |
//!
//! The grandchild (`--grandchild-loop PATH`, internal) is this binary: stdio
//! on /dev/null, pid written to PATH.pid, the current time in nanoseconds to
//! PATH.beat every 20 ms (both via write-to-temp + rename, so never seen
//! half-written). It exits by itself only after 120 s or when the files can
//! no longer be written.

#![deny(unsafe_code)]

mod agent;
mod command;
mod extension;
mod json;
mod out;
mod replay;
mod scenarios;

use std::collections::BTreeMap;
use std::io::Write;

use agent::Flavor;
use scenarios::Options;

fn main() {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();

    if args.first().map(String::as_str) == Some("--grandchild-loop") {
        let path = args.get(1).cloned().unwrap_or_default();
        std::process::exit(scenarios::grandchild_loop(&path));
    }

    if let Some(code) = extension::answer_version(&args) {
        std::process::exit(code);
    }

    dump_argv_and_env(&args);

    if let Err((message, code)) = extension::load(&args) {
        eprintln!("{message}");
        std::process::exit(code);
    }

    if let Some(code) = replay::from_args(&args) {
        std::process::exit(code);
    }

    let opts = match parse_options(&args) {
        Ok(opts) => opts,
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "omprpc-fake-agent: {e}");
            let _ = err.flush();
            std::process::exit(2);
        }
    };
    std::process::exit(scenarios::run(&opts));
}

/// A number of milliseconds from env `name` (the delays tests can set); `default` when unset or
/// not a number.
fn env_ms(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn env_flag(name: &str) -> bool {
    matches!(
        std::env::var(name).as_deref(),
        Ok("1") | Ok("true") | Ok("yes") | Ok("on")
    )
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut flavor: Option<String> = None;
    let mut scenario: Option<String> = None;
    let mut v2 = false;
    let mut protocol: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg, None),
        };
        match name {
            "--flavor" | "--scenario" | "--protocol" => {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| format!("{name} needs a value"))?
                    }
                };
                match name {
                    "--flavor" => flavor = Some(value),
                    "--protocol" => protocol = Some(value),
                    _ => scenario = Some(value),
                }
            }
            "--v2" if inline.is_none() => v2 = true,
            _ => {}
        }
        i += 1;
    }
    let flavor = flavor
        .or_else(|| std::env::var("OMPRPC_FAKE_FLAVOR").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "omp".to_owned());
    let flavor = match flavor.as_str() {
        "omp" => Flavor::Omp,
        "pi" => Flavor::Pi,
        other => return Err(format!("unknown flavor {other:?} (known: omp, pi)")),
    };
    let scenario = scenario
        .or_else(|| std::env::var("OMPRPC_FAKE_SCENARIO").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "default".to_owned());
    if !scenarios::SCENARIOS.contains(&scenario.as_str()) {
        return Err(format!(
            "unknown scenario {scenario:?} (known: {})",
            scenarios::SCENARIOS.join(", ")
        ));
    }
    let protocol = protocol.or_else(|| std::env::var("OMPRPC_FAKE_PROTOCOL").ok().filter(|s| !s.is_empty()));
    let protocol11 = match protocol.as_deref() {
        None => false,
        Some("1.1") if flavor == Flavor::Omp => true,
        Some(other) => return Err(format!("unknown protocol {other:?} (known: 1.1, omp flavour only)")),
    };
    Ok(Options {
        protocol11,
        flavor,
        scenario,
        v2: v2 || env_flag("OMPRPC_FAKE_V2"),
        v2_fail: env_flag("OMPRPC_FAKE_V2_FAIL"),
    })
}

/// Writes the arguments (after argv[0]) and the environment to the files
/// named by `OMPRPC_FAKE_ARGV_FILE` / `OMPRPC_FAKE_ENV_FILE`.
fn dump_argv_and_env(args: &[String]) {
    if let Some(path) = std::env::var_os("OMPRPC_FAKE_ARGV_FILE").filter(|p| !p.is_empty()) {
        let argv = serde_json::Value::from(args.to_vec());
        write_report(&path, &argv.to_string());
    }
    if let Some(path) = std::env::var_os("OMPRPC_FAKE_ENV_FILE").filter(|p| !p.is_empty()) {
        let env: BTreeMap<String, String> = std::env::vars_os()
            .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
            .collect();
        let text = serde_json::to_string(&env).unwrap_or_else(|_| "{}".to_owned());
        write_report(&path, &text);
    }
}

fn write_report(path: &std::ffi::OsStr, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "omprpc-fake-agent: cannot write {path:?}: {e}");
    }
}

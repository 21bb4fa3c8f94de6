//! One turn streamed through the crate's Rust API: the answer printed as it arrives, tool calls
//! shown, usage at the end. The crate docs (src/lib.rs), docs/rust.md and the README show the
//! code between the `[stream]` markers; tests/rust_api.rs runs this file against the fake agent
//! and checks that they still show it.
//!
//! `cargo run --example stream -- omp --mode rpc` (the agent's argv; `pi --mode rpc`, or the
//! fake agent: `cargo run --example stream -- target/debug/omprpc-fake-agent`).

use omprpc::{Client, StreamItem};

fn main() {
    let agent: Vec<String> = std::env::args().skip(1).collect();
    let agent = if agent.is_empty() { vec!["omp".into(), "--mode".into(), "rpc".into()] } else { agent };
    let options = serde_json::json!({ "command": agent }).to_string();
    match stream(&options, "say hello") {
        Ok(answer) if !answer.is_empty() => {}
        Ok(_) => {
            eprintln!("the turn streamed no text");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// Starts a client with `options` (start options JSON), streams `prompt`, prints the turn and
/// returns the text it printed.
pub fn stream(options: &str, prompt: &str) -> omprpc::Result<String> {
    let mut answer = String::new();
    // [stream]
    let client = Client::start(options)?;
    for item in client.stream(prompt)? {
        match item? {
            StreamItem::Text(text) => {
                print!("{text}");
                answer.push_str(&text);
            }
            StreamItem::ToolCallRequest(call) => println!("\n[{} {}]", call.tool_name, call.args),
            StreamItem::ToolCallComplete(done) => println!("[{}: {:?}]", done.tool_name, done.outcome),
            StreamItem::TurnComplete(done) => match done.usage {
                Some(usage) => println!("\n[{} tokens in, {} out]", usage.input_tokens, usage.output_tokens),
                None => println!(),
            },
            _ => {} // reasoning, retries, compactions
        }
    }
    client.close()?;
    // [/stream]
    Ok(answer)
}

//! The whole transcript (`get_messages`), one way for every binding. Under protocol v2 omp
//! serves it in pages (`get_messages_page`, a cursor per page) so no single frame holds a long
//! session; the pages are walked and checked (the total never changes, no cursor repeats, the
//! pages add up to the total). A session that is busy or changes while it is walked answers
//! `session_busy` / `stale_cursor` (or, before omp sent codes, the matching texts): then the
//! one-frame `get_messages` is asked instead, as it is under protocol v1.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Map};

use crate::error::{Error, Result, Status};

use super::{Client, Deadline};

/// The most messages one page may ask for (omp refuses more).
const PAGE_LIMIT: u64 = 256;
const FALLBACK_CODES: [&str; 2] = ["session_busy", "stale_cursor"];
const FALLBACK_ERRORS: [&str; 2] = ["Cannot page messages while the session is changing", "RPC message cursor is stale"];

struct Page {
    messages: Vec<Box<RawValue>>,
    total_messages: u64,
    next_cursor: Option<String>,
}

/// A page's members, the messages left as raw JSON (they are only passed on).
fn page(data: &str) -> std::result::Result<Page, String> {
    let members: HashMap<String, Box<RawValue>> = serde_json::from_str(data).map_err(|e| e.to_string())?;
    let member = |name: &str| members.get(name).map(|v| v.get()).ok_or_else(|| format!("no {name}"));
    Ok(Page {
        messages: serde_json::from_str(member("messages")?).map_err(|e| format!("messages: {e}"))?,
        total_messages: serde_json::from_str(member("totalMessages")?).map_err(|e| format!("totalMessages: {e}"))?,
        next_cursor: match members.get("nextCursor") {
            None => None,
            Some(v) => serde_json::from_str(v.get()).map_err(|e| format!("nextCursor: {e}"))?,
        },
    })
}

/// A refused page the one-frame `get_messages` answers instead.
fn falls_back(e: &Error) -> bool {
    let Some(f) = e.failure.as_ref().filter(|f| e.status == Status::CommandFailed && f.command == "get_messages_page") else {
        return false;
    };
    f.code.as_deref().is_some_and(|c| FALLBACK_CODES.contains(&c)) || FALLBACK_ERRORS.contains(&f.error.as_str())
}

fn pagination(message: &str) -> Error {
    Error::new(Status::Protocol, format!("RPC message pagination {message}"))
}

impl Client {
    /// `get_messages`' data, `{"messages":[…]}`: walked page by page under protocol v2 (what
    /// `request("get_messages")` does).
    pub(super) fn get_messages(&self, deadline: Deadline) -> Result<String> {
        if self.shared.state().protocol_version == 2 {
            match self.paged_messages(deadline) {
                Err(e) if falls_back(&e) => {}
                done => return done,
            }
        }
        self.command("get_messages", None, deadline)
    }

    fn paged_messages(&self, deadline: Deadline) -> Result<String> {
        walk(|cursor| {
            let mut params = Map::new();
            params.insert("limit".into(), json!(PAGE_LIMIT));
            if let Some(c) = cursor {
                params.insert("cursor".into(), json!(c));
            }
            self.command("get_messages_page", Some(&params), deadline)
        })
    }
}

/// Walks the pages `fetch(cursor)` returns (the first with no cursor) into `{"messages":[…]}`.
fn walk(mut fetch: impl FnMut(Option<&str>) -> Result<String>) -> Result<String> {
    let mut messages: Vec<Box<RawValue>> = Vec::new();
    let mut total = None;
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let data = fetch(cursor.as_deref())?;
        let page = page(&data).map_err(|e| pagination(&format!("returned a page this library cannot read ({e})")))?;
        if total.is_some_and(|t| t != page.total_messages) {
            return Err(pagination("returned an inconsistent total"));
        }
        total = Some(page.total_messages);
        messages.extend(page.messages);
        match page.next_cursor {
            None => break,
            Some(c) if !seen.insert(c.clone()) => return Err(pagination("repeated a cursor")),
            Some(c) => cursor = Some(c),
        }
    }
    if Some(messages.len() as u64) != total {
        return Err(pagination("ended before the advertised total"));
    }
    let joined: Vec<&str> = messages.iter().map(|m| m.get()).collect();
    Ok(format!("{{\"messages\":[{}]}}", joined.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CommandFailure;

    fn refused(command: &str, code: Option<&str>, error: &str) -> Error {
        let mut e = Error::new(Status::CommandFailed, error);
        e.failure = Some(Box::new(CommandFailure { command: command.into(), error: error.into(), code: code.map(str::to_string), info: None }));
        e
    }

    /// Serves `pages` (page JSON by cursor; `None` is the first) and records the cursors asked.
    fn serve(pages: &[(Option<&str>, &str)]) -> (Result<String>, Vec<Option<String>>) {
        let mut asked = Vec::new();
        let out = walk(|cursor| {
            asked.push(cursor.map(str::to_string));
            let page = pages.iter().find(|(c, _)| *c == cursor).map(|(_, p)| p.to_string());
            page.ok_or_else(|| Error::new(Status::CommandFailed, "Invalid cursor"))
        });
        (out, asked)
    }

    #[test]
    fn pages_are_walked_in_order_into_one_transcript() {
        let (out, asked) = serve(&[
            (None, r#"{"messages":[{"n":1},{"n":2}],"totalMessages":3,"nextCursor":"2"}"#),
            (Some("2"), r#"{"messages":[{"n":3}],"totalMessages":3,"nextCursor":null}"#),
        ]);
        assert_eq!(out.unwrap(), r#"{"messages":[{"n":1},{"n":2},{"n":3}]}"#);
        assert_eq!(asked, [None, Some("2".to_string())]);
        let (out, _) = serve(&[(None, r#"{"messages":[],"totalMessages":0}"#)]);
        assert_eq!(out.unwrap(), r#"{"messages":[]}"#);
    }

    #[test]
    fn pages_that_do_not_add_up_are_a_protocol_error() {
        for (pages, says) in [
            (vec![(None, r#"{"messages":[{}],"totalMessages":2,"nextCursor":"a"}"#), (Some("a"), r#"{"messages":[{}],"totalMessages":3}"#)], "inconsistent total"),
            (vec![(None, r#"{"messages":[{}],"totalMessages":3,"nextCursor":"a"}"#), (Some("a"), r#"{"messages":[{}],"totalMessages":3,"nextCursor":"a"}"#)], "repeated a cursor"),
            (vec![(None, r#"{"messages":[{}],"totalMessages":2}"#)], "ended before the advertised total"),
            (vec![(None, r#"{"messages":{},"totalMessages":2}"#)], "cannot read (messages:"),
            (vec![(None, r#"{"totalMessages":0}"#)], "cannot read (no messages)"),
        ] {
            let e = serve(&pages).0.unwrap_err();
            assert_eq!(e.status, Status::Protocol);
            assert!(e.message.contains(says), "{e} (wanted {says:?})");
        }
    }

    #[test]
    fn a_busy_or_stale_session_falls_back_and_nothing_else_does() {
        assert!(falls_back(&refused("get_messages_page", Some("session_busy"), "x")));
        assert!(falls_back(&refused("get_messages_page", Some("stale_cursor"), "x")));
        assert!(falls_back(&refused("get_messages_page", None, "RPC message cursor is stale")));
        assert!(!falls_back(&refused("get_messages_page", Some("invalid_limit"), "Invalid limit")));
        assert!(!falls_back(&refused("get_messages", Some("session_busy"), "x")));
        assert!(!falls_back(&Error::new(Status::Timeout, "Timed out")));
    }
}

//! The tool bridge's request handling (src/bridge, `decide`): parse, authenticate (token and
//! client id), then dispatch by kind. Arbitrary lines must never panic, never reach the host
//! without the exact token and client id, and always answer an id-bearing refusal with the
//! request's id; a policy_eval decided by the rules answers with the rules' verdict.
//!
//! Input: [rules selector, line...]; the token is "tok" and the client id "cli", so the
//! fuzzer (with the dictionary) reaches the authenticated paths.
#![no_main]

use libfuzzer_sys::fuzz_target;
use omprpc::fuzzing::{bridge_decide, BridgeAuth, BridgeDecision, BridgeRules};
use serde_json::Value;

fuzz_target!(|input: &[u8]| {
    let Some((&sel, line)) = input.split_first() else { return };
    let rules = match sel % 3 {
        0 => None,
        1 => Some(BridgeRules::default()),
        _ => Some(BridgeRules {
            allow: ["read".to_string()].into_iter().collect(),
            block: [("bash".to_string(), "no shell".to_string())].into_iter().collect(),
            default_block: sel & 4 != 0,
        }),
    };
    let auth = BridgeAuth { token: "tok".into(), client_id: "cli".into(), rules: rules.clone() };
    let parsed: Option<serde_json::Map<String, Value>> = match serde_json::from_slice(line) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    };
    let authentic = parsed.as_ref().is_some_and(|m| m.get("token") == Some(&Value::from("tok")) && m.get("client") == Some(&Value::from("cli")));
    let reply_json = |r: &[u8]| -> Value { serde_json::from_slice(r).expect("replies are JSON") };
    match bridge_decide(line, &auth) {
        BridgeDecision::Refuse(r) => {
            let v = reply_json(&r);
            assert!(v["error"].is_string());
            match &parsed {
                None => assert_eq!(v["id"], Value::Null),
                Some(m) => {
                    assert!(authentic, "a refusal (not unauthorized) for an unauthenticated request");
                    assert_eq!(v["id"], m.get("id").cloned().unwrap_or(Value::Null));
                }
            }
        }
        BridgeDecision::Unauthorized(r) => {
            assert!(parsed.is_some() && !authentic, "an authentic request was called unauthorized");
            let v = reply_json(&r);
            assert_eq!(v["error"], "unauthorized");
            assert_eq!(v["id"], parsed.unwrap().get("id").cloned().unwrap_or(Value::Null));
        }
        d => {
            // Everything past here reaches the host or the rules: only with the exact secrets.
            assert!(authentic, "an unauthenticated request got through: {d:?}");
            let m = parsed.unwrap();
            assert!(m["id"].is_string(), "a request without a string id got through");
            let kind = m["kind"].as_str();
            match d {
                BridgeDecision::Tool(f) => {
                    assert_eq!(kind, Some("tool"));
                    assert_eq!(f, m);
                }
                BridgeDecision::Cancel { target, reason } => {
                    assert_eq!(kind, Some("cancel"));
                    assert_eq!(target.as_deref(), m.get("target").and_then(Value::as_str));
                    assert_eq!(reason.as_deref(), m.get("reason").and_then(Value::as_str));
                }
                BridgeDecision::PolicyEval(f) => {
                    assert_eq!(kind, Some("policy_eval"));
                    assert!(rules.is_none(), "rules configured, yet the host was asked");
                    assert_eq!(f, m);
                }
                BridgeDecision::Verdict { tool, block, reason, reply, .. } => {
                    assert_eq!(kind, Some("policy_eval"));
                    let r = rules.expect("a verdict without rules");
                    assert_eq!(tool, m.get("tool").and_then(Value::as_str).unwrap_or(""));
                    assert_eq!((block, reason.clone()), r.verdict(&tool));
                    let v = reply_json(&reply);
                    assert_eq!(v["id"], m["id"]);
                    assert_eq!(v["verdict"]["block"], block);
                    assert_eq!(v["verdict"]["reason"], reason);
                }
                BridgeDecision::Hello { frame, reply } => {
                    assert_eq!(kind, Some("hello"));
                    assert_eq!(frame, m);
                    let v = reply_json(&reply);
                    assert_eq!(v["id"], m["id"]);
                    assert_eq!(v["hello"]["ok"], true);
                }
                BridgeDecision::Refuse(_) | BridgeDecision::Unauthorized(_) => unreachable!(),
            }
        }
    }
});

//! Times `prompt_and_wait` and event polling over the fake agent's burst (a quick check;
//! `make bench` measures properly).
use std::time::{Duration, Instant};
fn main() {
    let fake = std::env::args().nth(1).expect("fake agent path");
    let n: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(100_000);
    let c = omprpc::Client::start(&serde_json::json!({"command": [fake], "max_event_history": null}).to_string()).unwrap();
    std::thread::scope(|s| {
        // A host drains the event queue while it waits for the turn.
        let c = &c;
        let drain = s.spawn(move || {
            let mut got = 0usize;
            while let Ok(evs) = c.next_events(4096, Some(Instant::now() + Duration::from_millis(500))) {
                got += evs.len();
            }
            got
        });
        let t0 = Instant::now();
        let turn = c.prompt_and_wait(&format!("burst {n}"), None, None).unwrap();
        let dt = t0.elapsed();
        println!("prompt_and_wait: {n} events in {:?} = {:.0} events/s, turn {} bytes", dt, n as f64 / dt.as_secs_f64(), turn.len());
        drop(turn);
        println!("drained {}", drain.join().unwrap());
    });
    let t0 = Instant::now();
    c.prompt("prompt", &format!("burst {n}"), None, None).unwrap();
    let mut got = 0usize;
    loop {
        let evs = c.next_events(4096, None).unwrap();
        got += evs.len();
        if evs.iter().any(|e| e.starts_with(b"{\"type\":\"agent_end\"")) { break; }
    }
    let dt = t0.elapsed();
    println!("next_events: {got} events in {:?} = {:.0} events/s", dt, got as f64 / dt.as_secs_f64());
}

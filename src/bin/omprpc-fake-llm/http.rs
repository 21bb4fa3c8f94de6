//! Minimal HTTP/1.1: one request per connection (Content-Length or chunked body), every
//! response with `Connection: close`.

use std::io::{self, Read, Write};
use std::net::TcpStream;

use serde_json::Value;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 256 * 1024 * 1024;

pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    /// `x-stainless-retry-count` (the OpenAI and Anthropic SDKs number their own retries of
    /// one call with it; absent or 0 on the call's first request).
    pub sdk_retry: u32,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads one request; `None` when the peer closed before sending anything.
pub fn read_request(conn: &mut TcpStream) -> io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = find(&buf, b"\r\n\r\n") {
            break p;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(bad("connection closed inside the request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut rest = buf[head_end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    let mut expect_continue = false;
    let mut sdk_retry = 0;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else { continue };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        match k.as_str() {
            "content-length" => content_length = Some(v.parse().map_err(|_| bad("bad Content-Length"))?),
            "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
            "expect" => expect_continue = v.eq_ignore_ascii_case("100-continue"),
            "x-stainless-retry-count" => sdk_retry = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    if expect_continue {
        conn.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = if chunked {
        read_chunked(conn, rest)?
    } else {
        let len = content_length.unwrap_or(0);
        if len > MAX_BODY {
            return Err(bad("body too large"));
        }
        while rest.len() < len {
            let n = conn.read(&mut chunk)?;
            if n == 0 {
                return Err(bad("connection closed inside the body"));
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(len);
        rest
    };
    Ok(Some(Request { method, path, body, sdk_retry }))
}

fn read_chunked(conn: &mut TcpStream, mut buf: Vec<u8>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut fill = |buf: &mut Vec<u8>, conn: &mut TcpStream| -> io::Result<()> {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Err(bad("connection closed inside a chunked body"));
        }
        buf.extend_from_slice(&chunk[..n]);
        Ok(())
    };
    loop {
        let line_end = loop {
            if let Some(p) = find(&buf, b"\r\n") {
                break p;
            }
            fill(&mut buf, conn)?;
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).map_err(|_| bad("bad chunk size"))?;
        buf.drain(..line_end + 2);
        if size == 0 {
            return Ok(body); // trailers, if any, are ignored
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("body too large"));
        }
        while buf.len() < size + 2 {
            fill(&mut buf, conn)?;
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

pub fn respond_json(conn: &mut TcpStream, status: u16, body: &Value) -> io::Result<()> {
    respond_json_with(conn, status, &[], body)
}

/// [`respond_json`] with extra headers (`(name, value)`).
pub fn respond_json_with(conn: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &Value) -> io::Result<()> {
    let text = body.to_string();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        reason(status),
        text.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(text.as_bytes())?;
    conn.flush()
}

/// Headers of an SSE stream; the body ends when the connection closes.
pub fn start_sse(conn: &mut TcpStream) -> io::Result<()> {
    conn.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )?;
    conn.flush()
}

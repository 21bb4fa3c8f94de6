//! Multimodal prompts: content blocks (text, images from files or data URIs, text files) into
//! the agent's `message` plus `images`. Image types are checked from the bytes (or the data
//! URI's declared type), text files must be UTF-8, and an unknown block type is an error that
//! names it — nothing is dropped silently.

use std::path::Path;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::base64::{decode_base64_strict, encode as base64_encode};

/// Files inlined into a prompt larger than this are refused (the agent's frame limit is 1 MiB).
const MAX_TEXT_FILE: usize = 512 * 1024;
const MAX_IMAGE: usize = 20 * 1024 * 1024;

const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The image type the bytes begin with.
pub fn sniff_image(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// `data:<type>;base64,<data>` → (type, bytes).
fn data_uri(uri: &str) -> Result<(String, Vec<u8>)> {
    let rest = uri.strip_prefix("data:").ok_or_else(|| Error::invalid("a data URI must start with \"data:\""))?;
    let (meta, data) = rest.split_once(',').ok_or_else(|| Error::invalid("a data URI needs a ',' before its data"))?;
    let mime = meta.strip_suffix(";base64").ok_or_else(|| Error::invalid("only base64 data URIs are supported (\";base64,\")"))?;
    let mut bytes = Vec::new();
    decode_base64_strict(data.as_bytes(), &mut bytes).map_err(|_| Error::invalid("the data URI's data is not valid base64"))?;
    Ok((mime.to_ascii_lowercase(), bytes))
}

fn image(block: &Value) -> Result<Value> {
    let (mime, bytes) = if let Some(p) = block["path"].as_str() {
        let bytes = std::fs::read(p).map_err(|e| Error::invalid(format!("image {p}: {e}")))?;
        let mime = sniff_image(&bytes).ok_or_else(|| Error::invalid(format!("image {p} is not a PNG, JPEG, GIF or WebP file")))?;
        (mime.to_string(), bytes)
    } else if let Some(uri) = block["data_uri"].as_str().or(block["url"].as_str()) {
        let (declared, bytes) = data_uri(uri)?;
        let actual = sniff_image(&bytes).ok_or_else(|| Error::invalid("the data URI's data is not a PNG, JPEG, GIF or WebP image"))?;
        if declared != actual {
            return Err(Error::invalid(format!("the data URI says {declared} but the data is {actual}")));
        }
        (declared, bytes)
    } else {
        return Err(Error::invalid("an image block needs \"path\" or \"data_uri\""));
    };
    if !IMAGE_TYPES.contains(&mime.as_str()) || bytes.len() > MAX_IMAGE {
        return Err(Error::invalid(format!("image of type {mime} and {} bytes is not accepted", bytes.len())));
    }
    Ok(json!({"type": "image", "mimeType": mime, "data": base64_encode(&bytes)}))
}

fn text_file(block: &Value) -> Result<String> {
    let (name, bytes) = if let Some(p) = block["path"].as_str() {
        let name = Path::new(p).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.to_string());
        (block["name"].as_str().map(str::to_string).unwrap_or(name), std::fs::read(p).map_err(|e| Error::invalid(format!("file {p}: {e}")))?)
    } else if let Some(uri) = block["data_uri"].as_str() {
        let (mime, bytes) = data_uri(uri)?;
        let textual = mime.starts_with("text/") || ["application/json", "application/yaml", "application/x-yaml", "application/xml"].contains(&mime.as_str());
        if !textual {
            return Err(Error::invalid(format!("a file block of type {mime} cannot be inlined as text")));
        }
        (block["name"].as_str().unwrap_or("file").to_string(), bytes)
    } else if let Some(text) = block["text"].as_str() {
        (block["name"].as_str().unwrap_or("file").to_string(), text.as_bytes().to_vec())
    } else {
        return Err(Error::invalid("a file block needs \"path\", \"data_uri\" or \"text\""));
    };
    if bytes.len() > MAX_TEXT_FILE {
        return Err(Error::invalid(format!("file {name} has {} bytes; at most {MAX_TEXT_FILE} are inlined", bytes.len())));
    }
    let text = String::from_utf8(bytes).map_err(|_| Error::invalid(format!("file {name} is not UTF-8 text")))?;
    Ok(format!("<file name=\"{name}\">\n{text}\n</file>"))
}

/// `[{"type":"text","text"}, {"type":"image","path"|"data_uri"}, {"type":"file","path"|"data_uri"|"text","name"?}]`
/// → `{"message": texts and files joined by blank lines, "images": [...]}`.
pub fn build(blocks: &Value) -> Result<Value> {
    let list = blocks.as_array().ok_or_else(|| Error::invalid_json("prompt content must be a JSON array of blocks"))?;
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let at = |e: Error| e.context(&format!("content block {i}: "));
        match b["type"].as_str() {
            Some("text" | "input_text") => parts.push(b["text"].as_str().ok_or_else(|| at(Error::invalid("a text block needs a string \"text\"")))?.to_string()),
            Some("image" | "input_image") => images.push(image(b).map_err(at)?),
            Some("file" | "input_file") => parts.push(text_file(b).map_err(at)?),
            other => return Err(at(Error::invalid(format!("unknown content block type {other:?} (text, image or file)")))),
        }
    }
    Ok(json!({"message": parts.join("\n\n"), "images": images}))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn builds_message_and_images() {
        let dir = std::env::temp_dir().join(format!("omprpc-prompt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("a.png");
        std::fs::write(&png, PNG).unwrap();
        let txt = dir.join("notes.md");
        std::fs::write(&txt, "# hi").unwrap();
        let uri = format!("data:image/png;base64,{}", base64_encode(PNG));
        let v = build(&json!([{"type": "text", "text": "look"}, {"type": "image", "path": png}, {"type": "image", "data_uri": uri},
                              {"type": "file", "path": txt}])).unwrap();
        assert_eq!(v["message"], "look\n\n<file name=\"notes.md\">\n# hi\n</file>");
        assert_eq!(v["images"].as_array().unwrap().len(), 2);
        assert_eq!(v["images"][0]["mimeType"], "image/png");
        assert_eq!(v["images"][0]["data"], base64_encode(PNG));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        let bad = [
            json!([{"type": "video", "path": "x"}]),
            json!([{"type": "image", "data_uri": format!("data:image/jpeg;base64,{}", base64_encode(PNG))}]),
            json!([{"type": "image", "data_uri": "data:image/png,raw"}]),
            json!([{"type": "image", "data_uri": "data:image/png;base64,!!!"}]),
            json!([{"type": "image", "path": "/nonexistent.png"}]),
            json!([{"type": "file", "data_uri": format!("data:application/pdf;base64,{}", base64_encode(b"%PDF"))}]),
            json!([{"type": "file", "text": "x", "name": "a"}, {"type": "file"}]),
            json!({"type": "text"}),
        ];
        for b in bad {
            assert!(build(&b).is_err(), "{b}");
        }
        assert!(build(&json!([{"type": "video"}])).unwrap_err().message.contains("\"video\""));
    }
}

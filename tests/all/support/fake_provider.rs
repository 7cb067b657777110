//! A fake model provider on 127.0.0.1 that speaks the real wire formats: HTTP/1.1 with chunked
//! transfer encoding carrying server-sent events, exactly as OpenAI Chat Completions and
//! Anthropic Messages stream them. Each request takes the next scripted reply and is recorded
//! (path, headers, JSON body) so tests can assert what Splice sent. Requests sent at once (a
//! design plan's parallel tasks) are matched to replies by content with [`Reply::When`].
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with these SSE events (each already framed, e.g. `data: {...}\n\n`).
    Sse(Vec<String>),
    /// A plain HTTP error with extra headers and a body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200, these events, then the connection closes without ending the chunked body.
    Drop(Vec<String>),
    /// 200, these events, then nothing for a long time (the connection stays open).
    Hang(Vec<String>),
    /// Read the request and never answer at all.
    Silent,
    /// 200, these events with a pause before each, then the end of the stream.
    Slow(Vec<String>, Duration),
    /// `reply`, for the first request whose body holds `needle` (the queue is searched in
    /// order; a reply without a condition answers any request). With `after`, the answer waits
    /// until a request holding that text has arrived too: two requests that must be in flight at
    /// the same time (after 20 s without it, a 400 answers instead).
    When {
        needle: String,
        after: Option<String>,
        reply: Box<Reply>,
    },
}

impl Reply {
    /// This reply, for the first request whose body holds `needle`.
    pub fn when(needle: &str, reply: Reply) -> Reply {
        Reply::When {
            needle: needle.to_string(),
            after: None,
            reply: Box::new(reply),
        }
    }

    /// This reply, for the first request holding `needle`, once one holding `after` arrived.
    pub fn when_after(needle: &str, after: &str, reply: Reply) -> Reply {
        Reply::When {
            needle: needle.to_string(),
            after: Some(after.to_string()),
            reply: Box::new(reply),
        }
    }

    fn answers(&self, body: &str) -> bool {
        match self {
            Reply::When { needle, .. } => body.contains(needle.as_str()),
            _ => true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct FakeProvider {
    pub url: String,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeProvider {
    pub fn start(replies: Vec<Reply>) -> FakeProvider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (queue, log) = (replies.clone(), requests.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (queue, log) = (queue.clone(), log.clone());
                thread::spawn(move || serve(stream, &queue, &log));
            }
        });
        FakeProvider {
            url,
            replies,
            requests,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    pub fn remaining(&self) -> usize {
        self.replies.lock().map(|r| r.len()).unwrap_or(0)
    }
}

fn serve(mut stream: TcpStream, queue: &Mutex<VecDeque<Reply>>, log: &Mutex<Vec<Recorded>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&stream) else {
        return;
    };
    let body = request.body.to_string();
    if let Ok(mut log) = log.lock() {
        log.push(request);
    }
    let reply = queue
        .lock()
        .ok()
        .and_then(|mut q| {
            let at = q.iter().position(|r| r.answers(&body))?;
            q.remove(at)
        })
        .unwrap_or(Reply::Status {
            code: 500,
            headers: vec![],
            body: "{\"error\":{\"message\":\"fake provider: no scripted reply left\"}}".into(),
        });
    answer(&mut stream, reply, log);
    let _ = stream.flush();
}

fn answer(stream: &mut TcpStream, reply: Reply, log: &Mutex<Vec<Recorded>>) {
    match reply {
        Reply::When { after, reply, .. } => {
            if let Some(after) = after {
                let seen = || {
                    log.lock().is_ok_and(|l| {
                        l.iter()
                            .any(|r| r.body.to_string().contains(after.as_str()))
                    })
                };
                let deadline = std::time::Instant::now() + Duration::from_secs(20);
                while !seen() {
                    if std::time::Instant::now() > deadline {
                        // Not in flight together: a failure no retry hides.
                        let body = format!(
                            "{{\"error\":{{\"message\":\"fake provider: no request holding {after:?} came\"}}}}"
                        );
                        let refusal = Reply::Status {
                            code: 400,
                            headers: vec![],
                            body,
                        };
                        return answer(stream, refusal, log);
                    }
                    thread::sleep(Duration::from_millis(20));
                }
            }
            answer(stream, *reply, log);
        }
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Reply::Sse(events) => {
            write_sse_head(stream);
            for event in events {
                write_chunk(stream, &event);
            }
            let _ = stream.write_all(b"0\r\n\r\n");
        }
        Reply::Silent => thread::sleep(Duration::from_secs(60)),
        Reply::Slow(events, pause) => {
            write_sse_head(stream);
            for event in events {
                thread::sleep(pause);
                write_chunk(stream, &event);
            }
            let _ = stream.write_all(b"0\r\n\r\n");
        }
        Reply::Hang(events) => {
            write_sse_head(stream);
            for event in events {
                write_chunk(stream, &event);
            }
            thread::sleep(Duration::from_secs(60));
        }
        Reply::Drop(events) => {
            write_sse_head(stream);
            for event in events {
                write_chunk(stream, &event);
            }
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
    let _ = stream.flush();
}

fn write_sse_head(stream: &mut TcpStream) {
    let _ = stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    );
}

fn write_chunk(stream: &mut TcpStream, data: &str) {
    let _ = stream.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes());
    let _ = stream.flush();
}

fn read_request(stream: &TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            if k.eq_ignore_ascii_case("content-length") {
                length = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Frame a JSON value as one SSE `data:` event.
pub fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// Builders for OpenAI Chat Completions stream chunks.
pub mod openai {
    use super::*;

    pub fn chunk(delta: Value, finish: Option<&str>) -> String {
        data(
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    }

    pub fn text(piece: &str) -> String {
        chunk(json!({"content": piece}), None)
    }

    pub fn tool_start(index: u64, id: &str, name: &str) -> String {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    }

    pub fn tool_args(index: u64, piece: &str) -> String {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            None,
        )
    }

    pub fn finish(reason: &str) -> String {
        chunk(json!({}), Some(reason))
    }

    pub fn usage(prompt: u64, completion: u64, cached: u64) -> String {
        data(
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached}}}),
        )
    }

    pub fn done() -> String {
        "data: [DONE]\n\n".to_string()
    }

    /// A whole answer in the given text pieces.
    pub fn answer(pieces: &[&str]) -> Reply {
        let mut events: Vec<String> = pieces.iter().map(|p| text(p)).collect();
        events.push(finish("stop"));
        events.push(usage(100, 20, 0));
        events.push(done());
        Reply::Sse(events)
    }

    /// One tool call whose JSON arguments arrive split in `parts`.
    pub fn tool_call(id: &str, name: &str, parts: &[&str]) -> Reply {
        let mut events = vec![tool_start(0, id, name)];
        events.extend(parts.iter().map(|p| tool_args(0, p)));
        events.push(finish("tool_calls"));
        events.push(usage(100, 20, 0));
        events.push(done());
        Reply::Sse(events)
    }

    /// A tool call whose JSON arguments arrive in two pieces (split on a character boundary),
    /// as providers stream them.
    pub fn call_json(id: &str, name: &str, args: Value) -> Reply {
        let text = args.to_string();
        let mut middle = text.len() / 2;
        while !text.is_char_boundary(middle) {
            middle += 1;
        }
        let (a, b) = text.split_at(middle);
        tool_call(id, name, &[a, b])
    }
}

/// Builders for Anthropic Messages stream events.
pub mod anthropic {
    use super::*;

    pub fn event(name: &str, value: Value) -> String {
        format!("event: {name}\ndata: {value}\n\n")
    }

    pub fn message_start(input_tokens: u64) -> String {
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "content": [], "model": "claude-test",
                "usage": {"input_tokens": input_tokens, "cache_read_input_tokens": 10,
                    "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        )
    }

    pub fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
        let mut events = vec![event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
        )];
        for piece in pieces {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        events
    }

    pub fn tool_block(index: u64, id: &str, name: &str, parts: &[&str]) -> Vec<String> {
        let mut events = vec![event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        )];
        for part in parts {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part}}),
            ));
        }
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        events
    }

    pub fn finish(stop_reason: &str, output_tokens: u64) -> Vec<String> {
        vec![
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                    "usage": {"output_tokens": output_tokens}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
    }

    pub fn answer(pieces: &[&str]) -> Reply {
        let mut events = vec![message_start(50)];
        events.extend(text_block(0, pieces));
        events.extend(finish("end_turn", 12));
        Reply::Sse(events)
    }

    pub fn tool_call(id: &str, name: &str, parts: &[&str]) -> Reply {
        let mut events = vec![message_start(50)];
        events.extend(tool_block(0, id, name, parts));
        events.extend(finish("tool_use", 12));
        Reply::Sse(events)
    }
}

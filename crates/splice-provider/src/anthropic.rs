//! Anthropic Messages wire format (`/v1/messages`, `stream: true`).

use serde_json::{Value, json};

use super::openai::preview;
use super::sse::SseReader;
use super::{
    Message, ModelRequest, ModelResponse, ProviderError, StreamEvent, TokenUsage, ToolCallRequest,
};

fn image_block(image: &splice_protocol::input::Image) -> Value {
    json!({"type": "image", "source": {
        "type": "base64", "media_type": image.media_type, "data": image.data
    }})
}

pub fn request_body(api_model: &str, request: &ModelRequest<'_>) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for message in request.messages {
        match message {
            Message::User { text, images } => {
                let mut content: Vec<Value> = images.iter().map(image_block).collect();
                content.push(json!({"type": "text", "text": text}));
                messages.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant { text, tool_calls } => {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                if text.is_empty() && tool_calls.is_empty() {
                    // The API refuses a turn without blocks; an empty answer still took a turn.
                    content.push(json!({"type": "text", "text": "(no answer)"}));
                }
                for call in tool_calls {
                    let input: Value =
                        serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
                    content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                images,
            } => {
                // An empty tool result is sent as words: empty text blocks are refused.
                let content = if content.is_empty() {
                    "(no output)"
                } else {
                    content.as_str()
                };
                // Images travel inside the tool result, as blocks after its text.
                let content = if images.is_empty() {
                    json!(content)
                } else {
                    let mut blocks = vec![json!({"type": "text", "text": content})];
                    blocks.extend(images.iter().map(image_block));
                    Value::Array(blocks)
                };
                let block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error});
                // Consecutive tool results travel together in one user turn.
                match messages.last_mut() {
                    Some(last) if is_tool_result_turn(last) => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
        .collect();
    let mut system = Vec::new();
    if !request.system.is_empty() {
        system.push(json!({"type": "text", "text": request.system}));
    }
    place_cache_breakpoints(&mut tools, &mut system, &mut messages);
    let mut body = json!({
        "model": api_model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": messages,
        "stream": true,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Most `cache_control` breakpoints the API accepts in one request.
#[cfg(test)]
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// Prompt caching: a breakpoint on the stable prefix (the system prompt, which the cache
/// orders after the tools, or the last tool when there is no system prompt), one on the newest
/// message's last block (what the next request reads back), and one where the previous request
/// ended (the message before the latest assistant turn), so a turn that added many blocks
/// still finds the previous request's cache entry within the API's 20-block lookback. Three of
/// the four allowed; each prefix must be byte-identical from request to request to be read.
fn place_cache_breakpoints(tools: &mut [Value], system: &mut [Value], messages: &mut [Value]) {
    let mark = |block: Option<&mut Value>| {
        if let Some(block) = block.and_then(Value::as_object_mut) {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    };
    match system.last_mut() {
        Some(block) => mark(Some(block)),
        None => mark(tools.last_mut()),
    }
    let newest = messages.len().checked_sub(1);
    let previous_end = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .and_then(|assistant| assistant.checked_sub(1));
    for index in [previous_end, newest].into_iter().flatten() {
        let blocks = messages[index]
            .get_mut("content")
            .and_then(Value::as_array_mut);
        mark(blocks.and_then(|blocks| blocks.last_mut()));
    }
}

fn is_tool_result_turn(message: &Value) -> bool {
    message["role"] == "user"
        && message["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().all(|b| b["type"] == "tool_result"))
}

/// A whole `message` body restated as the events it would have streamed as.
pub fn as_stream(body: &Value) -> Vec<String> {
    if body["type"] == "error" {
        return vec![body.to_string()];
    }
    let mut events = vec![json!({"type": "message_start",
        "message": {"usage": body.get("usage").cloned().unwrap_or_else(|| json!({}))}})];
    let blocks = body["content"].as_array().cloned().unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta",
                    "partial_json": block.get("input").map(Value::to_string).unwrap_or_default()}),
            ),
            Some("thinking") => (
                json!({"type": "thinking", "thinking": ""}),
                json!({"type": "thinking_delta", "thinking": block["thinking"]}),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": body.get("stop_reason").cloned().unwrap_or(Value::Null)}}));
    events.push(json!({"type": "message_stop"}));
    events.iter().map(Value::to_string).collect()
}

pub async fn read_stream(
    mut reader: SseReader,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ModelResponse, ProviderError> {
    let mut result = ModelResponse::default();
    let mut usage = TokenUsage::default();
    let mut saw_usage = false;
    // Content blocks by index: the tool call each tool_use block is building, if any.
    let mut blocks: Vec<(u64, Option<ToolCallRequest>)> = Vec::new();
    let mut stopped = false;
    while let Some(event) = reader.next().await? {
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| reader.error(format!("malformed event ({e}): {}", preview(data))))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    saw_usage = true;
                    merge_usage(&mut usage, u);
                }
            }
            "content_block_start" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = &value["content_block"];
                let call = if block["type"] == "tool_use" {
                    let id = block["id"].as_str().unwrap_or_default().to_string();
                    let name = block["name"].as_str().unwrap_or_default().to_string();
                    on_event(StreamEvent::ToolCallStart {
                        index: blocks.iter().filter(|(_, call)| call.is_some()).count(),
                        id: id.clone(),
                        name: name.clone(),
                    });
                    Some(ToolCallRequest {
                        id,
                        name,
                        arguments: String::new(),
                    })
                } else {
                    None
                };
                blocks.push((index, call));
            }
            "content_block_delta" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = &value["delta"];
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        result.text.push_str(text);
                        on_event(StreamEvent::Text(text.to_string()));
                    }
                    "thinking_delta" => {
                        let text = delta["thinking"].as_str().unwrap_or_default();
                        on_event(StreamEvent::Reasoning(text.to_string()));
                    }
                    "input_json_delta" => {
                        let part = delta["partial_json"].as_str().unwrap_or_default();
                        let (position, call) = blocks
                            .iter_mut()
                            .filter_map(|(i, call)| Some((*i, call.as_mut()?)))
                            .enumerate()
                            .find(|(_, (i, _))| *i == index)
                            .map(|(position, (_, call))| (position, call))
                            .ok_or_else(|| {
                                reader.error("input_json_delta for a block that is not a tool_use")
                            })?;
                        call.arguments.push_str(part);
                        if !part.is_empty() {
                            on_event(StreamEvent::ToolCallDelta {
                                index: position,
                                delta: part.to_string(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    result.stop_reason = Some(reason.to_string());
                }
                if let Some(u) = value.get("usage") {
                    saw_usage = true;
                    merge_usage(&mut usage, u);
                }
            }
            "message_stop" => {
                stopped = true;
                break;
            }
            "error" => {
                let message = value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                return Err(reader.error(message.to_string()));
            }
            _ => {}
        }
    }
    if !stopped {
        return Err(reader.error("connection closed before the response was complete"));
    }
    if saw_usage {
        result.usage = Some(usage);
    }
    result.tool_calls = blocks
        .into_iter()
        .filter_map(|(_, call)| call)
        .map(|mut call| {
            // A tool_use with no input streams no delta at all: its input is `{}`.
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".to_string();
            }
            call
        })
        .collect();
    Ok(result)
}

/// Anthropic reports input split into uncached, cache-read and cache-write parts; Splice's
/// `promptTokens` is their sum so it means the same for every provider.
fn merge_usage(usage: &mut TokenUsage, reported: &Value) {
    let number = |key: &str| reported.get(key).and_then(Value::as_u64);
    if let Some(input) = number("input_tokens") {
        let read = number("cache_read_input_tokens").unwrap_or(0);
        let write = number("cache_creation_input_tokens").unwrap_or(0);
        usage.prompt_tokens = input + read + write;
        if reported.get("cache_read_input_tokens").is_some() {
            usage.cached_input_tokens = Some(read);
        }
        if reported.get("cache_creation_input_tokens").is_some() {
            usage.cache_write_tokens = Some(write);
        }
    }
    if let Some(output) = number("output_tokens") {
        usage.completion_tokens = output;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_answers_and_outputs_are_never_empty_blocks() {
        let messages = vec![
            Message::User {
                text: "go".into(),
                images: vec![],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![],
            },
            Message::User {
                text: "again".into(),
                images: vec![],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "a".into(),
                    name: splice_protocol::Builtin::RunCommand.as_str().into(),
                    arguments: "{\"command\":\"true\"}".into(),
                }],
            },
            Message::ToolResult {
                call_id: "a".into(),
                content: String::new(),
                is_error: false,
                images: Vec::new(),
            },
        ];
        let body = request_body(
            "claude",
            &ModelRequest {
                system: "sys",
                messages: &messages,
                tools: &[],
                max_tokens: 10,
            },
        );
        assert_eq!(body["messages"][1]["content"][0]["text"], "(no answer)");
        assert_eq!(body["messages"][4]["content"][0]["content"], "(no output)");
    }

    #[test]
    fn tool_results_share_one_user_turn() {
        let messages = vec![
            Message::User {
                text: "go".into(),
                images: vec![],
            },
            Message::Assistant {
                text: "ok".into(),
                tool_calls: vec![
                    ToolCallRequest {
                        id: "a".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"x\"}".into(),
                    },
                    ToolCallRequest {
                        id: "b".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"y\"}".into(),
                    },
                ],
            },
            Message::ToolResult {
                call_id: "a".into(),
                content: "1".into(),
                is_error: false,
                images: Vec::new(),
            },
            Message::ToolResult {
                call_id: "b".into(),
                content: "2".into(),
                is_error: true,
                images: Vec::new(),
            },
        ];
        let body = request_body(
            "claude",
            &ModelRequest {
                system: "sys",
                messages: &messages,
                tools: &[],
                max_tokens: 10,
            },
        );
        let turns = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[1]["content"][1]["input"], json!({"path": "x"}));
        assert_eq!(turns[2]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(turns[2]["content"][1]["is_error"], true);
        assert_eq!(body["system"][0]["text"], "sys");
    }

    /// An MCP tool's image goes inside its `tool_result`, after the result's text.
    #[test]
    fn tool_result_images_are_image_blocks_inside_the_tool_result() {
        let messages = vec![
            Message::User {
                text: "draw".into(),
                images: vec![],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "a".into(),
                    name: "mcp__everything__get-tiny-image".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::ToolResult {
                call_id: "a".into(),
                content: "A tiny image".into(),
                is_error: false,
                images: vec![splice_protocol::input::Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0K".into(),
                }],
            },
        ];
        let body = request_body(
            "claude",
            &ModelRequest {
                system: "sys",
                messages: &messages,
                tools: &[],
                max_tokens: 10,
            },
        );
        let result = &body["messages"][2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(
            result["content"][0],
            json!({"type": "text", "text": "A tiny image"})
        );
        assert_eq!(
            result["content"][1],
            json!({"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": "iVBORw0K"
            }})
        );
    }

    fn tool(name: &str) -> crate::ToolSpec {
        crate::ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }

    /// The paths of every block that carries a `cache_control` breakpoint.
    fn breakpoints(body: &Value) -> Vec<String> {
        fn walk(value: &Value, path: String, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if map.contains_key("cache_control") {
                        found.push(path.clone());
                    }
                    for (key, child) in map {
                        walk(child, format!("{path}.{key}"), found);
                    }
                }
                Value::Array(items) => {
                    for (i, child) in items.iter().enumerate() {
                        walk(child, format!("{path}[{i}]"), found);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(body, String::new(), &mut found);
        found.sort();
        found
    }

    fn conversation(turns: usize) -> Vec<Message> {
        let mut messages = vec![Message::User {
            text: "go".into(),
            images: vec![],
        }];
        for turn in 0..turns {
            messages.push(Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: format!("t{turn}"),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"x\"}".into(),
                }],
            });
            messages.push(Message::ToolResult {
                call_id: format!("t{turn}"),
                content: "text".into(),
                is_error: false,
                images: Vec::new(),
            });
        }
        messages
    }

    #[test]
    fn breakpoints_mark_the_prefix_the_newest_message_and_where_the_last_request_ended() {
        let tools = [tool("read_file"), tool("write_file")];
        let request = |system: &'static str, messages: &[Message]| {
            request_body(
                "claude",
                &ModelRequest {
                    system,
                    messages,
                    tools: &tools,
                    max_tokens: 10,
                },
            )
        };
        // The first request: the system prompt and the only message.
        let first = request("sys", &conversation(0));
        assert_eq!(
            breakpoints(&first),
            [".messages[0].content[0]", ".system[0]"]
        );
        // Later: where the previous request ended (message 2), and the newest (message 4).
        let later = request("sys", &conversation(2));
        assert_eq!(
            breakpoints(&later),
            [
                ".messages[2].content[0]",
                ".messages[4].content[0]",
                ".system[0]"
            ]
        );
        // Without a system prompt the prefix mark goes on the last tool.
        let bare = request("", &conversation(5));
        assert_eq!(bare["system"], json!([]));
        assert!(breakpoints(&bare).contains(&".tools[1]".to_string()));
        for body in [first, later, bare] {
            assert!(breakpoints(&body).len() <= MAX_CACHE_BREAKPOINTS);
        }
    }

    /// What the cache reads back is a byte-identical prefix: the next request repeats the
    /// previous one's messages exactly, only its breakpoints move.
    #[test]
    fn the_next_request_repeats_the_previous_prefix_byte_for_byte() {
        let tools = [tool("read_file")];
        let body = |messages: &[Message]| {
            request_body(
                "claude",
                &ModelRequest {
                    system: "sys",
                    messages,
                    tools: &tools,
                    max_tokens: 10,
                },
            )
        };
        let strip = |mut value: Value| {
            fn remove(value: &mut Value) {
                match value {
                    Value::Object(map) => {
                        map.remove("cache_control");
                        map.values_mut().for_each(remove);
                    }
                    Value::Array(items) => items.iter_mut().for_each(remove),
                    _ => {}
                }
            }
            remove(&mut value);
            value
        };
        let (before, after) = (strip(body(&conversation(2))), strip(body(&conversation(3))));
        assert_eq!(before["system"], after["system"]);
        assert_eq!(before["tools"], after["tools"]);
        let (old, new) = (
            before["messages"].as_array().cloned().unwrap_or_default(),
            after["messages"].as_array().cloned().unwrap_or_default(),
        );
        assert_eq!(old[..], new[..old.len()]);
    }
}

//! OpenAI Chat Completions wire format (`/v1/chat/completions`, `stream: true`).

use std::borrow::Cow;

use serde_json::{Value, json};

use super::sse::SseReader;
use splice_protocol::input::Image;

use super::{
    Message, ModelRequest, ModelResponse, ProviderError, StreamEvent, TokenUsage, ToolCallRequest,
};

mod body;

pub(crate) use body::ChatRequest;
use body::{
    CallFunction, CallOut, ChatMessage, FunctionSpec, FunctionTool, ImageUrl, Kind, Part,
    StreamOptions, UserContent,
};

fn image_part<'a>(image: &Image) -> Part<'a> {
    Part::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{};base64,{}", image.media_type, image.data),
        },
    }
}

/// Chat Completions' `tool` messages carry text only: the images of a run of tool results
/// follow it in one user message (the API allows a user turn there, and a user message is
/// where it takes images), each introduced by the call it came from.
fn tool_images_message<'a>(pending: &mut Vec<(&str, &[Image])>) -> Option<ChatMessage<'a>> {
    if pending.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for (call_id, images) in pending.drain(..) {
        parts.push(Part::Text {
            text: Cow::Owned(format!("The image(s) returned by tool call {call_id}:")),
        });
        parts.extend(images.iter().map(image_part));
    }
    Some(ChatMessage::User {
        content: UserContent::Parts(parts),
    })
}

pub fn request_body<'a>(api_model: &'a str, request: &ModelRequest<'a>) -> ChatRequest<'a> {
    let mut messages = vec![ChatMessage::System {
        content: request.system,
    }];
    let mut pending_images: Vec<(&str, &[Image])> = Vec::new();
    for message in request.messages {
        if !matches!(message, Message::ToolResult { .. }) {
            messages.extend(tool_images_message(&mut pending_images));
        }
        messages.push(match message {
            Message::User { text, images } if images.is_empty() => ChatMessage::User {
                content: UserContent::Text(text),
            },
            Message::User { text, images } => {
                let mut parts = vec![Part::Text {
                    text: Cow::Borrowed(text),
                }];
                parts.extend(images.iter().map(image_part));
                ChatMessage::User {
                    content: UserContent::Parts(parts),
                }
            }
            Message::Assistant { text, tool_calls } => ChatMessage::Assistant {
                content: text,
                tool_calls: tool_calls
                    .iter()
                    .map(|call| CallOut {
                        id: &call.id,
                        kind: Kind::Function,
                        function: CallFunction {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
            },
            Message::ToolResult {
                call_id,
                content,
                images,
                ..
            } => {
                if !images.is_empty() {
                    pending_images.push((call_id, images));
                }
                ChatMessage::Tool {
                    tool_call_id: call_id,
                    content,
                }
            }
        });
    }
    messages.extend(tool_images_message(&mut pending_images));
    ChatRequest {
        model: api_model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request
            .tools
            .iter()
            .map(|tool| FunctionTool {
                kind: Kind::Function,
                function: FunctionSpec {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
    }
}

/// A tool call being assembled from indexed chunks.
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// A whole `chat.completion` body restated as the one chunk and `[DONE]` it would have
/// streamed as.
pub fn as_stream(body: &Value) -> Vec<String> {
    if body.get("error").is_some() {
        return vec![body.to_string()];
    }
    let choice = body.pointer("/choices/0").cloned().unwrap_or(Value::Null);
    let mut delta = choice.get("message").cloned().unwrap_or_else(|| json!({}));
    if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
    }
    let mut chunk = json!({"choices": [{"index": 0, "delta": delta,
        "finish_reason": choice.get("finish_reason").cloned().unwrap_or(Value::Null)}]});
    if let Some(usage) = body.get("usage") {
        chunk["usage"] = usage.clone();
    }
    vec![chunk.to_string(), "[DONE]".to_string()]
}

pub async fn read_stream(
    mut reader: SseReader,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<ModelResponse, ProviderError> {
    let mut result = ModelResponse::default();
    let mut calls: Vec<PartialCall> = Vec::new();
    let mut done = false;
    while let Some(event) = reader.next().await? {
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| reader.error(format!("malformed chunk ({e}): {}", preview(data))))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(reader.error(message.to_string()));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            result.usage = Some(parse_usage(usage));
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            result.stop_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                on_event(StreamEvent::Reasoning(text.to_string()));
            }
        }
        // A refusal is the model's answer too, in a field of its own.
        for text in ["content", "refusal"]
            .iter()
            .filter_map(|key| delta.get(*key).and_then(Value::as_str))
            .filter(|t| !t.is_empty())
        {
            result.text.push_str(text);
            on_event(StreamEvent::Text(text.to_string()));
        }
        if let Some(tool_calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in tool_calls {
                absorb_tool_fragment(&mut calls, fragment, on_event, &reader)?;
            }
        }
    }
    // A stream that ends without `[DONE]` or a finish reason was cut off mid-answer.
    if !done && result.stop_reason.is_none() {
        return Err(reader.error("connection closed before the response was complete"));
    }
    result.tool_calls = calls
        .into_iter()
        .map(|call| ToolCallRequest {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
        })
        .collect();
    Ok(result)
}

fn absorb_tool_fragment(
    calls: &mut Vec<PartialCall>,
    fragment: &Value,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
    reader: &SseReader,
) -> Result<(), ProviderError> {
    let starts_call = fragment.get("id").is_some() || fragment.pointer("/function/name").is_some();
    // Some compatible servers omit `index`: a fragment that names a call starts one, any other
    // continues the last.
    let index = match fragment.get("index").and_then(Value::as_u64) {
        Some(index) => index,
        None if starts_call || calls.is_empty() => calls.len() as u64,
        None => calls.last().map_or(0, |c| c.index),
    };
    let position = match calls.iter().position(|c| c.index == index) {
        Some(position) => position,
        None => {
            let id = fragment
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{index}"));
            let name = fragment
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| reader.error("tool call without a function name"))?
                .to_string();
            on_event(StreamEvent::ToolCallStart {
                index: calls.len(),
                id: id.clone(),
                name: name.clone(),
            });
            calls.push(PartialCall {
                index,
                id,
                name,
                arguments: String::new(),
            });
            calls.len() - 1
        }
    };
    if let Some(args) = fragment
        .pointer("/function/arguments")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
    {
        let call = &mut calls[position];
        call.arguments.push_str(args);
        on_event(StreamEvent::ToolCallDelta {
            index: position,
            delta: args.to_string(),
        });
    }
    Ok(())
}

fn parse_usage(usage: &Value) -> TokenUsage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
    TokenUsage {
        prompt_tokens: number("/prompt_tokens").unwrap_or(0),
        completion_tokens: number("/completion_tokens").unwrap_or(0),
        cached_input_tokens: number("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: None,
        reasoning_tokens: number("/completion_tokens_details/reasoning_tokens"),
    }
}

pub(super) fn preview(data: &str) -> String {
    data.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolSpec;

    /// The body as the wire has it, for indexing.
    fn sent(request: &ModelRequest<'_>) -> Value {
        serde_json::to_value(request_body("m", request)).expect("the body serialises")
    }

    /// The typed body writes exactly the bytes the `json!` builder it replaced wrote: the same
    /// keys in the same order, strings and arrays where they were.
    #[test]
    fn the_typed_body_is_byte_for_byte_the_json_one() {
        let image = || splice_protocol::input::Image {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let messages = vec![
            Message::User {
                text: "plain".into(),
                images: vec![],
            },
            Message::User {
                text: "look".into(),
                images: vec![image()],
            },
            Message::Assistant {
                text: "calling".into(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
            },
            Message::ToolResult {
                call_id: "c1".into(),
                content: "hello".into(),
                is_error: true,
                images: vec![image()],
            },
            Message::Assistant {
                text: "done".into(),
                tool_calls: vec![],
            },
        ];
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }];
        let request = ModelRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            max_tokens: 100,
        };
        let url = "data:image/png;base64,AAAA";
        let expected = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "plain"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": url}},
                ]},
                {"role": "assistant", "content": "calling", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {
                        "name": "read_file", "arguments": "{\"path\":\"a\"}"
                    }},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "hello"},
                {"role": "user", "content": [
                    {"type": "text", "text": "The image(s) returned by tool call c1:"},
                    {"type": "image_url", "image_url": {"url": url}},
                ]},
                {"role": "assistant", "content": "done"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "d",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            }}],
        });
        let typed = serde_json::to_string(&request_body("m", &request)).expect("serialises");
        assert_eq!(typed, expected.to_string());
        let bare = ModelRequest {
            tools: &[],
            ..request
        };
        let typed = serde_json::to_string(&request_body("m", &bare)).expect("serialises");
        assert!(!typed.contains("\"tools\""), "{typed}");
    }

    /// Tool messages carry text only: the images of consecutive tool results follow them in
    /// one user message, after the last of them, so every call still has its answer first.
    #[test]
    fn tool_result_images_follow_the_tool_messages_as_a_user_message() {
        let image = splice_protocol::input::Image {
            media_type: "image/png".into(),
            data: "iVBORw0K".into(),
        };
        let call = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "mcp__everything__get-tiny-image".into(),
            arguments: "{}".into(),
        };
        let result = |id: &str, images: Vec<splice_protocol::input::Image>| Message::ToolResult {
            call_id: id.into(),
            content: "[image: image/png, 6 bytes]".into(),
            is_error: false,
            images,
        };
        let messages = vec![
            Message::User {
                text: "draw".into(),
                images: vec![],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call("a"), call("b")],
            },
            result("a", vec![image.clone()]),
            result("b", vec![]),
            Message::Assistant {
                text: "seen".into(),
                tool_calls: vec![call("c")],
            },
            result("c", vec![image]),
        ];
        let body = sent(&ModelRequest {
            system: "sys",
            messages: &messages,
            tools: &[],
            max_tokens: 100,
        });
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant",
                "tool",
                "tool",
                "user",
                "assistant",
                "tool",
                "user"
            ]
        );
        let shown = &body["messages"][5]["content"];
        assert_eq!(shown[0]["text"], "The image(s) returned by tool call a:");
        assert_eq!(
            shown[1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0K"
        );
        assert_eq!(shown.as_array().map(Vec::len), Some(2));
        assert_eq!(
            body["messages"][3]["content"],
            "[image: image/png, 6 bytes]"
        );
        assert_eq!(
            body["messages"][8]["content"][0]["text"],
            "The image(s) returned by tool call c:"
        );
    }

    #[test]
    fn body_carries_tools_images_and_tool_results() {
        let messages = vec![
            Message::User {
                text: "look".into(),
                images: vec![splice_protocol::input::Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                }],
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }],
            },
            Message::ToolResult {
                call_id: "c1".into(),
                content: "hello".into(),
                is_error: false,
                images: Vec::new(),
            },
        ];
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = sent(&ModelRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            max_tokens: 100,
        });
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(
            body["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "read_file"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["stream_options"]["include_usage"], true);
    }
}

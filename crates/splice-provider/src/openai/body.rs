//! A Chat Completions request body as types. Field order is the order on the wire (serde
//! writes a struct's fields, and an internally tagged enum's tag first, as declared), so the
//! bytes are the ones the `json!` builder this replaced sent.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub(super) model: &'a str,
    pub(super) messages: Vec<ChatMessage<'a>>,
    pub(super) stream: bool,
    pub(super) stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) tools: Vec<FunctionTool<'a>>,
}

#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub(super) include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CallOut<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

/// A user message's content: text alone is a string, text with images a list of parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
pub(super) struct ImageUrl {
    /// A `data:` URL holding the image.
    pub(super) url: String,
}

/// The one `type` Chat Completions has for tools and tool calls.
#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Function,
}

/// A tool call the assistant made, as the conversation sends it back.
#[derive(Debug, Serialize)]
pub(super) struct CallOut<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: Kind,
    pub(super) function: CallFunction<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct CallFunction<'a> {
    pub(super) name: &'a str,
    /// The model's raw JSON arguments, as a string.
    pub(super) arguments: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionTool<'a> {
    #[serde(rename = "type")]
    pub(super) kind: Kind,
    pub(super) function: FunctionSpec<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionSpec<'a> {
    pub(super) name: &'a str,
    pub(super) description: &'a str,
    pub(super) parameters: &'a Value,
}

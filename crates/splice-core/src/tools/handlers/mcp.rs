//! A call of an MCP server's tool, one handler per tool a ready server lists (looked up in
//! the run's hub when called: servers start, stop and change their lists during a run): the
//! permission policy (its annotations are the server's claims), the call through the hub with
//! its progress as `tool_progress`, and the result: text capped, images checked and handed
//! on, the server's errors as tool errors.

use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use super::super::handler::{Handling, ToolHandler, ToolOutput};
use super::super::registry::ToolFamily;
use super::super::runner::{Permit, ToolRunner};
use crate::mcp::{CallError, McpHub, McpOutput, McpTool};
use crate::protocol::events::ToolStatus;
use crate::protocol::input::{IMAGE_MEDIA_TYPES, Image, MAX_IMAGE_BYTES};
use crate::protocol::{Event, SideEffect, ToolIdentity};
use crate::provider::ToolSpec;
use crate::tools::{MAX_OUTPUT_BYTES, cap_output};

/// Most images of one result handed to the model; the rest are named and left out.
const MAX_IMAGES: usize = 8;

/// One tool of a server of `hub`.
pub(crate) struct Mcp {
    pub tool: Arc<McpTool>,
    pub hub: McpHub,
}

impl ToolHandler for Mcp {
    /// Its wire name (`mcp__server__tool`), not its name on its server.
    fn name(&self) -> &str {
        let tool: &McpTool = &self.tool;
        &tool.wire
    }

    fn spec(&self) -> ToolSpec {
        self.tool.spec()
    }

    fn side_effect(&self) -> SideEffect {
        // What its server's annotations claim.
        self.tool.side_effect()
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(self.run(runner, id, args))
    }
}

/// The tools the servers of a run's hub list now, one handler each.
pub(crate) struct McpTools(pub McpHub);

impl ToolFamily for McpTools {
    fn handler(&self, name: &str) -> Option<Arc<dyn ToolHandler>> {
        if !name.starts_with(crate::mcp::tool::WIRE_PREFIX) {
            return None;
        }
        let tool = self.0.tool(name)?;
        Some(Arc::new(Mcp {
            tool,
            hub: self.0.clone(),
        }))
    }

    fn specs(&self) -> Vec<ToolSpec> {
        self.0.tools().iter().map(|tool| tool.spec()).collect()
    }
}

impl Mcp {
    /// Who it is to the permission policy.
    fn identity(&self) -> ToolIdentity {
        ToolIdentity::Mcp(self.tool.wire.clone())
    }

    async fn run(&self, runner: &ToolRunner, id: &str, args: Value) -> ToolOutput {
        let tool = &self.tool;
        let input_text = args.to_string();
        let preview = super::call_preview(&tool.name, Some(&tool.server), &input_text);
        if let Permit::Refused(status, reason) = runner
            .permit(
                id,
                &self.identity(),
                tool.side_effect(),
                &[input_text],
                tool.risk(),
                preview,
            )
            .await
        {
            return ToolOutput::new(status, reason);
        }
        let (bus, call_id) = (runner.bus.clone(), id.to_string());
        let on_progress = Box::new(move |progress: crate::mcp::Progress| {
            bus.emit(Event::tool_progress(
                call_id.as_str(),
                None,
                progress.fraction,
                progress.detail.as_deref(),
            ));
        });
        match self.hub.call(tool, args, on_progress).await {
            Ok(output) => {
                let status = if output.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                let (text, truncated, images) = render(output);
                ToolOutput {
                    truncated,
                    images,
                    ..ToolOutput::new(status, text)
                }
            }
            Err(error) => {
                let status = match error {
                    CallError::Timeout { .. } => ToolStatus::Timeout,
                    CallError::Unavailable { .. } | CallError::Failed { .. } => ToolStatus::Error,
                };
                ToolOutput::new(status, error.to_string())
            }
        }
    }
}

/// The result's text capped like any tool's output, then one line per image
/// (`[image: image/png, 91 bytes]`, never its data); the images the model may be given: of a
/// type providers take, decodable, within the size limit, at most [`MAX_IMAGES`]. Of the images
/// not given, at most [`MAX_IMAGES`] are named and the rest counted on one line: a line each,
/// after the cap, would let a flood of tiny images grow the output without bound.
fn render(output: McpOutput) -> (String, bool, Vec<Image>) {
    let (mut text, truncated) = cap_output(&output.text, MAX_OUTPUT_BYTES);
    let mut images = Vec::new();
    let (mut refused, mut unnamed) = (0usize, 0usize);
    for image in output.images {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(image.data.as_bytes())
            .map(|bytes| bytes.len());
        let media_type = crate::sanitize::terminal::strip_controls(&image.media_type).into_owned();
        let why_not = match decoded {
            Err(_) => Err("not sent: its data is not base64".to_string()),
            Ok(_) if !IMAGE_MEDIA_TYPES.contains(&image.media_type.as_str()) => {
                Err("not sent: providers take only PNG, JPEG, GIF and WebP".to_string())
            }
            Ok(bytes) if bytes > MAX_IMAGE_BYTES => {
                Err(format!("{bytes} bytes, not sent: larger than 10 MiB"))
            }
            Ok(bytes) if images.len() >= MAX_IMAGES => Err(format!(
                "{bytes} bytes, not sent: more than {MAX_IMAGES} images"
            )),
            Ok(bytes) => Ok(bytes),
        };
        let line = match why_not {
            Ok(bytes) => {
                images.push(image);
                format!("[image: {media_type}, {bytes} bytes]")
            }
            Err(_) if refused == MAX_IMAGES => {
                unnamed += 1;
                continue;
            }
            Err(why) => {
                refused += 1;
                format!("[image: {media_type}, {why}]")
            }
        };
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
    }
    if unnamed > 0 {
        text.push_str(&format!("\n[… {unnamed} more images not sent]"));
    }
    (text, truncated, images)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(media_type: &str, data: &str) -> Image {
        Image {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    #[test]
    fn images_are_named_in_the_text_and_only_usable_ones_kept() {
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_IMAGE_BYTES + 1]);
        let output = McpOutput {
            text: "A tiny image:".into(),
            images: vec![
                image("image/png", "iVBORw0KGgo="),
                image("image/svg+xml", "PHN2Zz4="),
                image("image/png", "not base64!"),
                image("image/jpeg", &big),
            ],
            is_error: false,
        };
        let (text, truncated, images) = render(output);
        assert!(!truncated);
        assert_eq!(images, [image("image/png", "iVBORw0KGgo=")]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "A tiny image:");
        assert_eq!(lines[1], "[image: image/png, 8 bytes]");
        assert!(lines[2].contains("only PNG, JPEG, GIF and WebP"), "{text}");
        assert!(lines[3].contains("not base64"), "{text}");
        assert!(lines[4].contains("larger than 10 MiB"), "{text}");
        assert!(!text.contains("iVBOR"), "image data never in the text");
    }

    /// A runner in ask mode whose questions go to `asks`, with no MCP hub.
    fn asking_runner(
        dir: &std::path::Path,
        asks: tokio::sync::mpsc::UnboundedSender<crate::bus::PermissionAsk>,
    ) -> ToolRunner {
        use crate::permissions::{PermissionMode, Policy};
        ToolRunner {
            root: dir.to_path_buf(),
            policy: Policy::new(PermissionMode::Ask, vec![]),
            checkpoints: std::sync::Arc::new(crate::checkpoint::CheckpointStore::new(
                &crate::layout::Layout::at(dir),
                "run_t",
                dir,
            )),
            bus: crate::bus::Bus::with_responder("run_t", vec![], asks),
            writable: vec![],
            gate: None,
            tools: std::sync::Arc::default(),
        }
    }

    /// A responder that denies every question and keeps the previews it was shown.
    fn denying_responder() -> (
        tokio::sync::mpsc::UnboundedSender<crate::bus::PermissionAsk>,
        std::sync::Arc<std::sync::Mutex<Vec<crate::bus::Preview>>>,
    ) {
        use crate::bus::{Answer, PermissionAsk};
        let seen: std::sync::Arc<std::sync::Mutex<Vec<crate::bus::Preview>>> =
            std::sync::Arc::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PermissionAsk>();
        let kept = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            while let Some(ask) = rx.recv().await {
                if let Ok(mut seen) = kept.lock() {
                    seen.extend(ask.question.previews);
                }
                let _ = ask.reply.send(Answer::Deny);
            }
        });
        (tx, seen)
    }

    /// The prompt shows an MCP call as a tool call (its tool, its server, its input), never as
    /// a shell command line.
    #[tokio::test]
    async fn the_prompt_shows_an_mcp_call_as_a_tool_call() {
        use crate::bus::Preview;
        let (tx, seen) = denying_responder();
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let runner = asking_runner(dir.path(), tx);
        let tool = McpTool {
            server: "everything".into(),
            name: "get-sum".into(),
            wire: "mcp__everything__get-sum".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            annotations: Default::default(),
        };
        let options = crate::mcp::HubOptions::from_vars(dir.path().to_path_buf(), vec![])
            .unwrap_or_else(|e| panic!("{e}"));
        let handler = Mcp {
            tool: Arc::new(tool),
            hub: McpHub::new(options),
        };
        let reply = handler
            .handle(&runner, "c1", serde_json::json!({"a": 2, "b": 3}))
            .await;
        assert_eq!(reply.status, ToolStatus::Denied);
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(
            seen,
            [Preview::Call {
                tool: "get-sum".into(),
                server: Some("everything".into()),
                input: r#"{"a":2,"b":3}"#.into(),
            }]
        );
    }

    /// A package tool's prompt is a tool call too (its dotted name and input), not `$ …`.
    #[tokio::test]
    async fn the_prompt_shows_a_package_call_as_a_tool_call() {
        use crate::bus::Preview;
        use std::sync::Arc;
        let (tx, seen) = denying_responder();
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let pkg_dir = dir.path().join("pkg");
        crate::packages::skeleton::create(&pkg_dir, "acme", "hello").expect("create pkg dir");
        let package =
            crate::packages::package::Package::load(&pkg_dir).unwrap_or_else(|e| panic!("{e:?}"));
        let tool = crate::packages::offer::PackageTool {
            package: Arc::new(package),
            tool: crate::packages::skeleton::TOOL.into(),
            dotted: "acme.hello.greet".into(),
            wire: "acme__hello__greet".into(),
            // Writing asks in `ask` mode, so the prompt is shown.
            side_effect: crate::protocol::SideEffect::Write,
        };
        let runner = asking_runner(dir.path(), tx);
        let offered = crate::packages::offer::Offered {
            tools: vec![tool],
            ..Default::default()
        };
        let handler = super::super::package::Package {
            offered: Arc::new(offered),
            index: 0,
        };
        let reply = handler
            .handle(&runner, "c1", serde_json::json!({"name": "x"}))
            .await;
        assert_eq!(reply.status, ToolStatus::Denied);
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(
            seen,
            [Preview::Call {
                tool: "acme.hello.greet".into(),
                server: None,
                input: r#"{"name":"x"}"#.into(),
            }]
        );
    }

    /// In ask mode an MCP tool asks even though it claims to only read; "allow always" adds
    /// the rule for its wire name, so the next call runs without asking.
    #[tokio::test]
    async fn allow_always_adds_the_rule_for_the_wire_name() {
        use crate::bus::{Answer, PermissionAsk};
        use crate::protocol::SideEffect;
        use crate::protocol::events::Risk;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let asked = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PermissionAsk>();
        let counter = Arc::clone(&asked);
        tokio::spawn(async move {
            while let Some(ask) = rx.recv().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = ask.reply.send(Answer::AllowAlways);
            }
        });
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let runner = asking_runner(dir.path(), tx);
        let wire = "mcp__everything__get-sum";
        for _ in 0..2 {
            let permit = runner
                .permit(
                    "c1",
                    &ToolIdentity::Mcp(wire.into()),
                    SideEffect::Read,
                    &[r#"{"a":2,"b":3}"#.to_string()],
                    Risk::Low,
                    vec![],
                )
                .await;
            assert!(matches!(permit, Permit::Granted { confine: false }));
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once, then the rule");
        let rules: Vec<String> = runner
            .policy
            .session_rules()
            .iter()
            .map(|r| r.render())
            .collect();
        assert_eq!(rules, [wire]);
    }

    #[test]
    fn text_is_capped_like_any_tool_output() {
        let output = McpOutput {
            text: "x".repeat(MAX_OUTPUT_BYTES * 3),
            images: vec![],
            is_error: false,
        };
        let (text, truncated, _) = render(output);
        assert!(truncated);
        assert!(text.len() < MAX_OUTPUT_BYTES + 100);
    }
}

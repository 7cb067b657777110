//! `splice pkg new`: a package skeleton that passes `pkg validate` as generated: a manifest with
//! one tool, a complete SKILL.md, the tool, an example and a `node --test` test.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::names::{name_problem, namespace_problem};

#[derive(Debug, thiserror::Error)]
pub enum SkeletonError {
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub const TOOL: &str = "greet";

/// Write the skeleton into `dir` (created if missing; refused unless empty) and return the
/// files written, relative to it.
pub fn create(dir: &Path, namespace: &str, name: &str) -> Result<Vec<String>, SkeletonError> {
    let problems = [
        ("--namespace", namespace_problem(namespace)),
        ("--name", name_problem(name)),
    ];
    for (flag, problem) in problems {
        if let Some(problem) = problem {
            return Err(SkeletonError::Refused(format!("{flag}: {problem}")));
        }
    }
    let shown = dir.display().to_string();
    match dir.symlink_metadata() {
        Ok(meta) if !meta.is_dir() => {
            return Err(SkeletonError::Refused(format!(
                "{shown} exists and is not a directory"
            )));
        }
        Ok(_) => {
            let mut read = std::fs::read_dir(dir).map_err(|source| SkeletonError::Io {
                path: shown.clone(),
                source,
            })?;
            if read.next().is_some() {
                return Err(SkeletonError::Refused(format!(
                    "{shown} is not empty; `pkg new` writes into a new or empty directory only"
                )));
            }
        }
        Err(_) => {}
    }
    let files = files(namespace, name);
    for (path, content) in &files {
        let full = dir.join(path);
        let io = |source| SkeletonError::Io {
            path: full.display().to_string(),
            source,
        };
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&full)
            .and_then(|mut f| f.write_all(content.as_bytes()))
            .map_err(io)?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

fn files(namespace: &str, name: &str) -> Vec<(String, String)> {
    let manifest = json!({
        "specVersion": 1,
        "namespace": namespace,
        "name": name,
        "version": "0.1.0",
        "description": format!("{namespace}/{name}: describe what the package is for."),
        "license": "MIT",
        "runtime": {"type": "node", "minNodeVersion": "22.18.0"},
        "permissions": {"fs": {"read": [], "write": []}, "network": [], "env": []},
        "tools": [{
            "name": TOOL,
            "description": "Greet someone by name.",
            "entry": format!("tools/{TOOL}.ts"),
            "input": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 100, "description": "Who to greet."}},
                "required": ["name"],
                "additionalProperties": false
            },
            "output": {
                "type": "object",
                "properties": {"greeting": {"type": "string"}},
                "required": ["greeting"],
                "additionalProperties": false
            },
            "timeoutMs": 5000
        }]
    });
    let example =
        json!({"tool": TOOL, "input": {"name": "Ada"}, "output": {"greeting": "Hello, Ada!"}});
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    vec![
        ("manifest.json".into(), pretty(&manifest)),
        ("SKILL.md".into(), skill(namespace, name)),
        (format!("tools/{TOOL}.ts"), TOOL_TS.into()),
        (format!("examples/{TOOL}.json"), pretty(&example)),
        (format!("tests/{TOOL}.test.ts"), TEST_TS.into()),
    ]
}

fn skill(namespace: &str, name: &str) -> String {
    format!(
        "# {namespace}/{name}\n\n\
         ## When to use it\n\n\
         Say when the model should reach for this package, and when it should not.\n\n\
         ## Tools\n\n\
         - `{TOOL}` `{{name}}` → `{{greeting}}`: greets someone by name.\n\n\
         ## Errors\n\n\
         - `INVALID_NAME`: the name is blank.\n\n\
         ## Limits\n\n\
         - `name` is at most 100 characters; each call times out after 5 seconds.\n\n\
         ## Permissions and security boundaries\n\n\
         None: no file system, network or environment access.\n"
    )
}

const TOOL_TS: &str = r#"// A package tool: the default export is called with (input, ctx) and returns plain JSON.
// Throw an Error whose message starts with a code ("INVALID_NAME: ...") to fail; callers
// receive it as TOOL_ERROR. console.* output goes to the logs, never into the result.

type Input = { name: string };
type Output = { greeting: string };
type Context = {
  package: { id: string; version: string };
  tool: string;
  paths: { project: string; package: string };
  permissions: unknown;
  log: (...args: unknown[]) => void;
};

export default async function greet(input: Input, ctx: Context): Promise<Output> {
  if (input.name.trim() === "") {
    throw new Error("INVALID_NAME: the name is blank");
  }
  ctx.log(`greeting ${input.name}`);
  return { greeting: `Hello, ${input.name}!` };
}
"#;

const TEST_TS: &str = r#"// Runs with `node --test` (Node 22.18+ strips the types), no Splice needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import greet from "../tools/greet.ts";

const ctx = {
  package: { id: "test/test", version: "0.0.0" },
  tool: "greet",
  paths: { project: process.cwd(), package: new URL("..", import.meta.url).pathname },
  permissions: {},
  log: () => {},
};

test("greets by name", async () => {
  assert.deepEqual(await greet({ name: "Ada" }, ctx), { greeting: "Hello, Ada!" });
});

test("gives the example's output", async () => {
  const example = JSON.parse(readFileSync(new URL("../examples/greet.json", import.meta.url), "utf8"));
  assert.deepEqual(await greet(example.input, ctx), example.output);
});

test("a blank name fails with a code", async () => {
  await assert.rejects(greet({ name: " " }, ctx), /^Error: INVALID_NAME: /);
});
"#;

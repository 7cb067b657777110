// Every examples/*.json gives its output when run through its tool.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import parse from "../tools/parse.ts";
import query from "../tools/query.ts";

const tools: Record<string, (input: any) => Promise<unknown>> = { parse, query };
const dir = new URL("../examples/", import.meta.url);

for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
  test(`examples/${file}`, async () => {
    const example = JSON.parse(readFileSync(new URL(file, dir), "utf8"));
    assert.ok(example.tool in tools, `unknown tool ${example.tool}`);
    const output = await tools[example.tool](example.input);
    if ("output" in example) assert.deepEqual(output, example.output);
  });
}

// node --test tests/*.test.ts (Node 22.18+), no Splice needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import parse, { typeOf } from "../tools/parse.ts";

test("parses every JSON type", async () => {
  assert.deepEqual(await parse({ text: "[1,2]" }), { value: [1, 2], type: "array" });
  assert.deepEqual(await parse({ text: '{"a":1}' }), { value: { a: 1 }, type: "object" });
  assert.deepEqual(await parse({ text: '"x"' }), { value: "x", type: "string" });
  assert.deepEqual(await parse({ text: "1.5" }), { value: 1.5, type: "number" });
  assert.deepEqual(await parse({ text: " true " }), { value: true, type: "boolean" });
  assert.deepEqual(await parse({ text: "null" }), { value: null, type: "null" });
});

test("invalid JSON fails with INVALID_JSON", async () => {
  await assert.rejects(parse({ text: "{a:1}" }), /^Error: INVALID_JSON: /);
  await assert.rejects(parse({ text: "" }), /^Error: INVALID_JSON: /);
  await assert.rejects(parse({ text: "[1,]" }), /^Error: INVALID_JSON: /);
});

test("typeOf refuses what JSON cannot hold", () => {
  assert.throws(() => typeOf(undefined), /^Error: NOT_JSON: /);
});

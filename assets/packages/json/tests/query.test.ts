// node --test tests/*.test.ts (Node 22.18+), no Splice needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import query, { parsePath, MAX_STEPS } from "../tools/query.ts";

test("paths: keys, indexes, quoted keys, the root", () => {
  assert.deepEqual(parsePath("a.b[0]"), ["a", "b", 0]);
  assert.deepEqual(parsePath('$.a["key with dots"][12]'), ["a", "key with dots", 12]);
  assert.deepEqual(parsePath('["a\\"b"]'), ['a"b']);
  assert.deepEqual(parsePath(".a"), ["a"]);
  assert.deepEqual(parsePath("$"), []);
  assert.deepEqual(parsePath(""), []);
});

test("bad paths fail with INVALID_PATH and where", () => {
  for (const bad of ["a..b", "a[", "a[01]", "a[-1]", 'a["x]', "a b", "a]", "[x]", "$$"]) {
    assert.throws(() => parsePath(bad), /^Error: INVALID_PATH: .* at character \d+/, bad);
  }
  assert.throws(() => parsePath("a".concat(".a".repeat(MAX_STEPS))), /more than 100 steps/);
});

test("finds values in text or in a value", async () => {
  const text = '{"a":{"b":[10,20]},"key.with.dots":true}';
  assert.deepEqual(await query({ text, path: "a.b[1]" }), { found: true, value: 20, type: "number" });
  assert.deepEqual(await query({ text, path: '["key.with.dots"]' }), { found: true, value: true, type: "boolean" });
  assert.deepEqual(await query({ value: [{ x: null }], path: "[0].x" }), { found: true, value: null, type: "null" });
  assert.deepEqual(await query({ value: { a: 1 }, path: "$" }), { found: true, value: { a: 1 }, type: "object" });
});

test("paths that lead nowhere are not found, inherited keys included", async () => {
  for (const path of ["b", "a[1]", "a.x", "a[0].y", "constructor", "__proto__", "a.length"]) {
    assert.deepEqual(await query({ value: { a: [1] }, path }), { found: false }, path);
  }
});

test("exactly one of text and value; text must be JSON", async () => {
  await assert.rejects(query({ path: "a" }), /^Error: INVALID_ARGUMENTS: /);
  await assert.rejects(query({ text: "1", value: 1, path: "a" }), /^Error: INVALID_ARGUMENTS: /);
  await assert.rejects(query({ text: "{", path: "a" }), /^Error: INVALID_JSON: /);
});

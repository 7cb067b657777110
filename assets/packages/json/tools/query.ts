// splice/json query: the value at a path such as `a.b[0]` or `["key with dots"].x`.
//
// Path language: an optional `$` (the root), then steps: `.key` (letters, digits, `_`, `$`, `-`;
// the first step may omit the dot), `[N]` (an array index, no sign or leading zero) or
// `["key"]` (a JSON string, for any key). An empty path or `$` is the root itself.

import { parseText, typeOf } from "./parse.ts";
import type { JsonType } from "./parse.ts";

type Input = { text?: string; value?: unknown; path: string };
type Output = { found: boolean; value?: unknown; type?: JsonType };
type Step = string | number;

export const MAX_STEPS = 100;

const KEY_CHAR = /[A-Za-z0-9_$-]/;

/** The steps of a path, or `INVALID_PATH: …` saying where it breaks. */
export function parsePath(path: string): Step[] {
  const steps: Step[] = [];
  let i = path.startsWith("$") ? 1 : 0;
  const fail = (why: string): never => {
    throw new Error(`INVALID_PATH: ${why} at character ${i + 1} of ${JSON.stringify(path)}`);
  };
  const key = (): string => {
    const start = i;
    while (i < path.length && KEY_CHAR.test(path[i])) i++;
    if (i === start) fail("expected a key");
    return path.slice(start, i);
  };
  if (i === 0 && path.length > 0 && path[0] !== "." && path[0] !== "[") {
    steps.push(key());
  }
  while (i < path.length) {
    if (steps.length >= MAX_STEPS) fail(`more than ${MAX_STEPS} steps`);
    if (path[i] === ".") {
      i++;
      steps.push(key());
    } else if (path[i] === "[") {
      i++;
      steps.push(path[i] === '"' ? quoted() : index());
      if (path[i] !== "]") fail("expected `]`");
      i++;
    } else {
      fail(`unexpected ${JSON.stringify(path[i])}`);
    }
  }
  return steps;

  function quoted(): string {
    const start = i++;
    while (i < path.length && path[i] !== '"') i += path[i] === "\\" ? 2 : 1;
    if (i >= path.length) fail("unterminated string");
    i++;
    try {
      return JSON.parse(path.slice(start, i));
    } catch {
      return fail("invalid string");
    }
  }

  function index(): number {
    const start = i;
    while (i < path.length && path[i] >= "0" && path[i] <= "9") i++;
    const digits = path.slice(start, i);
    if (digits === "") fail("expected an index or a quoted key");
    if (digits.length > 1 && digits.startsWith("0")) fail("an index has no leading zero");
    const n = Number(digits);
    if (!Number.isSafeInteger(n)) fail("index too large");
    return n;
  }
}

/** Follow the steps; own properties only, so `constructor` or `__proto__` find nothing. */
export function lookup(root: unknown, steps: Step[]): { found: boolean; value?: unknown } {
  let current: unknown = root;
  for (const step of steps) {
    if (typeof step === "number") {
      if (!Array.isArray(current) || step >= current.length) return { found: false };
      current = current[step];
    } else {
      if (current === null || typeof current !== "object" || Array.isArray(current)) {
        return { found: false };
      }
      if (!Object.hasOwn(current, step)) return { found: false };
      current = (current as Record<string, unknown>)[step];
    }
  }
  return { found: true, value: current };
}

export default async function query(input: Input): Promise<Output> {
  const hasText = input.text !== undefined;
  const hasValue = Object.hasOwn(input, "value");
  if (hasText === hasValue) {
    throw new Error("INVALID_ARGUMENTS: give exactly one of text and value");
  }
  const root = hasText ? parseText(input.text as string) : input.value;
  const hit = lookup(root, parsePath(input.path));
  return hit.found ? { found: true, value: hit.value, type: typeOf(hit.value) } : { found: false };
}

// splice/json parse: JSON text to a value and its JSON type.

export type JsonType = "object" | "array" | "string" | "number" | "boolean" | "null";

type Input = { text: string };
type Output = { value: unknown; type: JsonType };

/** The JSON type of a value that came out of JSON.parse. */
export function typeOf(value: unknown): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const kind = typeof value;
  if (kind === "object" || kind === "string" || kind === "number" || kind === "boolean") {
    return kind;
  }
  throw new Error(`NOT_JSON: a ${kind} is not a JSON value`);
}

/** JSON.parse with failures as `INVALID_JSON: …`. */
export function parseText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`INVALID_JSON: ${(error as Error).message}`);
  }
}

export default async function parse(input: Input): Promise<Output> {
  const value = parseText(input.text);
  return { value, type: typeOf(value) };
}

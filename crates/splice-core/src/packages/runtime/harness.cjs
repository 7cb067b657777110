// Splice's package harness: run with `node -e`, so there is no harness file anyone could swap.
// CommonJS, which starts faster than an ES module; the entry is imported with `import()`. Reads one JSON request on stdin ({entry, input, ctx, modules}), imports the
// entry, calls its default export with (input, ctx), and writes one JSON line on fd 3, the
// result channel. The launcher points fd 1 at stderr, so console.* and process.stdout.write
// from the tool are logs and never reach the result.
const { readFileSync, writeSync } = require('node:fs');
const { format } = require('node:util');
const nodeModule = require('node:module');
const { resolve } = require('node:path');
const { pathToFileURL } = require('node:url');

const RESULT_FD = 3;
const MAX_DEPTH = 100;
let finished = false;

function send(result) {
  if (finished) return;
  finished = true;
  // A newline first ends any partial line the tool wrote on fd 3; the runtime reads the last.
  const bytes = Buffer.from('\n' + JSON.stringify(result) + '\n');
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(RESULT_FD, bytes, offset);
  process.exit(0);
}

function describe(value) {
  try {
    if (value instanceof Error) return String(value.message);
    return String(value);
  } catch {
    return 'a value that cannot be shown';
  }
}

function failure(error) {
  if (error && typeof error === 'object' && error.code === 'ERR_ACCESS_DENIED') {
    return { ok: false, code: 'PERMISSION_DENIED', message: denied(error) };
  }
  return { ok: false, code: 'TOOL_ERROR', message: describe(error) };
}

// Node's own message says to pass `--allow-fs-read`, which a package author cannot do: name
// the manifest field that grants the access instead, and the path as the manifest writes it.
const FS_FIELDS = {
  FileSystemRead: ['reading', 'permissions.fs.read'],
  FileSystemWrite: ['writing', 'permissions.fs.write'],
};
const NEVER = {
  ChildProcess: 'starting a process',
  WorkerThreads: 'starting a worker thread',
  Addon: 'loading a native addon',
  WASI: 'using WASI',
  Inspector: 'opening the inspector',
};

function denied(error) {
  const permission = typeof error.permission === 'string' ? error.permission : '';
  const resource = typeof error.resource === 'string' ? error.resource : '';
  const fs = FS_FIELDS[permission];
  if (fs) {
    const [doing, field] = fs;
    const inside = beneathProject(resource);
    if (inside === null) {
      return `${doing} ${resource || 'that path'} is not permitted: it is outside the project root, and ${field} grants only paths inside it`;
    }
    const linked = throughLink(field, inside);
    if (linked) {
      return `${doing} ${resource} is not permitted: ${field} declares "${linked.declared}", a link, and grants where it leads (${linked.real}); use that path`;
    }
    return `${doing} ${resource} is not permitted: declare "${inside}" (or a directory above it) in the manifest's ${field}`;
  }
  if (permission === 'Net') {
    return `network access${resource ? ` to ${resource}` : ''} is not permitted: declare the host in the manifest's permissions.network`;
  }
  if (NEVER[permission]) {
    return `${NEVER[permission]} is not permitted: package tools never may, and no manifest field grants it`;
  }
  return `the permission model refused ${[permission, resource].filter(Boolean).join(' ') || 'the call'}`;
}

// The declared path (of `field`) that `inside` (relative to the project) lies under when that
// declared path is a link, granted where it leads: {declared, real}, else null.
function throughLink(field, inside) {
  try {
    const kind = field.endsWith('.write') ? 'write' : 'read';
    const declared = request.ctx.permissions.fs[kind];
    const real = request.grants[kind];
    const project = request.ctx.paths.project;
    for (let i = 0; i < declared.length; i++) {
      const written = declared[i].replace(/^(\.\/)+/, '').replace(/\/+$/, '');
      const under = written === '.' || inside === written || inside.startsWith(`${written}/`);
      if (under && real[i] !== `${project}/${written}` && !(written === '.' && real[i] === project)) {
        return { declared: declared[i], real: real[i] };
      }
    }
  } catch {
    // No request (refused before it was read): no link to point at.
  }
  return null;
}

// `path` relative to the project root ("." for the root itself), or null when outside it.
function beneathProject(path) {
  let project;
  try {
    project = request?.ctx?.paths?.project;
  } catch {
    // Refused before the request was read (`request` not yet declared).
  }
  if (typeof project !== 'string' || !path) return null;
  // Node names the path as the tool gave it: relative ones are from the cwd, the project.
  path = resolve(project, path);
  if (path === project) return '.';
  const prefix = project.endsWith('/') ? project : `${project}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : null;
}

// Why `value` is not plain JSON (with its path), or null. JSON.stringify would quietly drop or
// change such values (undefined, functions, NaN, Dates, Maps); a tool must return data.
function notPlain(value, path, ancestors) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${path} is ${value}`;
  if (typeof value !== 'object') return `${path} is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}`;
  if (ancestors.includes(value)) return `${path} refers back to itself (a cycle)`;
  if (ancestors.length >= MAX_DEPTH) return `${path} is nested deeper than ${MAX_DEPTH}`;
  ancestors.push(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = notPlain(value[i], `${path}[${i}]`, ancestors);
        if (problem) return problem;
      }
      return null;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = typeof value.constructor?.name === 'string' && value.constructor.name;
      return `${path} is ${name ? `a ${name}` : 'an object with a prototype'}, not plain JSON`;
    }
    if (Object.getOwnPropertySymbols(value).length) return `${path} has symbol keys`;
    for (const key of Object.keys(value)) {
      const problem = notPlain(value[key], `${path}.${key}`, ancestors);
      if (problem) return problem;
    }
    return null;
  } finally {
    ancestors.pop();
  }
}

function deepFreeze(value) {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

process.on('uncaughtException', (error) => send(failure(error)));
process.on('unhandledRejection', (error) => send(failure(error)));

let request;
try {
  request = JSON.parse(readFileSync(0, 'utf8'));
} catch (error) {
  send({ ok: false, code: 'TOOL_ERROR', message: `the harness got no request: ${describe(error)}` });
}

// TypeScript the runtime already stripped (cached), by path: served as is, so Node need not
// load its type stripper on every call. Files not given here load the ordinary way.
const stripped = new Map();
for (const [path, code] of Object.entries(request.modules ?? {})) {
  stripped.set(pathToFileURL(path).href, code);
}
if (stripped.size && typeof nodeModule.registerHooks === 'function') {
  const formats = { 'module-typescript': 'module', 'commonjs-typescript': 'commonjs' };
  nodeModule.registerHooks({
    load(url, context, nextLoad) {
      const source = stripped.get(url);
      if (typeof source !== 'string') return nextLoad(url, context);
      return { format: formats[context.format] ?? 'module', source, shortCircuit: true };
    },
  });
}

async function main() {
  const ctx = deepFreeze({
    package: request.ctx.package,
    tool: request.ctx.tool,
    paths: request.ctx.paths,
    permissions: request.ctx.permissions,
    log: (...args) => {
      process.stderr.write(format(...args) + '\n');
    },
  });

  let output;
  try {
    const entry = await import(pathToFileURL(request.entry).href);
    if (typeof entry.default !== 'function') {
      send({ ok: false, code: 'TOOL_ERROR', message: `${request.ctx.tool}: the entry has no default export function` });
    }
    output = await entry.default(deepFreeze(request.input), ctx);
  } catch (error) {
    send(failure(error));
  }
  let problem;
  try {
    problem = notPlain(output, 'output', []);
  } catch (error) {
    problem = `the output cannot be read: ${describe(error)}`;
  }
  if (problem) {
    send({ ok: false, code: 'INVALID_OUTPUT', message: `${problem}: a tool must return plain JSON` });
  }
  let text;
  try {
    text = JSON.stringify(output);
  } catch (error) {
    send({ ok: false, code: 'INVALID_OUTPUT', message: `the output cannot be written as JSON: ${describe(error)}` });
  }
  send({ ok: true, output: JSON.parse(text) });
}

main().catch((error) => send(failure(error)));

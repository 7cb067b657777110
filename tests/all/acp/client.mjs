// An ACP client made with the official TypeScript SDK (@agentclientprotocol/sdk), as an editor
// is: it starts `splice acp` as its child and speaks to it over the child's stdin/stdout. The
// Rust test names the scenario (ACP_SCENARIO, JSON) and reads one JSON line of what happened
// from this script's stdout.
//
// Scenario fields: args (extra `splice acp` flags), cwd, prompts (texts, in order, each in the
// same session), load (a session id to load instead of a new session), answer (the option id a
// permission request is answered with, or "cancelled"), cancelOn (cancel the turn when a
// tool_call of this kind arrives), fs ({read, write}: the client's file capabilities; reads
// answer `buffers[path]` when given), mode (a mode id set before the prompts), closeOn (end the
// connection, without cancelling, when a tool_call of this kind arrives; both wait for the file
// waitFor, which the command writes once it runs), model (a model option value set before the
// prompts), mcpServers (passed to session/new), hold (an editor that keeps the first
// permission dialog open: it is answered with `answer` only once a later request has come, and
// that later one with `laterAnswer` a while after), cancelOnPermission (with hold: cancel the turn
// when the first permission request arrives, leaving its dialog open).

import { spawn } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const acp = await import(process.env.ACP_SDK);
const scenario = JSON.parse(process.env.ACP_SCENARIO);

const child = spawn(process.env.SPLICE_BIN, ["acp", ...(scenario.args ?? [])], {
  stdio: ["pipe", "pipe", "inherit"],
  cwd: scenario.cwd,
  env: process.env,
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

// Resolves once the command under test has started (it writes `scenario.waitFor`), at most
// after 15 s.
function started() {
  const until = Date.now() + 15000;
  return new Promise((resolve) => {
    const poll = () => {
      if (!scenario.waitFor || existsSync(scenario.waitFor) || Date.now() > until) {
        resolve();
      } else {
        setTimeout(poll, 50);
      }
    };
    poll();
  });
}

const updates = [];
const permissions = [];
// Per permission request: whether the agent had cancelled it ($/cancel_request) when answered.
const withdrawn = [];
// Answers the held first dialog.
let releaseFirst = null;
const reads = [];
const writes = [];
let cancelled = false;
let sessionId = null;
let context = null;
let closing = null;

const app = acp
  .client({ name: "splice-test-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    const u = params.update;
    if (u.sessionUpdate === "tool_call" && scenario.cancelOn && u.kind === scenario.cancelOn && !cancelled) {
      cancelled = true;
      started().then(() => context.notify(acp.methods.agent.session.cancel, { sessionId }));
    }
    if (u.sessionUpdate === "tool_call" && scenario.closeOn && u.kind === scenario.closeOn && !closing) {
      closing = started();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
    const index = permissions.length;
    permissions.push(params);
    if (scenario.hold) {
      if (index === 0) {
        if (scenario.cancelOnPermission) {
          context.notify(acp.methods.agent.session.cancel, { sessionId });
        }
        await new Promise((resolve) => {
          releaseFirst = resolve;
          // At most 20 s; the timer does not keep the client alive.
          setTimeout(resolve, 20000).unref();
        });
        withdrawn[index] = signal.aborted;
        return { outcome: { outcome: "selected", optionId: scenario.answer ?? "allow_once" } };
      }
      // The stale dialog is answered first; this one once that answer had time to land.
      releaseFirst?.();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      withdrawn[index] = signal.aborted;
      return { outcome: { outcome: "selected", optionId: scenario.laterAnswer ?? "reject_once" } };
    }
    if (scenario.answer === "cancelled" || cancelled) {
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: scenario.answer ?? "allow_once" } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    reads.push(params);
    const buffers = scenario.buffers ?? {};
    if (params.path in buffers) {
      return { content: buffers[params.path] };
    }
    if (!existsSync(params.path)) {
      throw acp.RequestError.resourceNotFound(params.path);
    }
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    // The editor keeps the text in its buffer; the test reads what arrived here.
    writes.push(params);
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const result = { stopReasons: [], errors: [] };

try {
  await app.connectWith(stream, async (ctx) => {
    context = ctx;
    const fs = scenario.fs ?? {};
    result.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: !!fs.read, writeTextFile: !!fs.write }, terminal: false },
    });
    if (scenario.load) {
      sessionId = scenario.load;
      result.session = await ctx.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: scenario.cwd,
        mcpServers: [],
      });
      result.replayed = updates.length;
    } else {
      result.session = await ctx.request(acp.methods.agent.session.new, {
        cwd: scenario.cwd,
        mcpServers: scenario.mcpServers ?? [],
      });
      sessionId = result.session.sessionId;
    }
    result.sessionId = sessionId;
    if (scenario.mode) {
      await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: scenario.mode });
    }
    if (scenario.model) {
      try {
        result.model = await ctx.request(acp.methods.agent.session.setConfigOption, {
          sessionId,
          configId: "model",
          value: scenario.model,
        });
      } catch (error) {
        result.errors.push({ code: error.code, message: error.message, data: error.data });
      }
    }
    for (const text of scenario.prompts ?? []) {
      const turn = ctx.request(acp.methods.agent.session.prompt, {
        sessionId,
        // A prompt is a text, or its content blocks as given (an attached resource).
        prompt: Array.isArray(text) ? text : [{ type: "text", text }],
      });
      try {
        if (scenario.closeOn) {
          await Promise.race([turn, new Promise((resolve) => {
            const wait = () => (closing ? closing.then(resolve) : setTimeout(wait, 50));
            wait();
          })]);
          break;
        }
        const answer = await turn;
        result.stopReasons.push(answer.stopReason);
      } catch (error) {
        result.errors.push({ code: error.code, message: error.message, data: error.data });
      }
    }
  });
} catch (error) {
  result.errors.push({ code: error.code, message: String(error.message ?? error) });
}

child.stdin.end();
const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
result.exit = await exited;
clearTimeout(timer);
result.updates = updates;
result.permissions = permissions;
result.withdrawn = withdrawn;
result.reads = reads;
result.writes = writes;
process.stdout.write(JSON.stringify(result) + "\n");

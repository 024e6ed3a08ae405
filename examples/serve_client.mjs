// @ts-check
/**
 * A host runtime in JavaScript, type-checked as TypeScript through JSDoc
 * (no build step: Node 20 runs it as it is), that drives one whole
 * plan-then-build session through `planfold serve`.
 *
 *   node examples/serve_client.mjs DB [COMMAND...]
 *
 * DB is the SQLite file the server writes; COMMAND starts the server
 * (default: `planfold serve`; `--db DB` is added). The host owns what a
 * runtime owns: the model (a scripted one here), the tools' executors (an
 * in-memory workspace) and the human reviewer (who approves). planfold
 * decides everything else and writes the log: plan mode, the plan and its
 * approval, which tools the model may see and call, the plan context of
 * each request. Afterwards `planfold audit --db DB` checks the log.
 *
 * To type-check it against the protocol's generated types (planfold-rpc.d.ts),
 * in examples/: npm ci && npx tsc --noEmit --allowJs --checkJs --strict
 * --target es2022 --module nodenext serve_client.mjs
 */

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * @typedef {{code: string, detail?: string, rule?: string, position?: number}} ErrorData
 * @typedef {{jsonrpc: "2.0", id: number | null, result?: any,
 *            error?: {code: number, message: string, data: ErrorData}}} Response
 * @typedef {{id: string, name: string, arguments: Record<string, unknown>}} ModelCall
 * @typedef {{text?: string, tool_calls?: ModelCall[]}} ModelReply
 * @typedef {import("./planfold-rpc.js").ToolDecl} Tool
 * @typedef {import("./planfold-rpc.js").RequestContext} RequestContext
 * @typedef {import("./planfold-rpc.js").ToolAction} ToolAction
 */

/** A JSON-RPC error answered by the server. */
class RemoteError extends Error {
  /** @param {number} code @param {string} message @param {ErrorData} data */
  constructor(code, message, data) {
    super(`[${data.code}] ${data.detail ?? message}`);
    this.code = code;
    this.data = data;
  }
}

/** `planfold serve` as a child process: one request per line, one answer per line. */
class PlanfoldClient {
  /** @param {string[]} command @param {string} db */
  constructor(command, db) {
    this.child = spawn(command[0], [...command.slice(1), "--db", db], { stdio: ["pipe", "pipe", "inherit"] });
    this.nextId = 1;
    /** @type {Map<number, {resolve: (value: any) => void, reject: (error: Error) => void}>} */
    this.waiting = new Map();
    /** @type {Promise<number | null>} */
    this.exited = new Promise((resolve) =>
      this.child.on("exit", (code) => {
        for (const pending of this.waiting.values()) pending.reject(new Error(`planfold serve exited (${code})`));
        this.waiting.clear();
        resolve(code);
      }),
    );
    const lines = createInterface({ input: /** @type {import("node:stream").Readable} */ (this.child.stdout) });
    lines.on("line", (line) => {
      /** @type {Response} */
      const answer = JSON.parse(line);
      const pending = typeof answer.id === "number" ? this.waiting.get(answer.id) : undefined;
      if (pending === undefined) throw new Error(`an answer to no request: ${line}`);
      this.waiting.delete(/** @type {number} */ (answer.id));
      if (answer.error) pending.reject(new RemoteError(answer.error.code, answer.error.message, answer.error.data));
      else pending.resolve(answer.result);
    });
  }

  /**
   * @param {string} method
   * @param {Record<string, unknown>} params
   * @returns {Promise<any>}
   */
  call(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const stdin = /** @type {import("node:stream").Writable} */ (this.child.stdin);
      stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  /** End the server's input; its exit status. */
  async close() {
    /** @type {import("node:stream").Writable} */ (this.child.stdin).end();
    return await this.exited;
  }
}

// ---------------------------------------------------------------------------
// What the host owns: tools, a workspace, a model, a reviewer.

const SESSION = "example-1";
const TASK = "Add a farewell() function next to greet() in greet.py.";

/** @type {Tool} */
const READ_FILE = {
  name: "read_file",
  description: "Read one file of the workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  effect: "read",
};
/** @type {Tool} */
const WRITE_FILE = {
  name: "write_file",
  description: "Create or replace one file of the workspace.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, content: { type: "string" } },
    required: ["path", "content"],
  },
  effect: "write",
};

/** @type {Map<string, string>} */
const workspace = new Map([["greet.py", 'def greet(name):\n    return f"Hello, {name}!"\n']]);

/**
 * Run one call of the host's own tools.
 * @param {ModelCall} call
 * @returns {[boolean, string]}
 */
function execute(call) {
  const path = String(call.arguments.path);
  if (call.name === "read_file") {
    const content = workspace.get(path);
    return content === undefined ? [false, `no file ${path}`] : [true, JSON.stringify({ path, content })];
  }
  if (call.name === "write_file") {
    workspace.set(path, String(call.arguments.content));
    return [true, JSON.stringify({ path, written: true })];
  }
  return [false, `no executor for ${call.name}`];
}

const PLAN_SPEC = {
  goal: "Add farewell(name) to greet.py, mirroring greet(name).",
  steps: ["Read greet.py", "Append farewell(name) returning 'Goodbye, <name>!'"],
  constraints: ["Do not change greet()"],
  verify: ["greet.py defines both greet and farewell"],
  todos: [{ id: "t1", text: "write farewell() into greet.py" }],
};
const FAREWELL = '\n\ndef farewell(name):\n    return f"Goodbye, {name}!"\n';

/**
 * The scripted model: each reply is given only in the phase it expects, and
 * only when the tools it calls were offered.
 * @type {{phase: string, reply: ModelReply}[]}
 */
const SCRIPT = [
  { phase: "plan", reply: { tool_calls: [{ id: "c1", name: "read_file", arguments: { path: "greet.py" } }] } },
  {
    phase: "plan",
    reply: {
      text: "Here is my plan.",
      tool_calls: [{ id: "c2", name: "exit_plan_mode", arguments: { plan_spec: PLAN_SPEC } }],
    },
  },
  {
    phase: "build_execute",
    reply: {
      tool_calls: [
        { id: "c3", name: "write_file", arguments: { path: "greet.py", content: workspace.get("greet.py") + FAREWELL } },
      ],
    },
  },
  {
    phase: "build_execute",
    reply: { tool_calls: [{ id: "c4", name: "update_todo", arguments: { todo_id: "t1", status: "done" } }] },
  },
  { phase: "build_execute", reply: { text: "farewell() is written." } },
  {
    phase: "verify",
    reply: {
      tool_calls: [{ id: "c5", name: "report_verification", arguments: { passed: true, notes: "both are defined" } }],
    },
  },
  { phase: "build_bootstrap", reply: { text: "The plan is complete." } },
];

/**
 * @param {RequestContext} context
 * @returns {ModelReply}
 */
function model(context) {
  const next = SCRIPT.shift();
  if (next === undefined) throw new Error("the model's script is used up");
  if (next.phase !== context.phase) throw new Error(`the model expected phase ${next.phase}, got ${context.phase}`);
  const offered = new Set(context.tools.map((tool) => tool.name));
  for (const call of next.reply.tool_calls ?? []) {
    if (!offered.has(call.name)) throw new Error(`${call.name} was not offered in ${context.phase}`);
  }
  return next.reply;
}

// ---------------------------------------------------------------------------
// The host loop: one turn, step by step.

/**
 * @param {PlanfoldClient} client
 * @param {string} text
 */
async function runTurn(client, text) {
  const session = SESSION;
  const started = await client.call("turn/start", { session, text });
  console.log(`turn ${started.turn}: ${text}`);
  try {
    for (let step = 1; step <= 16; step++) {
      const begun = await client.call("step/begin", { session, step });
      if (!begun.accepted) return;
      /** @type {RequestContext} */
      const context = await client.call("step/context", { session });
      const reply = model(context);
      const calls = (reply.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.name,
        arguments_json: JSON.stringify(call.arguments),
      }));
      const recorded = await client.call("step/reply", { session, text: reply.text ?? null, tool_calls: calls });
      const said = reply.text ? ` "${reply.text}"` : "";
      console.log(`  step ${step} [${context.phase}, ${context.sections.map((s) => s.name).join(" ")}]${said}`);
      for (const call of reply.tool_calls ?? []) {
        /** @type {ToolAction} */
        const action = await client.call("tool/dispatch", { session, call_id: call.id });
        if (action.action === "execute") {
          const [ok, output] = execute(call);
          await client.call("tool/result", { session, call_id: call.id, ok, output });
        } else if (action.action === "review" && action.review !== null) {
          console.log(`    the reviewer sees:\n${action.review.plan.replace(/^/gm, "    | ")}`);
          await client.call("review/answer", { session, call_id: call.id, answer: "selected", options: ["Approve"] });
        }
        console.log(`    ${call.name}: ${action.action}${action.output ? ` ${action.output.slice(0, 60)}` : ""}`);
      }
      if (recorded.next === "end") return;
    }
  } finally {
    await client.call("turn/end", { session });
  }
}

async function main() {
  const [db, ...command] = process.argv.slice(2);
  if (!db) throw new Error("usage: node examples/serve_client.mjs DB [COMMAND...]");
  const client = new PlanfoldClient(command.length ? command : ["planfold", "serve"], db);
  const session = SESSION;
  await client.call("session/open", { session, tools: [READ_FILE, WRITE_FILE] });
  const plan = await client.call("user/command", { session, text: "/plan" });
  console.log(`/plan: ${plan.outcome}`);
  const task = await client.call("user/command", { session, text: TASK });
  if (task.kind !== "message") throw new Error("the task is not a message");
  await runTurn(client, TASK);
  try {
    await client.call("turn/end", { session });
    throw new Error("a turn was ended twice");
  } catch (error) {
    if (!(error instanceof RemoteError) || error.data.code !== "out-of-order") throw error;
  }
  const info = await client.call("session/read", { session });
  console.log(`mode ${info.mode}, plan ${info.plan.id} ${info.plan.status}, last seq ${info.last_seq}`);
  if (info.mode !== "build" || info.plan.status !== "completed") throw new Error("the plan did not complete");
  if (!String(workspace.get("greet.py")).includes("def farewell")) throw new Error("farewell() was not written");
  const status = await client.close();
  if (status !== 0) throw new Error(`planfold serve exited with ${status}`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

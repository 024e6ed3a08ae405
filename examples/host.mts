/**
 * A host runtime in TypeScript, typed by planfold-rpc.d.ts (the types
 * generated from the OpenRPC document of `planfold serve`), that drives one
 * plan-mode turn: the human asks for a plan, the model reads a file and
 * proposes one, the human approves it, and the model carries it out.
 *
 *   npm ci && npx tsc -p tsconfig.json       (compiles to build/host.mjs)
 *   node build/host.mjs DB [COMMAND...]
 *
 * DB is the SQLite file the server writes; COMMAND starts the server
 * (default: `planfold serve`; `--db DB` is added). Every request's params
 * and every answer are checked by the compiler against the protocol's types:
 * `client.call("tool/result", …)` takes ToolResultParams and gives a
 * ToolAnswered.
 */

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import type {
  ModelToolCall,
  PlanfoldMethods,
  RequestContext,
  RpcErrorCode,
  ToolAction,
  ToolDecl,
} from "./planfold-rpc.js";

type Method = keyof PlanfoldMethods;
type Params<M extends Method> = PlanfoldMethods[M]["params"];
type Result<M extends Method> = PlanfoldMethods[M]["result"];

/** What every error's data carries: planfold's stable code and, when known, where. */
interface ErrorData {
  code: string;
  detail?: string;
  rule?: string;
  position?: number;
  stage?: string;
}

interface RpcError {
  code: RpcErrorCode;
  message: string;
  data: ErrorData;
}

interface Answer {
  jsonrpc: "2.0";
  id: number | null;
  result?: unknown;
  error?: RpcError;
}

/** A JSON-RPC error answered by the server. */
class RemoteError extends Error {
  constructor(
    readonly code: RpcErrorCode,
    readonly data: ErrorData,
    message: string,
  ) {
    super(`[${data.code}] ${data.detail ?? message}`);
  }
}

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** `planfold serve` as a child process: one request per line, one answer per line. */
class PlanfoldClient {
  private readonly child: ChildProcessByStdio<Writable, Readable, null>;
  private readonly waiting = new Map<number, Waiting>();
  private readonly exited: Promise<number | null>;
  private nextId = 1;

  constructor(command: readonly string[], db: string) {
    const [program = "planfold", ...args] = command;
    this.child = spawn(program, [...args, "--db", db], { stdio: ["pipe", "pipe", "inherit"] });
    this.exited = new Promise((resolve) =>
      this.child.on("exit", (code) => {
        for (const pending of this.waiting.values()) pending.reject(new Error(`planfold serve exited (${code})`));
        this.waiting.clear();
        resolve(code);
      }),
    );
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const answer = JSON.parse(line) as Answer;
      const pending = answer.id === null ? undefined : this.waiting.get(answer.id);
      if (pending === undefined || answer.id === null) throw new Error(`an answer to no request: ${line}`);
      this.waiting.delete(answer.id);
      if (answer.error) pending.reject(new RemoteError(answer.error.code, answer.error.data, answer.error.message));
      else pending.resolve(answer.result);
    });
  }

  /** Call `method` with its params; its result, as the protocol types it. */
  call<M extends Method>(method: M, params: Params<M>): Promise<Result<M>> {
    const id = this.nextId++;
    return new Promise<Result<M>>((resolve, reject) => {
      // the server answers a method with that method's result type
      this.waiting.set(id, { resolve: (value) => resolve(value as Result<M>), reject });
      this.child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  }

  /** End the server's input; its exit status. */
  async close(): Promise<number | null> {
    this.child.stdin.end();
    return await this.exited;
  }
}

// ---------------------------------------------------------------------------
// What the host owns: tools, a workspace, a model, a reviewer.

const SESSION = "typescript-1";
const TASK = "Add a farewell() function next to greet() in greet.py.";

const TOOLS: ToolDecl[] = [
  {
    name: "read_file",
    description: "Read one file of the workspace.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    effect: "read",
  },
  {
    name: "write_file",
    description: "Create or replace one file of the workspace.",
    parameters: {
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"],
    },
    effect: "write",
    target_args: ["path"],
  },
];

const workspace = new Map<string, string>([["greet.py", 'def greet(name):\n    return f"Hello, {name}!"\n']]);

interface Call {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

interface Reply {
  text?: string;
  calls?: Call[];
}

/** Run one call of the host's own tools: whether it worked, and its output. */
function execute(call: Call): [boolean, string] {
  const path = String(call.arguments["path"]);
  if (call.name === "read_file") {
    const content = workspace.get(path);
    return content === undefined ? [false, `no file ${path}`] : [true, JSON.stringify({ path, content })];
  }
  if (call.name === "write_file") {
    workspace.set(path, String(call.arguments["content"]));
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

/** The scripted model: each reply is given only in the phase it expects. */
const SCRIPT: { phase: RequestContext["phase"]; reply: Reply }[] = [
  { phase: "plan", reply: { calls: [{ id: "c1", name: "read_file", arguments: { path: "greet.py" } }] } },
  {
    phase: "plan",
    reply: { text: "Here is my plan.", calls: [{ id: "c2", name: "exit_plan_mode", arguments: { plan_spec: PLAN_SPEC } }] },
  },
  {
    phase: "build_execute",
    reply: {
      calls: [
        { id: "c3", name: "write_file", arguments: { path: "greet.py", content: workspace.get("greet.py") + FAREWELL } },
      ],
    },
  },
  { phase: "build_execute", reply: { calls: [{ id: "c4", name: "update_todo", arguments: { todo_id: "t1", status: "done" } }] } },
  { phase: "build_execute", reply: { text: "farewell() is written." } },
  {
    phase: "verify",
    reply: { calls: [{ id: "c5", name: "report_verification", arguments: { passed: true, notes: "both are defined" } }] },
  },
  { phase: "build_bootstrap", reply: { text: "The plan is complete." } },
];

function model(context: RequestContext): Reply {
  const next = SCRIPT.shift();
  if (next === undefined) throw new Error("the model's script is used up");
  if (next.phase !== context.phase) throw new Error(`the model expected phase ${next.phase}, got ${context.phase}`);
  const offered = new Set(context.tools.map((tool) => tool.name));
  for (const call of next.reply.calls ?? []) {
    if (!offered.has(call.name)) throw new Error(`${call.name} was not offered in ${context.phase}`);
  }
  return next.reply;
}

/** The call as the server takes it: reads send their arguments decoded, the rest as the model's raw text. */
function wire(call: Call): ModelToolCall {
  return call.name === "read_file"
    ? { id: call.id, name: call.name, arguments: call.arguments }
    : { id: call.id, name: call.name, arguments_json: JSON.stringify(call.arguments) };
}

// ---------------------------------------------------------------------------
// The host loop: one turn, step by step.

async function answer(client: PlanfoldClient, call: Call, action: ToolAction): Promise<void> {
  const session = SESSION;
  if (action.action === "execute") {
    const [ok, output] = execute(call);
    const answered = await client.call("tool/result", { session, call_id: call.id, ok, output });
    console.log(`    ${call.name}: executed (seq ${answered.last_seq}) ${output.slice(0, 50)}`);
  } else if (action.action === "review" && action.review !== null) {
    console.log(`    the reviewer sees:\n${action.review.plan.replace(/^/gm, "    | ")}`);
    const answered = await client.call("review/answer", {
      session,
      call_id: call.id,
      answer: "selected",
      options: ["Approve"],
    });
    console.log(`    ${call.name}: ${answered.review ?? "answered"} (seq ${answered.last_seq})`);
  } else {
    console.log(`    ${call.name}: ${action.action} ${(action.output ?? "").slice(0, 50)}`);
  }
}

async function runTurn(client: PlanfoldClient, text: string): Promise<void> {
  const session = SESSION;
  const started = await client.call("turn/start", { session, text });
  console.log(`turn ${started.turn}: ${text}`);
  try {
    for (let step = 1; step <= 16; step++) {
      const begun = await client.call("step/begin", { session, step });
      if (!begun.accepted) return;
      const context = await client.call("step/context", { session });
      const reply = model(context);
      const calls = reply.calls ?? [];
      const recorded = await client.call("step/reply", {
        session,
        text: reply.text ?? null,
        tool_calls: calls.map(wire),
        finish_reason: calls.length ? "tool_calls" : "stop",
      });
      const said = reply.text ? ` "${reply.text}"` : "";
      console.log(`  step ${step} [${context.phase}, ${context.sections.map((s) => s.name).join(" ")}]${said}`);
      for (const call of calls) {
        await answer(client, call, await client.call("tool/dispatch", { session, call_id: call.id }));
      }
      if (recorded.next === "end") return;
    }
  } finally {
    await client.call("turn/end", { session });
  }
}

async function main(): Promise<void> {
  const [db, ...command] = process.argv.slice(2);
  if (db === undefined) throw new Error("usage: node build/host.mjs DB [COMMAND...]");
  const client = new PlanfoldClient(command.length ? command : ["planfold", "serve"], db);
  const session = SESSION;
  await client.call("session/open", { session, tools: TOOLS });
  const plan = await client.call("user/command", { session, text: "/plan" });
  console.log(`/plan: ${plan.outcome}`);
  const task = await client.call("user/command", { session, text: TASK });
  if (task.kind !== "message" || task.message === null || task.message === undefined) {
    throw new Error("the task is not a message");
  }
  await runTurn(client, task.message);
  try {
    await client.call("turn/end", { session });
    throw new Error("a turn was ended twice");
  } catch (error) {
    if (!(error instanceof RemoteError) || error.code !== -32003 || error.data.code !== "out-of-order") throw error;
  }
  const info = await client.call("session/read", { session });
  console.log(`mode ${info.mode}, plan ${info.plan?.id} ${info.plan?.status}, last seq ${info.last_seq}`);
  if (info.mode !== "build" || info.plan?.status !== "completed") throw new Error("the plan did not complete");
  if (!String(workspace.get("greet.py")).includes("def farewell")) throw new Error("farewell() was not written");
  const status = await client.close();
  if (status !== 0) throw new Error(`planfold serve exited with ${status}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

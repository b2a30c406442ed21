// wsmode certify-client adapter: the OpenAI Agents SDK for JavaScript (@openai/agents), its
// Responses WebSocket transport.
//
// `withResponsesWebSocketSession(session => session.run(agent, input, { previousResponseId }))`,
// as the SDK's docs show: the session-scoped provider opens, reuses and recovers the socket
// itself; the adapter chains turns with the last response id (a new task starts with none).
// The transport uses `globalThis.WebSocket`: node 22 has one built in; on an older node, or with
// WSMODE_AGENTS_JS_WEBSOCKET=ws, the `ws` package is installed there (a WebSocket that takes the
// SDK's headers), and the certificate's version says which ran. What a run rejects with is the
// turn's error (status, code from the error's documented fields; any other exception's type and
// frame). Tracing is disabled so nothing leaves loopback. No lanes.
import { createRequire } from 'node:module';
import path from 'node:path';
import fs from 'node:fs';
import readline from 'node:readline';

const require = createRequire(path.resolve(process.env.WSMODE_NODE_CLIENTS || '.clients/node', 'x.js'));
const useWs = process.env.WSMODE_AGENTS_JS_WEBSOCKET === 'ws' || typeof globalThis.WebSocket !== 'function';
if (useWs) globalThis.WebSocket = require('ws');
const { Agent, withResponsesWebSocketSession, setTracingDisabled } = require('@openai/agents');
const packageJson = path.resolve(process.env.WSMODE_NODE_CLIENTS || '.clients/node', 'node_modules/@openai/agents/package.json');
const { version } = JSON.parse(fs.readFileSync(packageJson, 'utf8')); // not in its exports

const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function whereRaised(error) {
  const frame = String(error?.stack ?? '').split('\n').slice(1).map((l) => l.trim())
    .find((l) => l.includes('node_modules/'));
  if (!frame) return undefined;
  const match = frame.match(/at (?:(.+?) \()?(?:file:\/\/)?.*node_modules\/([^:)]+):(\d+)/);
  return match ? `${match[2]}:${match[3]} in ${match[1] ?? '<anonymous>'}` : undefined;
}

function errorLine(turn, error) {
  const fields = {};
  for (const source of [error, error?.error, error?.cause, error?.cause?.error]) {
    if (!source || typeof source !== 'object') continue;
    if (fields.status === undefined && Number.isInteger(source.status)) fields.status = source.status;
    if (fields.code === undefined && typeof source.code === 'string') fields.code = source.code;
  }
  const type = error?.constructor?.name ?? typeof error;
  const where = whereRaised(error);
  return { turn, status: 'error', error: { ...fields, message: `${type}: ${error?.message ?? error}`,
    ...(where ? { exception: { type, where } } : {}) } };
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin });
  const task = JSON.parse(await new Promise((resolve) => lines.once('line', resolve)));
  lines.close();
  emit({ client: 'agents-js', version: `${version} (${useWs ? 'ws' : 'built-in'} WebSocket, node ${process.versions.node})` });
  setTracingDisabled(true);
  if (task.parallel || task.turns.some((t) => t.stream_id)) {
    task.turns.forEach((_, i) => emit({ turn: i, status: 'unsupported', reason: 'no named lanes; one run at a time' }));
    return;
  }
  const agent = new Agent({ name: 'wsmode', instructions: task.instructions, model: task.model, modelSettings: { store: task.store } });
  const providerOptions = { apiKey: process.env.WSMODE_CLIENT_API_KEY, baseURL: process.env.WSMODE_CLIENT_BASE_URL };
  await withResponsesWebSocketSession(async (session) => {
    let previous;
    for (const [index, turn] of task.turns.entries()) {
      await sleep(turn.delay_ms);
      if (turn.new_conversation) previous = undefined;
      try {
        const result = await session.run(agent, turn.input, previous ? { previousResponseId: previous } : {});
        previous = result.lastResponseId ?? previous;
        emit({ turn: index, status: 'completed', response_id: result.lastResponseId, text: String(result.finalOutput) });
      } catch (error) {
        emit(errorLine(index, error));
      }
    }
  }, { providerOptions });
}

main().then(() => process.exit(0), (error) => { console.error(error); process.exit(1); });

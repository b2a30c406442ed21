// wsmode certify-client adapter: the official Node SDK, `ResponsesWS` (npm openai + ws).
//
// Application glue, only what the SDK's docs and types assign to the application: one
// ResponsesWS per conversation, continuations with previous_response_id and the new message;
// previous_response_not_found: the turn again with the full input and no previous id (the
// WebSocket mode guide); a create the SDK hands back in `close.unsent` (it never left) goes out
// again on a new ResponsesWS with the full input. Default options: no `reconnect` policy, no
// HTTP fallback, no timeout of its own. Errors are read from `WebSocketError.error`, the event
// the SDK keeps on the error it yields.
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const require = createRequire(path.join(process.env.WSMODE_NODE_CLIENTS || '.clients/node', 'x.js'));
const { OpenAI } = require('openai');
const { ResponsesWS } = require('openai/resources/responses/ws');
const { VERSION } = require('openai/version');

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete']);
const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const user = (text) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const assistant = (text) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });

function errorFields(error) {
  const event = error?.error; // the API's error event, kept by the SDK
  if (!event) return { message: String(error?.message ?? error), status: error?.status };
  if (typeof event.error === 'string') return { message: event.error, stream_id: event.stream_id };
  const payload = event.error ?? event; // nested, else flat
  return { code: payload.code, message: payload.message, status: event.status, stream_id: event.stream_id };
}

function outcome(event, turn) {
  const response = event.response;
  const line = { turn, response_id: response.id };
  if (event.type === 'response.completed') return { ...line, status: 'completed', text: response.output_text ?? textOf(response) };
  if (event.type === 'response.incomplete') return { ...line, status: 'incomplete', incomplete_reason: response.incomplete_details?.reason };
  return { ...line, status: 'failed', error: { code: response.error?.code, message: response.error?.message } };
}

function textOf(response) {
  return (response.output ?? []).filter((i) => i.type === 'message')
    .flatMap((i) => i.content ?? []).filter((p) => p.type === 'output_text').map((p) => p.text).join('');
}

class Connection {
  constructor(client) {
    this.ws = new ResponsesWS(client);
    this.messages = this.ws.stream()[Symbol.asyncIterator]();
  }
  async next() {
    const { value, done } = await this.messages.next();
    return done ? { type: 'close', code: 1006, reason: 'stream ended', unsent: [] } : value;
  }
}

class Conversation {
  constructor(task, client) {
    Object.assign(this, { task, client, conn: null, history: [], previous: null });
  }
  create(message, full) {
    if (!this.conn) { this.conn = new Connection(this.client); full = true; }
    const body = { type: 'response.create', model: this.task.model, store: this.task.store, instructions: this.task.instructions };
    if (full || !this.previous) Object.assign(body, { input: [...this.history, message] });
    else Object.assign(body, { input: [message], previous_response_id: this.previous });
    this.conn.ws.send(body);
  }
  async read(turn) {
    for (;;) {
      const m = await this.conn.next();
      if (m.type === 'message' && TERMINAL.has(m.message.type)) return outcome(m.message, turn);
      if (m.type === 'error') {
        if (m.error?.error?.sequence_number !== undefined) continue; // response.failed follows
        return { turn, status: 'error', error: errorFields(m.error) };
      }
      if (m.type === 'close') {
        this.conn = null;
        return { turn, status: 'error', unsent: m.unsent?.length > 0, error: { message: `connection closed (${m.code} ${m.reason})` } };
      }
    }
  }
  async turn(index, text) {
    const message = user(text);
    try {
      this.create(message, false);
      let line = await this.read(index);
      if (line.unsent) { this.create(message, true); line = await this.read(index); } // never sent
      if (line.error?.code === 'previous_response_not_found') { this.create(message, true); line = await this.read(index); }
      delete line.unsent;
      if (line.status === 'completed') { this.history.push(message, assistant(line.text)); this.previous = line.response_id; }
      return line;
    } catch (error) {
      this.conn = null;
      return { turn: index, status: 'error', error: errorFields(error) };
    }
  }
}

async function parallel(task, client) {
  const conn = new Connection(client);
  const lanes = task.turns.map((t) => t.stream_id);
  const base = { type: 'response.create', model: task.model, store: task.store, instructions: task.instructions };
  task.turns.forEach((t) => conn.ws.send({ ...base, input: t.input, ...(t.stream_id ? { stream_id: t.stream_id } : {}) }));
  const waiting = task.turns.map((_, i) => i);
  const byResponse = new Map();
  while (waiting.length) {
    const m = await conn.next();
    if (m.type === 'close') { waiting.forEach((i) => emit({ turn: i, status: 'error', error: { message: `closed ${m.code}` } })); break; }
    const event = m.type === 'message' ? m.message : m.type === 'error' ? m.error?.error : null;
    if (!event) continue;
    const lane = lanes.indexOf(event.stream_id);
    let owner = lane >= 0 ? lane : byResponse.get(event.response?.id) ?? waiting[0];
    if (m.type === 'error') { emit({ turn: owner, status: 'error', error: errorFields(m.error) }); waiting.splice(waiting.indexOf(owner), 1); continue; }
    if (event.type === 'response.created') byResponse.set(event.response.id, owner);
    if (TERMINAL.has(event.type)) { emit(outcome(event, owner)); waiting.splice(waiting.indexOf(owner), 1); }
  }
  conn.ws.close();
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin });
  const task = JSON.parse(await new Promise((resolve) => lines.once('line', resolve)));
  lines.close();
  emit({ client: 'openai-node', version: VERSION });
  const client = new OpenAI({ apiKey: process.env.WSMODE_CLIENT_API_KEY, baseURL: process.env.WSMODE_CLIENT_BASE_URL });
  if (task.parallel) return parallel(task, client);
  const conversation = new Conversation(task, client);
  for (const [index, turn] of task.turns.entries()) {
    await sleep(turn.delay_ms);
    if (turn.new_conversation) { conversation.history = []; conversation.previous = null; } // the next task
    emit(await conversation.turn(index, turn.input));
  }
  conversation.conn?.ws.close();
}

main().then(() => process.exit(0), (error) => { console.error(error); process.exit(1); });

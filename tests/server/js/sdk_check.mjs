// Drives `wayline serve` with the JavaScript SDK (@langchain/langgraph-sdk), as a chat UI
// does: a thread, a streamed chat turn (messages-tuple), an interrupt and its resume.
// Prints one JSON object of what it saw; tests/server/test_js_sdk.py checks it.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl, apiKey });
const out = {};

const thread = await client.threads.create({ metadata: { from: "js" } });
out.thread = thread;
const events = [];
for await (const part of client.runs.stream(thread.thread_id, "chat", {
  input: { messages: [{ role: "user", content: "hi" }] },
  streamMode: ["messages-tuple", "values"],
})) {
  events.push([part.event, part.data]);
}
out.chat_events = events;
out.chat_state = await client.threads.getState(thread.thread_id);

const asked = await client.threads.create();
const paused = [];
for await (const part of client.runs.stream(asked.thread_id, "approved_chat", {
  input: { messages: [{ role: "user", content: "refund me" }] },
  streamMode: "updates",
})) {
  paused.push([part.event, part.data]);
}
out.paused_events = paused;
out.paused_thread = await client.threads.get(asked.thread_id);
const resumed = [];
for await (const part of client.runs.stream(asked.thread_id, "approved_chat", {
  command: { resume: "yes" },
  streamMode: ["messages-tuple", "updates"],
})) {
  resumed.push([part.event, part.data]);
}
out.resumed_events = resumed;
out.resumed_state = await client.threads.getState(asked.thread_id);
out.searched = await client.threads.search({ metadata: { from: "js" } });
out.runs = await client.runs.list(asked.thread_id);
console.log(JSON.stringify(out));

// mem0's npm SDK (MemoryClient of `mem0ai`) and the Vercel AI SDK provider's memory helpers
// (`@mem0/vercel-ai-provider`), both unchanged, against `memstore serve`: only the host differs.
// Run by tests/test_platform_js.py with MEMSTORE_URL, MEMSTORE_TOKEN (admin) and MEMSTORE_ALICE_TOKEN
// (a token scoped to user "js-alice"); prints one JSON line per checked method and exits 0, or
// throws (exit code 1) at the first answer that is not what the platform SDK promises.
import assert from "node:assert/strict";
import MemoryClient from "mem0ai";
import LegacyClient from "mem0ai-v2";          // mem0ai 2.x (what Mastra's @mastra/mem0 uses): the v1 / v2 paths
import { addMemories, createMem0, getMemories, retrieveMemories, searchMemories } from "@mem0/vercel-ai-provider";
import { generateText } from "ai";

const host = process.env.MEMSTORE_URL;
const done = [];
const ok = (method, status = "works") => { done.push({ method, status }); };

async function refused(method, fn) {
  try {
    await fn();
  } catch (e) {
    const text = `${e.message}`;
    assert.match(text, /not support/, `${method}: ${text}`);
    assert.doesNotMatch(text, /Traceback|Internal Server Error/, method);
    ok(method, "refused as not supported");
    return;
  }
  assert.fail(`${method} should have been refused as not supported`);
}

const client = new MemoryClient({ apiKey: process.env.MEMSTORE_TOKEN, host });
await client.ping();
assert.equal(client.organizationId, "memstore");
ok("ping");

const u = "js-bob";
const added = await client.add(
  [{ role: "user", content: "I am a vegetarian and I live in Porto" }],
  { userId: u, metadata: { topic: "food", rating: 4 }, infer: false },
);
assert.equal(added.results.length, 1);
const id1 = added.results[0].id;
assert.equal(added.results[0].event, "ADD");
const added2 = await client.add([{ role: "user", content: "I play the cello on Sundays" }],
  { userId: u, runId: "js-run-1", metadata: { topic: "music", rating: 9 }, infer: false });
const id2 = added2.results[0].id;
ok("add");

const one = await client.get(id1);
assert.equal(one.memory, "I am a vegetarian and I live in Porto");
assert.equal(one.userId, u);                  // the SDK camel-cases the answer's keys
assert.deepEqual(one.metadata, { topic: "food", rating: 4 });
ok("get");

let all = await client.getAll({ filters: { AND: [{ user_id: u }] } });
assert.equal(all.count, 2);
assert.deepEqual(new Set(all.results.map((m) => m.id)), new Set([id1, id2]));
all = await client.getAll({ filters: { AND: [{ user_id: u }, { run_id: "*" }] } });
assert.deepEqual(all.results.map((m) => m.id), [id2]);                       // wildcard: run_id not null
all = await client.getAll({ filters: { AND: [{ user_id: u }, { metadata: { rating: { gte: 5 } } }] } });
assert.deepEqual(all.results.map((m) => m.id), [id2]);
all = await client.getAll({ filters: { user_id: u, OR: [{ topic: "food" }, { keywords: { icontains: "CELLO" } }] } });
assert.equal(all.count, 2);
const page = await client.getAll({ filters: { user_id: u }, page: 2, pageSize: 1 });
assert.equal(page.count, 2);
assert.equal(page.results.length, 1);
assert.ok(page.previous && !page.next);
ok("getAll");

const found = await client.search("what does the user eat?", { filters: { user_id: u, topic: { in: ["food"] } } });
assert.deepEqual(found.results.map((m) => m.id), [id1]);
assert.equal(typeof found.results[0].score, "number");
const top = await client.search("cello", { filters: { AND: [{ user_id: u }] }, topK: 1 });
assert.equal(top.results.length, 1);
assert.equal(top.results[0].id, id2);
ok("search");

const upd = await client.update(id1, { text: "I am a vegan and I live in Porto" });
assert.equal(upd.memory, "I am a vegan and I live in Porto");
assert.equal((await client.get(id1)).memory, "I am a vegan and I live in Porto");
ok("update");

const hist = await client.history(id1);
assert.deepEqual(hist.map((h) => h.event), ["ADD", "UPDATE"]);
assert.equal(hist[1].oldMemory, "I am a vegetarian and I live in Porto");
assert.equal(hist[1].newMemory, "I am a vegan and I live in Porto");
ok("history");

const users = await client.users();
const bob = users.results.find((e) => e.type === "user" && e.name === u);
assert.ok(bob, JSON.stringify(users));
assert.equal(bob.totalMemories, 2);
assert.ok(users.results.some((e) => e.type === "run" && e.name === "js-run-1"));
ok("users");

await client.batchUpdate([{ memoryId: id2, text: "I play the viola on Sundays" }]);
assert.equal((await client.get(id2)).memory, "I play the viola on Sundays");
ok("batchUpdate");

const extra = await client.add([{ role: "user", content: "I keep two cats" }], { userId: u, infer: false });
await client.batchDelete([extra.results[0].id]);
await assert.rejects(client.get(extra.results[0].id), (e) => e.name === "MemoryNotFoundError");
ok("batchDelete");

await client.delete(id2);
await assert.rejects(client.get(id2), (e) => e.name === "MemoryNotFoundError");
ok("delete");

await client.add([{ role: "user", content: "Carol likes jazz" }], { userId: "js-carol", infer: false });
await client.deleteAll({ userId: "js-carol" });
assert.equal((await client.getAll({ filters: { user_id: "js-carol" } })).count, 0);
ok("deleteAll");

await client.add([{ role: "user", content: "Dan rows at dawn" }], { userId: "js-dan", infer: false });
await client.deleteUsers({ userId: "js-dan" });
assert.equal((await client.getAll({ filters: { user_id: "js-dan" } })).count, 0);
ok("deleteUsers");

await client.add([{ role: "user", content: "Erin paints at night" }], { userId: "js-erin", infer: false });
await client.deleteUser({ entity_id: "js-erin", entity_type: "user" });      // deprecated: /v1/entities/...
assert.equal((await client.getAll({ filters: { user_id: "js-erin" } })).count, 0);
ok("deleteUser");

// A token scoped to js-alice, through the SDK: its own memories only.
const alice = new MemoryClient({ apiKey: process.env.MEMSTORE_ALICE_TOKEN, host });
const mine = await alice.add([{ role: "user", content: "Alice grows tomatoes" }], { userId: "js-alice", infer: false });
const mineAll = await alice.getAll({ filters: { user_id: "js-alice" } });
assert.deepEqual(mineAll.results.map((m) => m.id), [mine.results[0].id]);
await assert.rejects(alice.get(id1), (e) => e.name === "MemoryNotFoundError");           // bob's memory
await assert.rejects(alice.search("vegan", { filters: { user_id: u } }), (e) => e.name === "MemoryNotFoundError");
await assert.rejects(alice.delete(id1), (e) => e.name === "MemoryNotFoundError");
assert.equal((await client.get(id1)).memory, "I am a vegan and I live in Porto");        // still there
const aliceUsers = await alice.users();
assert.deepEqual(aliceUsers.results.map((e) => e.name), ["js-alice"]);
ok("scoped token");

await refused("getProject", () => client.getProject({ fields: [] }));
await refused("updateProject", () => client.updateProject({ customInstructions: "x" }));
await refused("getWebhooks", () => client.getWebhooks());
await refused("createWebhook", () => client.createWebhook({ name: "w", url: "http://127.0.0.1/h", eventTypes: ["memory_add"] }));
await refused("updateWebhook", () => client.updateWebhook({ webhookId: "1", name: "w" }));
await refused("deleteWebhook", () => client.deleteWebhook({ webhookId: "1" }));
await refused("feedback", () => client.feedback({ memoryId: id1, feedback: "POSITIVE" }));
await refused("createMemoryExport", () => client.createMemoryExport({ schema: {}, filters: { user_id: u } }));
await refused("getMemoryExport", () => client.getMemoryExport({ filters: { user_id: u } }));
await refused("getProfile", () => client.getProfile({ entityId: u }));
await refused("generateProfile", () => client.generateProfile({ entityId: u }));
await refused("getProfileSettings", () => client.getProfileSettings());
await refused("updateProfileSettings", () => client.updateProfileSettings({ enabled: true }));
await refused("sampleProfiles", () => client.sampleProfiles({ limit: 1 }));
await refused("getProfileJob", () => client.getProfileJob("job-1"));
await refused("add with customCategories", () => client.add("x", { userId: u, customCategories: [{ a: "b" }] }));

// The Vercel AI SDK provider's memory helpers, unchanged: host points at memstore.
const cfg = { user_id: "js-vercel", mem0ApiKey: process.env.MEMSTORE_TOKEN, host, infer: false };
await addMemories([{ role: "user", content: [{ type: "text", text: "My favourite city is Kyoto" }] }], cfg);
const got = await getMemories("Which city do I like?", cfg);
assert.ok(got.some((m) => m.memory.includes("Kyoto")), JSON.stringify(got));
ok("vercel-ai-provider addMemories + getMemories");
const text = await retrieveMemories("Which city do I like?", cfg);
assert.match(text, /Memory: .*Kyoto/);
ok("vercel-ai-provider retrieveMemories");
const searched = await searchMemories("Kyoto", cfg);
assert.ok(searched.results.some((m) => m.memory.includes("Kyoto")));
ok("vercel-ai-provider searchMemories");

// mem0ai 2.x, unchanged: /v1/memories/ (add, get all), /v1/ and /v2/memories/search/, /v2/memories/.
const legacy = new LegacyClient({ apiKey: process.env.MEMSTORE_TOKEN, host });
const v1added = await legacy.add([{ role: "user", content: "I swim every Tuesday" }], { user_id: "js-legacy", infer: false });
assert.equal(v1added[0].memory, "I swim every Tuesday");                 // v1.0: a bare list
const v1found = await legacy.search("swim", { user_id: "js-legacy" });
assert.deepEqual(v1found.map((m) => m.memory), ["I swim every Tuesday"]);
const v2found = await legacy.search("swim", { api_version: "v2", filters: { AND: [{ user_id: "js-legacy" }] } });
assert.deepEqual(v2found.map((m) => m.id), [v1added[0].id]);
const v1all = await legacy.getAll({ user_id: "js-legacy" });
assert.deepEqual(v1all.map((m) => m.id), [v1added[0].id]);
const v2all = await legacy.getAll({ api_version: "v2", filters: { user_id: "js-legacy" }, page: 1, page_size: 10 });
assert.equal(v2all.count, 1);
ok("mem0ai 2.x add / search / getAll");

// The provider's language model: it stores the prompt in memstore, searches memstore for memories and
// puts them in the system prompt of the LLM call (an OpenAI-compatible scripted server, OPENAI_BASE_URL,
// answers "You like Kyoto" only when a memory about Kyoto reached it).
const mem0 = createMem0({
  provider: "openai", apiKey: "sk-test", mem0ApiKey: process.env.MEMSTORE_TOKEN,
  config: { baseURL: process.env.OPENAI_BASE_URL }, mem0Config: { host, user_id: "js-vercel", infer: false },
});
const answer = await generateText({ model: mem0.chat("gpt-4o-mini"), prompt: "Which city do I like best?" });
assert.equal(answer.text, "You like Kyoto");
const stored = await client.getAll({ filters: { user_id: "js-vercel", keywords: { contains: "best?" } } });
assert.deepEqual(stored.results.map((m) => m.memory), ["Which city do I like best?"]);    // the prompt, remembered
ok("vercel-ai-provider createMem0 + generateText");

for (const d of done) console.log(JSON.stringify(d));

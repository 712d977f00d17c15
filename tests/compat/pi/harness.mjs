// pi 1.6's own SessionManager, driven by one JSON request on stdin (issue 31's compatibility
// suite; tests/compat/state.py runs it). Run under the pinned Node 22 of .cache/compat:
//
//   SESSIONTREE_COMPAT_CACHE=<cache> <cache>/node_modules/.bin/node harness.mjs <request.json
//
// It prints one JSON object on stdout: the answer, or {"error": message} (exit code 1).
// The agent's module is imported from <cache>/node_modules (SESSIONTREE_COMPAT_CACHE, else the
// repository's .cache/compat): dist/core/session-manager.js of @earendil-works/pi-coding-agent,
// the class pi itself opens and writes sessions with.
//
// Requests
//   {"op":"load","path":P,"leafId"?:ID|null,"everyLeaf"?:true,"leaves"?:[ID...]}
//     SessionManager.open(P) (the session directory is the file's), then branch(leafId)
//     (resetLeaf() for null) when leafId is given. Answers the NORMALIZED STATE:
//       header   getHeader()
//       entries  getEntries() (file order)
//       tree     getTree() flat: [{id, depth}] depth-first in getTree() order (roots depth 0)
//       leafId   getLeafId() (null when none)
//       labels   {targetId: label} for every entry whose getLabel(id) is set
//       name     getSessionName() (null when none)
//       model    buildSessionContext().model ({provider, modelId} or null)
//       thinkingLevel  buildSessionContext().thinkingLevel (null when null or undefined)
//       context  buildSessionContext().messages (AgentMessages, before convertToLlm)
//       bytesUnchanged  the file's sha256 and size are the same after all of the above
//     With everyLeaf (or leaves), also "contextAt": {id: {model, thinkingLevel, context}} with
//     the leaf moved to each entry (each of leaves) in turn, after bytesUnchanged's read.
//   {"op":"write","path":P,"cwd":C,"forkFrom"?:SRC,"steps":[...]}
//     Opens P with SessionManager.open(P, undefined, C) (a missing file starts a new session
//     at P whose header cwd is C), or, with forkFrom, SessionManager.forkFrom(SRC, C,
//     dirname(P)) (pi names the new file itself). Then each step below, in order. pi writes as
//     it goes (appendFileSync; the file appears with the first user or assistant message).
//     Answers {"path": the session file now, "ids": [id each step produced, or null],
//              "written": whether that file exists}.
//
// Steps (every write operation of pi 1.6's SessionManager; the method each one calls):
//   {"op":"message","message":M}                          appendMessage(M): any role (user,
//        assistant with usage/stopReason incl. "aborted"/"error", toolResult, system with
//        sections/toolsAdded/toolsRemoved, custom, bashExecution, ...), images inline (base64)
//   {"op":"thinking_level","level":L}                      appendThinkingLevelChange(L) (L may be null)
//   {"op":"model_change","provider":P,"modelId":M}         appendModelChange(P, M)
//   {"op":"usage","kind":K,"provider":P,"model":M,"usage":U,"note"?:N}   appendUsage(...)
//   {"op":"compaction","summary":S,"firstKeptEntryId"?:ID,"tokensBefore":T,"details"?:D,
//        "fromHook"?:B,"usage"?:U}                         appendCompaction(...): pi adds the
//        systemMessage itself when the path holds system messages
//   {"op":"custom_entry","customType":T,"data"?:D}         appendCustomEntry(T, D)
//   {"op":"custom_message","customType":T,"content":C,"display":B,"details"?:D}
//                                                          appendCustomMessageEntry(...)
//   {"op":"session_info","name":N}                         appendSessionInfo(N)
//   {"op":"context_edit","targetId":ID,"replacement":{"content":C}|null}  appendContextEdit(...)
//   {"op":"label","targetId":ID,"label"?:L}                appendLabelChange(ID, L) (no label: clear)
//   {"op":"branch","id":ID}                                branch(ID) (moves the leaf; id null)
//   {"op":"reset_leaf"}                                    resetLeaf()
//   {"op":"branch_with_summary","branchFromId":ID|null,"summary":S,"details"?:D,"fromHook"?:B,
//        "usage"?:U}                                       branchWithSummary(...)
//   {"op":"create_branched_session","leafId":ID}           createBranchedSession(ID): a new
//        file holding the path (the answer's "path" becomes it)
// Anywhere in a step, {"$step":N} stands for the id step N produced and {"$entry":N} for the
// id of getEntries()[N] at that moment (negative N counts from the end).
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const cache = resolve(process.env.SESSIONTREE_COMPAT_CACHE || join(here, "..", "..", "..", ".cache", "compat"));
const piDist = join(cache, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { SessionManager } = await import(pathToFileURL(join(piDist, "core", "session-manager.js")).href);

function fingerprint(path) {
	if (!existsSync(path)) return null;
	const bytes = readFileSync(path);
	return `${bytes.length}:${createHash("sha256").update(bytes).digest("hex")}`;
}

// The tree flat, depth-first in getTree() order: [{id, depth}] (a root has depth 0, a node's
// children follow it with depth + 1). Nested JSON as deep as a long session cannot be read
// back by Python's JSON parsers (they stop at about 1,000 levels).
function treeOf(roots) {
	const out = [];
	const stack = roots.map((node) => [node, 0]).reverse();
	while (stack.length > 0) {
		const [node, depth] = stack.pop();
		out.push({ id: node.entry.id, depth });
		for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
	}
	return out;
}

function contextState(sm) {
	const ctx = sm.buildSessionContext();
	return { model: ctx.model ?? null, thinkingLevel: ctx.thinkingLevel ?? null, context: ctx.messages };
}

function load(req) {
	const before = fingerprint(req.path);
	const sm = SessionManager.open(req.path);
	if (req.leafId === null) sm.resetLeaf();
	else if (req.leafId !== undefined) sm.branch(req.leafId);
	const entries = sm.getEntries();
	const labels = {};
	for (const entry of entries) {
		const label = sm.getLabel(entry.id);
		if (label !== undefined) labels[entry.id] = label;
	}
	const { model, thinkingLevel, context } = contextState(sm);
	const state = {
		header: sm.getHeader(),
		entries,
		tree: treeOf(sm.getTree()),
		leafId: sm.getLeafId() ?? null,
		labels,
		name: sm.getSessionName() ?? null,
		model,
		thinkingLevel,
		context,
	};
	state.bytesUnchanged = fingerprint(req.path) === before;
	const leaves = req.everyLeaf ? entries.map((entry) => entry.id) : req.leaves;
	if (leaves) {
		state.contextAt = {};
		for (const id of leaves) {
			sm.branch(id);
			state.contextAt[id] = contextState(sm);
		}
	}
	return state;
}

function resolveRefs(value, ids, sm) {
	if (Array.isArray(value)) return value.map((v) => resolveRefs(v, ids, sm));
	if (value === null || typeof value !== "object") return value;
	const keys = Object.keys(value);
	if (keys.length === 1 && keys[0] === "$step") {
		const id = ids[value.$step];
		if (typeof id !== "string") throw new Error(`step ${value.$step} produced no id`);
		return id;
	}
	if (keys.length === 1 && keys[0] === "$entry") {
		const entries = sm.getEntries();
		const entry = entries.at(value.$entry);
		if (!entry) throw new Error(`no entry ${value.$entry}`);
		return entry.id;
	}
	const out = {};
	for (const key of keys) out[key] = resolveRefs(value[key], ids, sm);
	return out;
}

function step(sm, s) {
	switch (s.op) {
		case "message":
			return sm.appendMessage(s.message);
		case "thinking_level":
			return sm.appendThinkingLevelChange(s.level);
		case "model_change":
			return sm.appendModelChange(s.provider, s.modelId);
		case "usage":
			return sm.appendUsage(s.kind, s.provider, s.model, s.usage, s.note).id;
		case "compaction":
			return sm.appendCompaction(s.summary, s.firstKeptEntryId, s.tokensBefore, s.details, s.fromHook, s.usage);
		case "custom_entry":
			return sm.appendCustomEntry(s.customType, s.data);
		case "custom_message":
			return sm.appendCustomMessageEntry(s.customType, s.content, s.display, s.details);
		case "session_info":
			return sm.appendSessionInfo(s.name);
		case "context_edit":
			return sm.appendContextEdit(s.targetId, s.replacement);
		case "label":
			return sm.appendLabelChange(s.targetId, s.label);
		case "branch":
			sm.branch(s.id);
			return null;
		case "reset_leaf":
			sm.resetLeaf();
			return null;
		case "branch_with_summary":
			return sm.branchWithSummary(s.branchFromId, s.summary, s.details, s.fromHook, s.usage);
		case "create_branched_session":
			sm.createBranchedSession(s.leafId);
			return null;
		default:
			throw new Error(`unknown step op: ${s.op}`);
	}
}

function write(req) {
	const sm = req.forkFrom
		? SessionManager.forkFrom(req.forkFrom, req.cwd, dirname(resolve(req.path)))
		: SessionManager.open(req.path, undefined, req.cwd);
	const ids = [];
	for (const raw of req.steps ?? []) {
		ids.push(step(sm, resolveRefs(raw, ids, sm)) ?? null);
	}
	const path = sm.getSessionFile();
	return { path, ids, written: existsSync(path) };
}

function readStdin() {
	return readFileSync(0, "utf8");
}

let answer;
let code = 0;
try {
	const req = JSON.parse(readStdin());
	if (req.op === "load") answer = load(req);
	else if (req.op === "write") answer = write(req);
	else throw new Error(`unknown op: ${req.op}`);
} catch (error) {
	answer = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
	code = 1;
}
process.stdout.write(`${JSON.stringify(answer)}\n`);
process.exitCode = code;

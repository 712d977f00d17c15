/**
 * oh-my-pi (omp) 18's own SessionManager, driven by one JSON request on stdin (issue 31's
 * compatibility suite; tests/compat/state.py runs it). omp ships TypeScript run by Bun:
 *
 *   SESSIONTREE_COMPAT_CACHE=<cache> <cache>/node_modules/.bin/bun harness.ts <request.json
 *
 * It prints one JSON object on stdout: the answer, or {"error": message} (exit code 1). The
 * agent's modules are imported from <cache>/node_modules (SESSIONTREE_COMPAT_CACHE, else the
 * repository's .cache/compat): src/session/session-manager.ts of @oh-my-pi/pi-coding-agent, the
 * class omp itself opens and writes sessions with. The caller's HOME is omp's: its blobs are in
 * ~/.omp/agent/blobs, a title change records into ~/.omp/agent/history.db. Breadcrumbs are off.
 *
 * Requests
 *   {"op":"load","path":P,"leafId"?:ID|null,"everyLeaf"?:true,"leaves"?:[ID...]}
 *     SessionManager.open(P) as `omp --resume P` does, then branch(leafId) (resetLeaf() for
 *     null) when leafId is given, then close(). Answers the NORMALIZED STATE:
 *       header   getHeader(): omp's loader has folded the title slot (the 256-byte first line)
 *                into it (slot title and source replace the header line's title/titleSource)
 *       entries  getEntries() (file order; blob references resolved, as omp holds them)
 *       tree     getTree() flat: [{id, depth}] depth-first in getTree() order (roots depth 0;
 *                omp orders children by timestamp); an entry without id has id null
 *       leafId   getLeafId() (null when none)
 *       labels   {targetId: label} for every entry whose getLabel(id) is set
 *       name     getSessionName() (null when none): the header's title after the slot fold
 *       model    the model omp restores on resume (session/agent-session.ts): the first of
 *                getRestorableSessionModels(buildSessionContext().models,
 *                getLastModelChangeRole()) that has a "/" past its first character, split
 *                there: {provider, modelId}; null when none
 *       thinkingLevel  buildSessionContext().thinkingLevel (omp answers "off" when none)
 *       context  buildSessionContext().messages (the model context, before convertToLlm)
 *       bytesUnchanged  the file's sha256 and size are the same after the open and the close
 *     With everyLeaf (or leaves), also "contextAt": {id: {model, thinkingLevel, context}} with
 *     the leaf moved to each entry (each of leaves) in turn, after bytesUnchanged's read. An
 *     open that throws answers {"error": ..., exit 1}.
 *   {"op":"write","path":P,"cwd":C,"forkFrom"?:SRC,"steps":[...]}
 *     SessionManager.open(P, undefined, undefined, {initialCwd: C}) as `omp --session P` does:
 *     a missing P is created at once (title slot + header), an existing one is loaded and
 *     appended to. With forkFrom, SessionManager.forkFrom(SRC, C, dirname(P), ..., {sessionFile:
 *     P}) (omp's /fork of another session into P). Then each step below, in order, then flush()
 *     and close(). Answers {"path": the session file now, "ids": [id each step produced, or
 *     null], "written": whether that file exists}.
 *   {"op":"serializeTitleSlot","title"?:T,"source"?:S,"updatedAt":U}
 *     omp's serializeTitleSlot: {"line": the 256-byte first line, its newline included}.
 *
 * Steps (every write operation of omp 18.2.3's SessionManager; the method each one calls):
 *   {"op":"message","message":M}                 appendMessage(M): any role (user, developer,
 *        assistant with usage/stopReason incl. "aborted"/"error", toolResult, custom,
 *        bashExecution, pythonExecution, fileMention); images as content blocks (base64 of
 *        1024 characters or more goes to the blob store as blob:sha256:<hex>)
 *   {"op":"message_to_branch","message":M,"parentId":ID|null}  appendMessageToBranch (the leaf
 *        stays)
 *   {"op":"thinking_level","level"?:L,"configured"?:C}  appendThinkingLevelChange(L, C)
 *        (omp writes a missing one as null)
 *   {"op":"model_change","model":"provider/id","role"?:R,"fallback"?:B}  appendModelChange
 *   {"op":"service_tier","serviceTier":T|null}   appendServiceTierChange (T per family:
 *        {"openai"?:..,"anthropic"?:..,"google"?:..})
 *   {"op":"mode_change","mode":M,"data"?:D}       appendModeChange
 *   {"op":"session_init","init":{systemPrompt,task,tools,...}}  appendSessionInit
 *   {"op":"compaction","summary":S,"shortSummary"?:s,"firstKeptEntryId":ID,"tokensBefore":T,
 *        "options"?:{details,fromExtension,preserveData,method,providerReplayThroughEntryId,
 *        tokensAfter}}                            appendCompaction
 *   {"op":"reset_boundary"}                       appendResetBoundary (what /clear writes)
 *   {"op":"custom_entry","customType":T,"data"?:D}  appendCustomEntry
 *   {"op":"custom_message","customType":T,"content":C,"display":B,"details"?:D,
 *        "attribution"?:"user"|"agent","timestamp"?:MS}  appendCustomMessageEntry
 *   {"op":"ttsr_injection","rules":[...]}         appendTtsrInjection
 *   {"op":"credential_pin","provider":P,"hash":H} appendCredentialPin
 *   {"op":"model_usage","usage":{purpose,role?,api,provider,model,usage,stopReason,
 *        errorMessage?},"parentId"?:ID|null}      appendModelUsage for this session (parentId
 *        default: the current leaf; the leaf does not move to it when it is another entry)
 *   {"op":"label","targetId":ID,"label"?:L}       appendLabelChange (no label: cleared)
 *   {"op":"title","title":T,"source"?:"user"|"auto","trigger"?:X}  setSessionName(T, source
 *        default "user"): a title_change entry, then the slot rewritten in place (a file
 *        without a slot is rewritten whole); its id is the title_change's (null if refused)
 *   {"op":"branch","id":ID}                       branch(ID) (moves the leaf; id null)
 *   {"op":"reset_leaf"}                           resetLeaf()
 *   {"op":"branch_with_summary","branchFromId":ID|null,"summary":S,"details"?:D,
 *        "fromExtension"?:B}                      branchWithSummary
 *   {"op":"discard_entry","id":ID}                discardEntryDurably (a marker branch_summary,
 *        the whole file rewritten)
 *   {"op":"rewrite"}                              rewriteEntries() (the whole file rewritten)
 *   {"op":"create_branched_session","leafId":ID}  createBranchedSession(ID): a new file holding
 *        the path (the answer's "path" becomes it)
 *   {"op":"fork"}                                 fork(): a new file with every entry (the
 *        answer's "path" becomes it)
 * Anywhere in a step, {"$step":N} stands for the id step N produced and {"$entry":N} for the id
 * of getEntries()[N] at that moment (negative N counts from the end).
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const cache = path.resolve(process.env.SESSIONTREE_COMPAT_CACHE || path.join(import.meta.dir, "..", "..", "..", ".cache", "compat"));
const sessionSrc = path.join(cache, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session");
const { SessionManager } = await import(path.join(sessionSrc, "session-manager.ts"));
const { getRestorableSessionModels } = await import(path.join(sessionSrc, "session-context.ts"));
const { serializeTitleSlot } = await import(path.join(sessionSrc, "session-title-slot.ts"));

type Manager = InstanceType<typeof SessionManager>;
type Step = Record<string, any> & { op: string };

function fingerprint(file: string): string | null {
	if (!fs.existsSync(file)) return null;
	const bytes = fs.readFileSync(file);
	return `${bytes.length}:${createHash("sha256").update(bytes).digest("hex")}`;
}

// The tree flat, depth-first in getTree() order: [{id, depth}] (a root has depth 0, a node's
// children follow it with depth + 1). Nested JSON as deep as a long session cannot be read back
// by Python's JSON parsers (they stop at about 1,000 levels).
function treeOf(roots: any[]): { id: string | null; depth: number }[] {
	const out: { id: string | null; depth: number }[] = [];
	const stack: [any, number][] = roots.map((node): [any, number] => [node, 0]).reverse();
	while (stack.length > 0) {
		const [node, depth] = stack.pop()!;
		out.push({ id: node.entry.id ?? null, depth });
		for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
	}
	return out;
}

function modelOf(manager: Manager, models: Record<string, string>): { provider: string; modelId: string } | null {
	for (const candidate of getRestorableSessionModels(models, manager.getLastModelChangeRole()) as string[]) {
		const slash = candidate.indexOf("/");
		if (slash <= 0) continue;
		return { provider: candidate.slice(0, slash), modelId: candidate.slice(slash + 1) };
	}
	return null;
}

function contextState(manager: Manager) {
	const ctx = manager.buildSessionContext();
	return { model: modelOf(manager, ctx.models), thinkingLevel: ctx.thinkingLevel ?? null, context: ctx.messages };
}

async function load(req: { path: string; leafId?: string | null; everyLeaf?: boolean; leaves?: string[] }) {
	const before = fingerprint(req.path);
	const manager: Manager = await SessionManager.open(req.path, undefined, undefined, { suppressBreadcrumb: true });
	if (req.leafId === null) manager.resetLeaf();
	else if (req.leafId !== undefined) manager.branch(req.leafId);
	const entries = manager.getEntries();
	const labels: Record<string, string> = {};
	for (const entry of entries) {
		const label = manager.getLabel(entry.id);
		if (label !== undefined) labels[entry.id] = label;
	}
	const { model, thinkingLevel, context } = contextState(manager);
	const state: Record<string, unknown> = {
		header: manager.getHeader(),
		entries,
		tree: treeOf(manager.getTree()),
		leafId: manager.getLeafId() ?? null,
		labels,
		name: manager.getSessionName() ?? null,
		model,
		thinkingLevel,
		context,
	};
	// JSON now: the state holds the entries themselves, and the close below must not see them moved
	const answer = JSON.parse(JSON.stringify(state));
	await manager.close();
	answer.bytesUnchanged = fingerprint(req.path) === before;
	const leaves: string[] | undefined = req.everyLeaf ? entries.map((entry: { id: string }) => entry.id) : req.leaves;
	if (leaves) {
		answer.contextAt = {};
		for (const id of leaves) {
			manager.branch(id);
			answer.contextAt[id] = JSON.parse(JSON.stringify(contextState(manager)));
		}
	}
	return answer;
}

function resolveRefs(value: any, ids: (string | null)[], manager: Manager): any {
	if (Array.isArray(value)) return value.map(v => resolveRefs(v, ids, manager));
	if (value === null || typeof value !== "object") return value;
	const keys = Object.keys(value);
	if (keys.length === 1 && keys[0] === "$step") {
		const id = ids[value.$step];
		if (typeof id !== "string") throw new Error(`step ${value.$step} produced no id`);
		return id;
	}
	if (keys.length === 1 && keys[0] === "$entry") {
		const entry = manager.getEntries().at(value.$entry);
		if (!entry) throw new Error(`no entry ${value.$entry}`);
		return entry.id;
	}
	const out: Record<string, any> = {};
	for (const key of keys) out[key] = resolveRefs(value[key], ids, manager);
	return out;
}

async function step(manager: Manager, s: Step): Promise<string | null | undefined> {
	switch (s.op) {
		case "message":
			return manager.appendMessage(s.message);
		case "message_to_branch":
			return manager.appendMessageToBranch(s.message, s.parentId ?? null);
		case "thinking_level":
			return manager.appendThinkingLevelChange(s.level ?? undefined, s.configured ?? undefined);
		case "model_change":
			return manager.appendModelChange(s.model, s.role, s.fallback ?? false);
		case "service_tier":
			return manager.appendServiceTierChange(s.serviceTier ?? null);
		case "mode_change":
			return manager.appendModeChange(s.mode, s.data);
		case "session_init":
			return manager.appendSessionInit(s.init);
		case "compaction":
			return manager.appendCompaction(s.summary, s.shortSummary, s.firstKeptEntryId, s.tokensBefore, s.options ?? {});
		case "reset_boundary":
			return manager.appendResetBoundary();
		case "custom_entry":
			return manager.appendCustomEntry(s.customType, s.data);
		case "custom_message":
			return manager.appendCustomMessageEntry(
				s.customType,
				s.content,
				s.display,
				s.details,
				s.attribution ?? "agent",
				s.timestamp,
			);
		case "ttsr_injection":
			return manager.appendTtsrInjection(s.rules);
		case "credential_pin":
			return manager.appendCredentialPin(s.provider, s.hash);
		case "model_usage": {
			const parentId = "parentId" in s ? s.parentId : manager.getLeafId();
			return manager.appendModelUsage(s.usage, { sessionId: manager.getSessionId(), parentId });
		}
		case "label":
			return manager.appendLabelChange(s.targetId, s.label ?? undefined);
		case "title":
			return (await manager.setSessionName(s.title, s.source ?? "user", s.trigger)) ? manager.getLeafId() : null;
		case "branch":
			manager.branch(s.id);
			return null;
		case "reset_leaf":
			manager.resetLeaf();
			return null;
		case "branch_with_summary":
			return manager.branchWithSummary(s.branchFromId ?? null, s.summary, s.details, s.fromExtension);
		case "discard_entry":
			await manager.discardEntryDurably(s.id);
			return null;
		case "rewrite":
			await manager.rewriteEntries();
			return null;
		case "create_branched_session":
			manager.createBranchedSession(s.leafId);
			return null;
		case "fork":
			await manager.fork();
			return null;
		default:
			throw new Error(`unknown step op: ${s.op}`);
	}
}

async function write(req: { path: string; cwd: string; forkFrom?: string; steps?: Step[] }) {
	const manager: Manager = req.forkFrom
		? await SessionManager.forkFrom(req.forkFrom, req.cwd, path.dirname(path.resolve(req.path)), undefined, {
				sessionFile: path.resolve(req.path),
				suppressBreadcrumb: true,
			})
		: await SessionManager.open(req.path, undefined, undefined, { initialCwd: req.cwd, suppressBreadcrumb: true });
	const ids: (string | null)[] = [];
	try {
		for (const raw of req.steps ?? []) ids.push((await step(manager, resolveRefs(raw, ids, manager))) ?? null);
		await manager.flush();
	} finally {
		await manager.close();
	}
	const file = manager.getSessionFile() ?? null;
	return { path: file, ids, written: file !== null && fs.existsSync(file) };
}

let answer: unknown;
let code = 0;
try {
	const req = JSON.parse(await Bun.stdin.text());
	if (req.op === "load") answer = await load(req);
	else if (req.op === "write") answer = await write(req);
	else if (req.op === "serializeTitleSlot") answer = { line: serializeTitleSlot(req) };
	else throw new Error(`unknown op: ${req.op}`);
} catch (error) {
	answer = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
	code = 1;
}
process.stdout.write(`${JSON.stringify(answer)}\n`);
process.exitCode = code;

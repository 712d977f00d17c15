/**
 * oh-my-pi (omp) 18's own SessionManager, driven from the compatibility suite (tests/compat).
 *
 * Run under Bun (omp ships TypeScript sources run by Bun):
 *   bun tests/compat/omp/harness.ts <request.json
 * One JSON request on stdin, one JSON object on stdout. The omp package is taken from
 * $SESSIONTREE_COMPAT_CACHE/node_modules (default: <repo>/.cache/compat/node_modules), where
 * tests/compat/setup.sh installs it. The caller sets HOME to a directory of its own: omp keeps
 * its blobs in ~/.omp/agent/blobs (getBlobsDir) and writes ~/.omp/agent/history.db when a title
 * is set. Breadcrumbs are suppressed.
 *
 * Requests
 * --------
 * {"op":"load","path":P,"leafId"?:ID}
 *     SessionManager.open(P) as omp's --resume/--session does, then branch(leafId) when given,
 *     then close(). Answers the normalized state (tests/compat/state.py):
 *       {header, entries, tree, leafId, labels, name, model, thinkingLevel, context,
 *        bytesUnchanged}
 *     header  getHeader() (the title slot folded in by omp's loader: slot title/source replace
 *             the header line's title/titleSource), entries getEntries(), tree getTree() as
 *             [{id, children}] (omp orders children by timestamp), leafId getLeafId(),
 *     labels  {targetId: label} for every label in effect (getLabel of each label entry's target),
 *     name    getSessionName() (null when none),
 *     model   the model omp restores on resume (agent-session.ts: getRestorableSessionModels of
 *             the context's models and getLastModelChangeRole(), the first one, split at its
 *             first "/"): {provider, modelId} plus "role" when it is a non-default role's model,
 *     thinkingLevel  buildSessionContext().thinkingLevel (omp answers "off" when none),
 *     context buildSessionContext().messages (the model context, not the display transcript),
 *     bytesUnchanged  sha256 and size of P before the open and after the close are equal.
 *     Everything goes through JSON (undefined values dropped, as on disk). An open that throws
 *     answers {"error": message, "bytesUnchanged": ...}.
 *
 * {"op":"write","path":P,"cwd":C,"steps":[...]}
 *     SessionManager.open(P, ..., {initialCwd: C}): a missing P is created (slot + header written
 *     at once, as `omp --session P` does), an existing one is loaded and appended to. Then each
 *     step, flush(), close(). Answers {"path": the session file at the end, "ids": [...]} (the id
 *     each step produced, null where none; the new file's path for createBranchedSession/fork).
 *     A step that throws answers {"error": message, "step": index, "ids": [...]}.
 *
 * {"op":"serializeTitleSlot","title"?:T,"source"?:S,"updatedAt":U}
 *     omp's serializeTitleSlot: {"line": the 256-byte first line, newline included}.
 *
 * Steps (every write call of omp 18.2.3's SessionManager). In the fields entryId, targetId,
 * firstKeptEntryId, parentId and leafId a number n stands for the id step n produced; a string
 * is an id as it is.
 *   {"kind":"message","message":M}                       appendMessage (any role: user,
 *        assistant with usage/stopReason incl. aborted/error, toolResult, developer, custom,
 *        bashExecution, pythonExecution, fileMention; images as content blocks: base64 data of
 *        1024 characters or more is written to the blob store as blob:sha256:<hex>)
 *   {"kind":"messageToBranch","message":M,"parentId":P}  appendMessageToBranch (leaf unchanged)
 *   {"kind":"thinkingLevel","thinkingLevel"?:L,"configured"?:C}  appendThinkingLevelChange
 *        (a missing level is written as null)
 *   {"kind":"model","model":"provider/id","role"?:R,"fallback"?:bool}  appendModelChange
 *   {"kind":"serviceTier","serviceTier":T|null}           appendServiceTierChange
 *   {"kind":"mode","mode":M,"data"?:D}                    appendModeChange
 *   {"kind":"sessionInit","init":{systemPrompt,task,tools,...}}  appendSessionInit
 *   {"kind":"compaction","summary":S,"shortSummary"?:s,"firstKeptEntryId":E,"tokensBefore":N,
 *        "options"?:{details,fromExtension,preserveData,method,providerReplayThroughEntryId,
 *        tokensAfter}}                                    appendCompaction
 *   {"kind":"resetBoundary"}                              appendResetBoundary (/clear)
 *   {"kind":"custom","customType":T,"data"?:D}            appendCustomEntry
 *   {"kind":"customMessage","customType":T,"content":C,"display":B,"details"?:D,
 *        "attribution"?:"user"|"agent","timestamp"?:ms}   appendCustomMessageEntry
 *   {"kind":"ttsr","rules":[...]}                         appendTtsrInjection
 *   {"kind":"credentialPin","provider":P,"hash":H}        appendCredentialPin
 *   {"kind":"modelUsage","usage":{purpose,role?,api,provider,model,usage,stopReason,
 *        errorMessage?},"parentId"?:P}                    appendModelUsage (owner: this session,
 *        parentId default the current leaf; the leaf does not move when parentId is not it)
 *   {"kind":"label","targetId":E,"label"?:L}              appendLabelChange (no label: cleared)
 *   {"kind":"title","title":T,"source"?:"user"|"auto","trigger"?:X}  setSessionName (default
 *        source "user"): appends title_change and rewrites the 256-byte slot in place, or
 *        rewrites the whole file when it has no slot; id: the title_change's, null if refused
 *   {"kind":"branch","entryId":E}                         branch (leaf moved)
 *   {"kind":"resetLeaf"}                                  resetLeaf (next append is a root)
 *   {"kind":"branchWithSummary","entryId":E|null,"summary":S,"details"?:D,"fromExtension"?:B}
 *   {"kind":"discardEntry","entryId":E}                   discardEntryDurably (full rewrite)
 *   {"kind":"rewrite"}                                    rewriteEntries (full atomic rewrite)
 *   {"kind":"createBranchedSession","leafId":E}           a new file with the path to E
 *   {"kind":"fork"}                                       fork(): a new file, same entries
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const cacheRoot = process.env.SESSIONTREE_COMPAT_CACHE || path.resolve(import.meta.dir, "../../../.cache/compat");
const sessionDirSrc = path.join(cacheRoot, "node_modules/@oh-my-pi/pi-coding-agent/src/session");

const { SessionManager } = await import(path.join(sessionDirSrc, "session-manager.ts"));
const { getRestorableSessionModels } = await import(path.join(sessionDirSrc, "session-context.ts"));
const { serializeTitleSlot } = await import(path.join(sessionDirSrc, "session-title-slot.ts"));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Manager = InstanceType<typeof SessionManager>;
type Step = Record<string, any> & { kind: string };

function plain<T>(value: T): Json {
	const text = JSON.stringify(value);
	return text === undefined ? null : (JSON.parse(text) as Json);
}

function fingerprint(file: string): string | null {
	try {
		const data = fs.readFileSync(file);
		return `${data.length}:${createHash("sha256").update(data).digest("hex")}`;
	} catch {
		return null;
	}
}

function treeOf(node: any): Json {
	return { id: node.entry.id ?? null, children: node.children.map(treeOf) };
}

function labelsOf(manager: Manager): Record<string, string> {
	const labels: Record<string, string> = {};
	for (const entry of manager.getEntries()) {
		if (entry.type !== "label" || typeof entry.targetId !== "string" || entry.targetId in labels) continue;
		const label = manager.getLabel(entry.targetId);
		if (label !== undefined) labels[entry.targetId] = label;
	}
	// file order of the targets' first labels; a target cleared later is absent
	return labels;
}

function modelOf(manager: Manager, models: Record<string, string>): Json {
	const role = manager.getLastModelChangeRole();
	for (const candidate of getRestorableSessionModels(models, role) as string[]) {
		const slash = candidate.indexOf("/");
		if (slash <= 0) continue;
		const model: Record<string, string> = {
			provider: candidate.slice(0, slash),
			modelId: candidate.slice(slash + 1),
		};
		if (role && role !== "default" && models[role] === candidate) model.role = role;
		return model;
	}
	return null;
}

async function load(request: { path: string; leafId?: string }): Promise<Json> {
	const before = fingerprint(request.path);
	let manager: Manager;
	try {
		manager = await SessionManager.open(request.path, undefined, undefined, { suppressBreadcrumb: true });
	} catch (err) {
		return { error: String((err as Error)?.message ?? err), bytesUnchanged: fingerprint(request.path) === before };
	}
	if (request.leafId !== undefined) manager.branch(request.leafId);
	const context = manager.buildSessionContext();
	const state = {
		header: plain(manager.getHeader()),
		entries: plain(manager.getEntries()),
		tree: manager.getTree().map(treeOf),
		leafId: manager.getLeafId() ?? null,
		labels: labelsOf(manager),
		name: manager.getSessionName() ?? null,
		model: modelOf(manager, context.models),
		thinkingLevel: context.thinkingLevel ?? null,
		context: plain(context.messages),
	};
	await manager.close();
	return { ...state, bytesUnchanged: fingerprint(request.path) === before };
}

async function runStep(manager: Manager, step: Step, ids: (string | null)[]): Promise<string | null> {
	const ref = (value: unknown): any => (typeof value === "number" ? ids[value] : value);
	switch (step.kind) {
		case "message":
			return manager.appendMessage(step.message);
		case "messageToBranch":
			return manager.appendMessageToBranch(step.message, ref(step.parentId) ?? null);
		case "thinkingLevel":
			return manager.appendThinkingLevelChange(step.thinkingLevel ?? undefined, step.configured ?? undefined);
		case "model":
			return manager.appendModelChange(step.model, step.role, step.fallback ?? false);
		case "serviceTier":
			return manager.appendServiceTierChange(step.serviceTier ?? null);
		case "mode":
			return manager.appendModeChange(step.mode, step.data);
		case "sessionInit":
			return manager.appendSessionInit(step.init);
		case "compaction":
			return manager.appendCompaction(
				step.summary,
				step.shortSummary,
				ref(step.firstKeptEntryId),
				step.tokensBefore,
				step.options ?? {},
			);
		case "resetBoundary":
			return manager.appendResetBoundary();
		case "custom":
			return manager.appendCustomEntry(step.customType, step.data);
		case "customMessage":
			return manager.appendCustomMessageEntry(
				step.customType,
				step.content,
				step.display,
				step.details,
				step.attribution ?? "agent",
				step.timestamp,
			);
		case "ttsr":
			return manager.appendTtsrInjection(step.rules);
		case "credentialPin":
			return manager.appendCredentialPin(step.provider, step.hash);
		case "modelUsage": {
			const parentId = "parentId" in step ? ref(step.parentId) : manager.getLeafId();
			return manager.appendModelUsage(step.usage, { sessionId: manager.getSessionId(), parentId }) ?? null;
		}
		case "label":
			return manager.appendLabelChange(ref(step.targetId), step.label ?? undefined);
		case "title": {
			const done = await manager.setSessionName(step.title, step.source ?? "user", step.trigger);
			return done ? manager.getLeafId() : null;
		}
		case "branch":
			manager.branch(ref(step.entryId));
			return null;
		case "resetLeaf":
			manager.resetLeaf();
			return null;
		case "branchWithSummary":
			return manager.branchWithSummary(ref(step.entryId) ?? null, step.summary, step.details, step.fromExtension);
		case "discardEntry":
			await manager.discardEntryDurably(ref(step.entryId));
			return null;
		case "rewrite":
			await manager.rewriteEntries();
			return null;
		case "createBranchedSession":
			return manager.createBranchedSession(ref(step.leafId)) ?? null;
		case "fork":
			return (await manager.fork())?.newSessionFile ?? null;
		default:
			throw new Error(`unknown step kind ${JSON.stringify(step.kind)}`);
	}
}

async function write(request: { path: string; cwd: string; steps: Step[] }): Promise<Json> {
	const manager: Manager = await SessionManager.open(request.path, undefined, undefined, {
		initialCwd: request.cwd,
		suppressBreadcrumb: true,
	});
	const ids: (string | null)[] = [];
	for (const [index, step] of request.steps.entries()) {
		try {
			ids.push(await runStep(manager, step, ids));
		} catch (err) {
			await manager.close().catch(() => undefined);
			return { error: String((err as Error)?.message ?? err), step: index, ids };
		}
	}
	await manager.flush();
	await manager.close();
	return { path: manager.getSessionFile() ?? null, ids };
}

async function main(): Promise<Json> {
	const request = JSON.parse(await Bun.stdin.text());
	switch (request.op) {
		case "load":
			return load(request);
		case "write":
			return write(request);
		case "serializeTitleSlot":
			return { line: serializeTitleSlot(request) };
		default:
			throw new Error(`unknown op ${JSON.stringify(request.op)}`);
	}
}

process.stdout.write(`${JSON.stringify(await main())}\n`);

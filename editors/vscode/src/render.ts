/** Pure text rendering for tooltips and the read-only documents (no vscode import). */

type Json = Record<string, unknown>;

const MAX_TOOLTIP_CHARS = 4000;

function asRecord(v: unknown): Json | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined;
}

/** The readable text of a message `content` (string or blocks); tool calls shown as calls. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') {
    return content;
  }
  if (!Array.isArray(content)) {
    return '';
  }
  const parts: string[] = [];
  for (const raw of content) {
    const block = asRecord(raw);
    if (!block) {
      continue;
    }
    switch (block.type) {
      case 'text':
        parts.push(String(block.text ?? ''));
        break;
      case 'thinking':
        parts.push(`(thinking) ${String(block.thinking ?? '')}`);
        break;
      case 'toolCall':
        parts.push(`→ ${String(block.name ?? 'tool')}(${JSON.stringify(block.arguments ?? {})})`);
        break;
      case 'image':
        parts.push('[image]');
        break;
      default:
        break;
    }
  }
  return parts.join('\n\n');
}

/** The full text of a stored entry, for tooltips. */
export function entryFullText(entry: Json): string {
  const message = asRecord(entry.message);
  switch (entry.type) {
    case 'message': {
      if (!message) {
        return '';
      }
      if (message.role === 'bashExecution') {
        return `$ ${String(message.command ?? '')}\n${String(message.output ?? '')}`;
      }
      const text = contentText(message.content);
      if (!text && message.errorMessage) {
        return String(message.errorMessage);
      }
      return text;
    }
    case 'custom_message':
      return contentText(entry.content);
    case 'compaction':
    case 'branch_summary':
      return String(entry.summary ?? '');
    case 'model_change':
      return `model: ${String(entry.model ?? '')}`;
    case 'thinking_level_change':
      return `thinking: ${String(entry.thinkingLevel ?? 'off')}`;
    case 'label':
      return `label: ${String(entry.label ?? '(cleared)')}`;
    case 'custom':
      return JSON.stringify(entry.data ?? {}, null, 2);
    case 'session_init':
      return String(entry.task ?? entry.systemPrompt ?? '');
    default:
      return JSON.stringify(entry, null, 2);
  }
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}\n…` : s;
}

/** Markdown for an entry's tooltip: a heading line, then the full text in a fenced block. */
export function entryTooltipMarkdown(entry: Json, label?: string): string {
  const message = asRecord(entry.message);
  const kind = entry.type === 'message' ? String(message?.role ?? 'message') : String(entry.type);
  const head = [`**${kind}**`, `\`${String(entry.id)}\``, String(entry.timestamp ?? '')];
  if (label) {
    head.push(`🏷 ${label}`);
  }
  if (message && typeof message.model === 'string') {
    head.push(`${String(message.provider ?? '')}/${message.model}`);
  }
  const body = cut(entryFullText(entry), MAX_TOOLTIP_CHARS);
  const fence = body.includes('```') ? '````' : '```';
  return `${head.join(' · ')}\n\n${fence}text\n${body}\n${fence}\n`;
}

/** A Markdown document of what the model sees from a node (`session/context` with `llm`). */
export function renderContext(ctx: Json, title: string, fromId: string): string {
  const lines: string[] = [];
  lines.push(`# Context of ${title} at ${fromId}`, '');
  const models = asRecord(ctx.models) ?? {};
  const modelText = Object.entries(models)
    .map(([role, m]) => `${role}: ${String(m)}`)
    .join(', ');
  lines.push(`- thinking level: ${String(ctx.thinkingLevel ?? 'off')}`);
  lines.push(`- models: ${modelText || '(none)'}`);
  lines.push(`- mode: ${String(ctx.mode ?? 'none')}`);
  const rules = Array.isArray(ctx.injectedTtsrRules) ? ctx.injectedTtsrRules : [];
  if (rules.length) {
    lines.push(`- injected rules: ${rules.join(', ')}`);
  }
  const messages = Array.isArray(ctx.llmMessages) ? ctx.llmMessages : Array.isArray(ctx.messages) ? ctx.messages : [];
  lines.push(`- messages: ${messages.length}`, '');
  messages.forEach((raw, i) => {
    const m = asRecord(raw) ?? {};
    lines.push(`## ${i + 1}. ${String(m.role ?? '?')}${m.toolName ? ` (${String(m.toolName)})` : ''}`, '');
    const text = contentText(m.content) || (typeof m.summary === 'string' ? m.summary : '');
    const fence = text.includes('```') ? '````' : '```';
    lines.push(fence, text, fence, '');
  });
  return lines.join('\n');
}

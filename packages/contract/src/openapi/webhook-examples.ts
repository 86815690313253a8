/**
 * The event body examples of docs/webhooks.md ("Examples"), read from its Markdown: a
 * `#### \`type\`` heading (with an optional variant in parentheses), then a `pointers`/`text`
 * label (none for `test`), then a ```json block. `npm run docs:openapi` writes them to
 * webhook-examples.json, which the document uses (docs/ is not shipped with the service);
 * the OpenAPI test fails when that file is stale.
 */
export type WebhookExamples = Record<string, Record<string, unknown>>;

export function examplesFromMarkdown(md: string): WebhookExamples {
  const out: WebhookExamples = {};
  const start = md.indexOf('### Examples');
  if (start < 0) throw new Error('docs/webhooks.md has no "### Examples" section');
  const lines = md.slice(start).split('\n');
  let type: string | null = null;
  let variant = '';
  let mode = 'pointers';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^##\s/.test(line) || (/^###\s/.test(line) && i > 0)) break;
    const heading = /^####\s+`([^`]+)`(?:\s+\(([^)]+)\))?/.exec(line);
    if (heading) {
      type = heading[1];
      variant = heading[2] ? heading[2].replace(/[^a-z0-9]+/gi, '_').replace(/^_|_$/g, '').toLowerCase() : '';
      mode = 'pointers';
      continue;
    }
    const label = /^`(pointers|text)`:/.exec(line);
    if (label) mode = label[1];
    if (line.trim() === '```json' && type) {
      const end = lines.indexOf('```', i + 1);
      const body = JSON.parse(lines.slice(i + 1, end).join('\n')) as unknown;
      (out[type] ??= {})[variant ? `${mode}_${variant}` : mode] = body;
      i = end;
    }
  }
  return out;
}

import fs from 'node:fs';
import path from 'node:path';
import { TOOLS } from '../src/tools';
import { renderReference, withReference } from '../src/docs/reference';

const DOC = path.resolve(__dirname, '..', '..', '..', 'docs', 'mcp.md');

describe('docs/mcp.md (the tool reference is generated from the tool definitions)', () => {
  test('the reference in docs/mcp.md is what `npm run docs:mcp` generates now (run it after changing a tool)', () => {
    const doc = fs.readFileSync(DOC, 'utf8');
    expect(doc).toBe(withReference(doc));
  });

  test('the reference names every tool with its REST endpoint, scope, annotations and input fields', () => {
    const ref = renderReference();
    for (const t of TOOLS) {
      expect(ref).toContain(`#### \`${t.name}\``);
      expect(ref).toContain(`- REST: \`${t.method} ${t.path}\``);
      for (const field of Object.keys(t.input.shape)) expect(ref).toContain(`| \`${field}\` |`);
    }
    expect(ref).toContain('destructiveHint true');
  });

  test('a changed tool makes the stored file stale', () => {
    const doc = fs.readFileSync(DOC, 'utf8');
    expect(withReference(doc.replace('Lists the channels this identity can see', 'Something else'))).not.toBe(
      doc.replace('Lists the channels this identity can see', 'Something else'),
    );
  });
});

import type { PoolClient, QueryResultRow } from 'pg';
import type { Statement } from '@teamchat/db';

/**
 * The rule every by-key statement keeps (DatabaseOptions.byKeyPool: one generic plan per
 * statement, made on whatever statistics the tables had then): it reaches every table through an
 * index condition on the index's leading column (its key), at every table size; how it joins its
 * own inputs (arrays, CTEs) is the planner's. Checked on an empty database, the worst statistics
 * there are: on an empty table a scan of a whole index costs as little as a lookup, and a plan
 * that took it then would walk the table's length on every call once the table filled.
 */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

/**
 * Plans each statement with NULL parameters on `client` (a by-key session) and answers what
 * breaks the rule: a table scanned, or an index walked (its key not compared for equality
 * first). `designedScans`: per statement, indexes it walks by design.
 */
export async function byKeyPlanProblems(
  client: PoolClient,
  statements: Array<Statement<QueryResultRow>>,
  designedScans: Record<string, string[]> = {},
): Promise<string[]> {
  // Each index's leading column, to tell a lookup by key from a walk of the index.
  const leading = new Map((await client.query<{ index: string; col: string }>(`
    SELECT c.relname AS index, a.attname AS col
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]`)).rows.map((r) => [r.index, r.col]));
  const problems: string[] = [];
  for (const st of statements) {
    const params = Math.max(0, ...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    await client.query(`PREPARE probe AS ${st.text}`);
    try {
      const [row] = (await client.query(`EXPLAIN (FORMAT JSON) EXECUTE probe(${new Array(params).fill('NULL').join(', ')})`)).rows;
      for (const n of nodesOf(row['QUERY PLAN'][0].Plan as PlanNode)) {
        const type = n['Node Type'];
        // A hash join or a materialized side is fine between a statement's own inputs (its
        // arrays, its CTEs): a table reached in one is still reached by key, as checked below.
        if (['Seq Scan', 'Bitmap Heap Scan', 'Bitmap Index Scan', 'Tid Scan'].includes(type)) problems.push(`${st.name}: ${type} ${n['Relation Name'] ?? ''}`);
        if (type !== 'Index Scan' && type !== 'Index Only Scan') continue;
        const index = n['Index Name']!;
        if (designedScans[st.name]?.includes(index)) continue;
        const col = leading.get(index);
        const cond = n['Index Cond'] ?? '';
        // The key column compared for equality first, e.g. "(id = ANY ($1))" or "((id = ANY ($1)) AND (created_at >= $7) ...".
        if (!col || !new RegExp(`^\\(+(\\w+\\.)?${col} = `).test(cond)) problems.push(`${st.name}: ${index} walked (${cond || 'no index condition'})`);
      }
    } finally {
      await client.query('DEALLOCATE probe');
    }
  }
  return problems;
}

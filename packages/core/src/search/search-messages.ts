import { and, channelMembers, desc, eq, messages, sql, type Executor } from '@teamchat/db';

/** `LIKE` wildcards in the query are matched literally. */
function likePattern(query: string): string {
  return `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Messages whose text contains `query` (case-insensitive), in the channels and DMs the identity
 * is a member of, newest first. Keyset on (ts_micros, channel_id): ts is unique per channel only.
 */
export function searchMessages(
  db: Executor,
  input: { accountId: string; identityId: string; query: string; limit: number; after: [string, string] | null },
) {
  const after = input.after
    ? sql`(${messages.tsMicros}, ${messages.channelId}) < (${BigInt(input.after[0])}, ${input.after[1]})`
    : undefined;
  return db
    .select({ message: messages })
    .from(messages)
    .innerJoin(channelMembers, and(eq(channelMembers.channelId, messages.channelId), eq(channelMembers.identityId, input.identityId)))
    .where(and(eq(messages.accountId, input.accountId), sql`${messages.text} ILIKE ${likePattern(input.query)} ESCAPE '\\'`, after))
    .orderBy(desc(messages.tsMicros), desc(messages.channelId))
    .limit(input.limit + 1)
    .then((rows) => rows.map((r) => r.message));
}

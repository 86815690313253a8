/**
 * When a failed batch of posts may be written again post by post (post-batch.ts): only when
 * PostgreSQL answered an error of the statement itself, so the batch surely rolled back. After a
 * lost connection the batch may have committed, and writing its posts again could post one twice.
 */
import { surelyRolledBack } from '../src/messaging/messages/post-batch';

/** As pg rejects with PostgreSQL's ErrorResponse (a DatabaseError: severity and SQLSTATE). */
const pgError = (code: string) => Object.assign(new Error('from PostgreSQL'), { code, severity: 'ERROR' });
/** As node rejects a socket's failure (an errno code, no severity). */
const socketError = (code: string) => Object.assign(new Error('socket'), { code });

test('errors of the statement itself: written again post by post', () => {
  for (const code of ['P0001', '23505', '40P01', '40001', '22021', '42P01', '55P03', '57014']) {
    expect(surelyRolledBack(pgError(code))).toBe(true);
  }
});

test('a lost connection, an operator or system intervention: the batch may have committed, so its posts fail', () => {
  for (const code of ['08006', '08003', '57P01', '57P02', '58030', 'XX000']) expect(surelyRolledBack(pgError(code))).toBe(false);
  // node's own socket errors carry an errno code, not a SQLSTATE
  for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT']) expect(surelyRolledBack(socketError(code))).toBe(false);
  expect(surelyRolledBack(new Error('Connection terminated unexpectedly'))).toBe(false);
  expect(surelyRolledBack(undefined)).toBe(false);
});

import { DATE_TIME_MAX, DATE_TIME_MIN, dateTimeSchema, isBlank, parseDateTime, queryInteger } from '../src/input-rules';

/** docs/api.md "Hostile input", strict input: the shared rules on their own. */
describe('parseDateTime: strict RFC 3339, 1970-01-01T00:00:00Z..9999-12-31T23:59:59.999Z', () => {
  test.each([
    ['2024-01-31T09:30:00Z', '2024-01-31T09:30:00.000Z'],
    ['2024-01-31T10:30:00+01:00', '2024-01-31T09:30:00.000Z'],
    ['2024-01-31T09:30:00.5Z', '2024-01-31T09:30:00.500Z'],
    ['2024-01-31T09:30:00.123456789-00:30', '2024-01-31T10:00:00.123Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['1969-12-31T23:30:00-01:00', '1970-01-01T00:30:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('%s is %s', (text, iso) => {
    expect(parseDateTime(text)?.toISOString()).toBe(iso);
  });

  test.each([
    '+275760-09-13T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '0000-01-01T00:00:00Z', '0075-01-01T00:00:00Z',
    '1969-12-31T23:59:59.999Z', '9999-12-31T23:59:59-01:00', '2024-01-01', '2024-01-01 10:00', '2024-01-01T10:00',
    '2024-01-01T10:00:00', '2024-01-01t10:00:00z', '2023-02-29T00:00:00Z', '2024-04-31T00:00:00Z', '2024-13-01T00:00:00Z',
    '2024-01-01T24:00:00Z', '2016-12-31T23:59:60Z', '2024-01-01T10:00:00+24:00', '2024-01-01T10:00:00+0100',
    '2024-01-01T10:00:00.Z', '2024-01-01T10:00:00.1234567891Z', ' 2024-01-01T10:00:00Z', '1700000000',
  ])('%s is refused', (text) => {
    expect(parseDateTime(text)).toBeNull();
    expect(dateTimeSchema.validate(text).error?.details[0].type).toMatch(/^date\./);
  });

  test('the bounds are the documented ones, and the schema converts to a Date', () => {
    expect([DATE_TIME_MIN.toISOString(), DATE_TIME_MAX.toISOString()]).toEqual(['1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']);
    expect(dateTimeSchema.validate('2024-01-31T10:30:00+01:00').value).toEqual(new Date('2024-01-31T09:30:00Z'));
    expect(dateTimeSchema.validate(1_700_000_000_000).error).toBeDefined();
  });
});

describe('queryInteger: digits only, then converted', () => {
  const limit = queryInteger().min(1).max(200);
  test.each(['5', '007', '200'])('%s passes', (v) => expect(limit.validate(v).error).toBeUndefined());
  test.each([' 5 ', '2e1', '+5', '-1', '5.0', '0x10', '5 ', '１２'])('%j is refused', (v) => expect(limit.validate(v).error).toBeDefined());
});

describe('isBlank: white space and characters that show nothing', () => {
  test.each([
    '', ' \t\n', '\u00a0\u3000', '\u200b\u200b', '\u2800', '\u3164', '\u115f\u1160', '\uffa0',
    '\u200c\u200d\u2060\ufeff\u00ad\u200e\u202e', '\u{e0041}\u{e007f}',
  ])('%j is blank', (t) => expect(isBlank(t)).toBe(true));
  test.each(['a', '\u200ba', '😀', '\u3164x', '.'])('%j is not', (t) => expect(isBlank(t)).toBe(false));
});

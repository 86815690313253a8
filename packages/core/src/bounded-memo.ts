/**
 * Process-local memos of at most `max` entries: when full, a new key makes the map start over.
 * Cheaper than LRU bookkeeping, and right for values that are cheap to compute again and never
 * change for their key (an address's verdict, a secret's decoded key, a post's fixed facts).
 */

/** Remembers `value` under `key` (the map is cleared first when it is full and the key is new); answers `value`. */
export function rememberBounded<K, V>(map: Map<K, V>, max: number, key: K, value: V): V {
  if (map.size >= max && !map.has(key)) map.clear();
  map.set(key, value);
  return value;
}

/** The value remembered for `key`, or `compute(key)`, remembered (bounded). */
export function memoBounded<K, V>(map: Map<K, V>, max: number, key: K, compute: (key: K) => V): V {
  const hit = map.get(key);
  return hit !== undefined ? hit : rememberBounded(map, max, key, compute(key));
}

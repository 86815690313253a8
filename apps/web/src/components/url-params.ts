import { useRef } from 'react';
import { useSearchParams } from 'react-router';

export interface SetParamsOptions {
  /** Rewrite the current history entry instead of adding one: only to normalise the URL, never for a person's choice. Default false. */
  replace?: boolean;
  /**
   * A change made while typing (a text filter applied on each keystroke): the first keystroke
   * adds a history entry, the next ones to the same fields rewrite it, so Back undoes the
   * whole word rather than one letter. Default false.
   */
  typing?: boolean;
}

/**
 * A page's filters kept in its URL (shareable, back-button friendly): each change the person
 * makes is a history entry, so Back undoes it. `set` starts from the URL as it is at the moment
 * of the call, not from the last render: two changes in a row (a search submitted, then its sort
 * picked before the page re-rendered) must both stay, where a copy of the rendered params would
 * put the first one back.
 */
export function useUrlParams(): [URLSearchParams, (changes: Record<string, string>, options?: SetParamsOptions) => void] {
  const [params, setParams] = useSearchParams();
  // the fields of the last typing change and the URL it left, to coalesce the next keystroke
  const typing = useRef<{ fields: string; search: string } | null>(null);
  const set = (changes: Record<string, string>, options: SetParamsOptions = {}) => {
    const next = new URLSearchParams(window.location.search);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    const fields = Object.keys(changes).sort().join(',');
    const last = typing.current;
    const sameWord = options.typing === true && last !== null && last.fields === fields && last.search === window.location.search;
    const search = next.toString();
    if (search === new URLSearchParams(window.location.search).toString()) return;
    setParams(next, { replace: options.replace === true || sameWord });
    typing.current = options.typing ? { fields, search: search ? `?${search}` : '' } : null;
  };
  return [params, set];
}

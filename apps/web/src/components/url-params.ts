import { useSearchParams } from 'react-router';

/**
 * A page's filters kept in its URL (shareable, back-button friendly). `set` starts from the URL
 * as it is at the moment of the call, not from the last render: two changes in a row (a search
 * submitted, then its sort picked before the page re-rendered) must both stay, where a copy of
 * the rendered params would put the first one back.
 */
export function useUrlParams(): [URLSearchParams, (changes: Record<string, string>) => void] {
  const [params, setParams] = useSearchParams();
  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(window.location.search);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    setParams(next, { replace: true });
  };
  return [params, set];
}

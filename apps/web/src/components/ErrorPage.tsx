import { useEffect } from 'react';
import { isRouteErrorResponse, Link, useParams, useRouteError } from 'react-router';
import { useSession } from '../api/hooks';
import { NotFoundPage } from '../pages/NotFound';
import { documentTitle } from './Layout';

/**
 * The routes' error boundary (`errorElement`): a page that failed to draw shows a plain
 * "Something went wrong" with a way back, never the router's developer page. The error goes to
 * the console for whoever debugs it; the person sees no stack.
 */
export function ErrorPage() {
  const error = useRouteError();
  const { accountId } = useParams();
  const session = useSession();
  const notFound = isRouteErrorResponse(error) && error.status === 404;
  useEffect(() => {
    if (!notFound) console.error(error);
    document.title = documentTitle(notFound ? 'Page not found' : 'Something went wrong');
  }, [error, notFound]);
  const home = accountId && session?.accounts.some((a) => a.id === accountId) ? `/a/${accountId}/channels` : session ? '/accounts' : '/';
  return (
    <main id="main" tabIndex={-1} className="standalone">
      {notFound ? (
        <NotFoundPage />
      ) : (
        <>
          <h1>Something went wrong</h1>
          <p>This page could not be shown. Reload to try again, or go back.</p>
          <p className="row">
            <Link to={home}>{accountId && home.startsWith('/a/') ? 'Back to the account' : 'Back to the start'}</Link>
            <button type="button" onClick={() => window.location.reload()}>
              Reload
            </button>
          </p>
        </>
      )}
    </main>
  );
}

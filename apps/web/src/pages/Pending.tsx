import { useQuery } from '@tanstack/react-query';
import { client } from '../api/client';
import { useAccountId } from '../api/hooks';
import { EmptyState } from '../components/ui';

/**
 * Files and Mirrors sit on routes that are still being built. The Files page asks its route
 * once; until it answers, an empty state says what to do instead.
 */
function useRouteAnswers(path: string, query?: Record<string, string>) {
  const accountId = useAccountId();
  return useQuery({
    queryKey: ['probe', accountId, path],
    queryFn: async () => {
      const r = await client.GET<unknown>(path, { params: { path: { accountId }, query } });
      return r.response.status !== 404;
    },
  });
}

export function FilesPage() {
  const live = useRouteAnswers('/accounts/{accountId}/files');
  return (
    <>
      <h1>Files</h1>
      <EmptyState title={live.data ? 'Files are coming to this page' : 'Files are not available on this server yet'}>
        <p>
          Uploads, the file list and downloads appear here once this server has the files routes. Until then, attach a link to a message in{' '}
          <strong>Channels</strong>.
        </p>
      </EmptyState>
    </>
  );
}

export function MirrorsPage() {
  return (
    <>
      <h1>Mirrors</h1>
      <EmptyState title="Mirrors are not available on this server yet">
        <p>
          A mirror posts chosen channels as text into another chat tool’s incoming-webhook URL. Until this server has the mirror routes, use a webhook
          endpoint with the text payload (Webhooks → Add endpoint) and forward from your receiver.
        </p>
      </EmptyState>
    </>
  );
}

import { createBrowserRouter, Navigate, useParams } from 'react-router';
import { Layout, TitledOutlet, type RouteHandle } from './components/Layout';
import { ErrorPage } from './components/ErrorPage';
import { SignInPage } from './pages/SignIn';
import { AccountPickerPage } from './pages/AccountPicker';
import { WebhooksPage } from './pages/webhooks/Webhooks';
import { EndpointPage } from './pages/webhooks/Endpoint';
import { ApprovalsPage } from './pages/Approvals';
import { ApiKeysPage } from './pages/ApiKeys';
import { AgentsPage } from './pages/Agents';
import { AuditPage } from './pages/Audit';
import { AccountPage } from './pages/Account';
import { MembersPage } from './pages/Members';
import { ChannelsPage } from './pages/messaging/Channels';
import { DirectMessagesPage } from './pages/messaging/DirectMessages';
import { FilesPage } from './pages/files/Files';
import { MirrorsPage } from './pages/mirrors/Mirrors';
import { MirrorPage } from './pages/mirrors/Mirror';
import { SearchPage } from './pages/Search';
import { NotFoundPage } from './pages/NotFound';

/** The approval link a credential receives is the API path; a person following it lands on the Approvals page. */
function ApprovalLink() {
  const { accountId, approvalId } = useParams();
  return <Navigate replace to={`/a/${accountId}/approvals/${approvalId}`} />;
}

const t = (title: string): RouteHandle => ({ title });

/**
 * Deep links: every page and its filters live in the URL (`/a/{accountId}/webhooks/{endpointId}/deliveries?status=dead`).
 * One pathless root sets the document title from the deepest route's `handle` ("Channels · teamchat")
 * and is the error boundary of every page (ErrorPage, never the router's developer page).
 */
export const router = createBrowserRouter([
  {
    element: <TitledOutlet />,
    errorElement: <ErrorPage />,
    children: [
      { path: '/', element: <SignInPage />, handle: t('Sign in') },
      { path: '/accounts', element: <AccountPickerPage />, handle: t('Accounts') },
      { path: '/accounts/:accountId/approvals/:approvalId', element: <ApprovalLink /> },
      {
        path: '/a/:accountId',
        element: <Layout />,
        children: [
          { index: true, element: <Navigate replace to="channels" /> },
          { path: 'channels', element: <ChannelsPage />, handle: t('Channels') },
          { path: 'channels/:channelId', element: <ChannelsPage />, handle: t('Channels') },
          { path: 'channels/:channelId/threads/:threadTs', element: <ChannelsPage />, handle: t('Channels') },
          { path: 'dms', element: <DirectMessagesPage />, handle: t('Direct messages') },
          { path: 'dms/:channelId', element: <DirectMessagesPage />, handle: t('Direct messages') },
          { path: 'dms/:channelId/threads/:threadTs', element: <DirectMessagesPage />, handle: t('Direct messages') },
          { path: 'webhooks', element: <WebhooksPage />, handle: t('Webhooks') },
          { path: 'webhooks/:endpointId', element: <EndpointPage />, handle: t('Endpoint') },
          { path: 'webhooks/:endpointId/deliveries', element: <EndpointPage />, handle: t('Endpoint') },
          { path: 'mirrors', element: <MirrorsPage />, handle: t('Mirrors') },
          { path: 'mirrors/:mirrorId', element: <MirrorPage />, handle: t('Mirror') },
          { path: 'files', element: <FilesPage />, handle: t('Files') },
          { path: 'search', element: <SearchPage />, handle: t('Search') },
          { path: 'api-keys', element: <ApiKeysPage />, handle: t('API keys') },
          { path: 'agents', element: <AgentsPage />, handle: t('Agents') },
          { path: 'approvals', element: <ApprovalsPage />, handle: t('Approvals') },
          { path: 'approvals/:approvalId', element: <ApprovalsPage />, handle: t('Approvals') },
          { path: 'audit', element: <AuditPage />, handle: t('Audit log') },
          { path: 'account', element: <AccountPage />, handle: t('Account') },
          { path: 'members', element: <MembersPage />, handle: t('Members') },
          { path: '*', element: <NotFoundPage />, handle: t('Page not found') },
        ],
      },
      { path: '*', element: <NotFoundPage />, handle: t('Page not found') },
    ],
  },
]);

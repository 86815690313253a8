import { createBrowserRouter, Navigate, useParams } from 'react-router';
import { Layout } from './components/Layout';
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

/** Deep links: every page and its filters live in the URL (`/a/{accountId}/webhooks/{endpointId}/deliveries?status=dead`). */
export const router = createBrowserRouter([
  { path: '/', element: <SignInPage /> },
  { path: '/accounts', element: <AccountPickerPage /> },
  { path: '/accounts/:accountId/approvals/:approvalId', element: <ApprovalLink /> },
  {
    path: '/a/:accountId',
    element: <Layout />,
    children: [
      { index: true, element: <Navigate replace to="channels" /> },
      { path: 'channels', element: <ChannelsPage /> },
      { path: 'channels/:channelId', element: <ChannelsPage /> },
      { path: 'channels/:channelId/threads/:threadTs', element: <ChannelsPage /> },
      { path: 'dms', element: <DirectMessagesPage /> },
      { path: 'dms/:channelId', element: <DirectMessagesPage /> },
      { path: 'dms/:channelId/threads/:threadTs', element: <DirectMessagesPage /> },
      { path: 'webhooks', element: <WebhooksPage /> },
      { path: 'webhooks/:endpointId', element: <EndpointPage /> },
      { path: 'webhooks/:endpointId/deliveries', element: <EndpointPage /> },
      { path: 'mirrors', element: <MirrorsPage /> },
      { path: 'mirrors/:mirrorId', element: <MirrorPage /> },
      { path: 'files', element: <FilesPage /> },
      { path: 'search', element: <SearchPage /> },
      { path: 'api-keys', element: <ApiKeysPage /> },
      { path: 'agents', element: <AgentsPage /> },
      { path: 'approvals', element: <ApprovalsPage /> },
      { path: 'approvals/:approvalId', element: <ApprovalsPage /> },
      { path: 'audit', element: <AuditPage /> },
      { path: 'account', element: <AccountPage /> },
      { path: 'members', element: <MembersPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
  { path: '*', element: <NotFoundPage /> },
]);

import { Link, Navigate } from 'react-router';
import { useSession } from '../api/hooks';
import { SignOutButton } from '../components/Layout';

export function AccountPickerPage() {
  const session = useSession();
  if (!session) return <Navigate replace to="/" />;
  return (
    <main id="main" className="picker">
      <header className="top">
        <span className="brand">teamchat</span>
        <span className="user">{session.user.email}</span>
        <SignOutButton />
      </header>
      <h1>Choose an account</h1>
      {session.accounts.length === 0 ? (
        <p>You have no seat in any account yet. Ask an owner to add you.</p>
      ) : (
        <ul className="cards">
          {session.accounts.map((a) => (
            <li key={a.id}>
              <Link to={`/a/${a.id}/channels`}>{a.name}</Link> <span className="muted">{a.role} · {a.plan} · {a.state}</span>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}

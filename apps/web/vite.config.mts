import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

/**
 * `npm run dev:web`: Vite with hot reload; API calls (and /auth) go to the web host the way the
 * built app reaches it, same origin, so the session cookie and X-CSRF-Token work unchanged.
 * The web host of `npm start` listens on 3001 (WEB_PORT).
 */
const webHost = 'http://localhost:3001';
/** A browser's navigation to an app path (an approval link) gets the app, not the API's JSON. */
const appOnNavigation = (req: { headers: Record<string, string | string[] | undefined> }) =>
  String(req.headers.accept ?? '').includes('text/html') ? '/index.html' : undefined;

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false },
  server: {
    proxy: {
      '/accounts': { target: webHost, bypass: appOnNavigation },
      '/auth': { target: webHost },
      // the local driver's upload URL is on PUBLIC_WEB_URL: uploads work here when it is this server's origin
      '/uploads': { target: webHost },
    },
  },
});

/**
 * `@teamchat/client`: what a program talking to the service uses: the receiver kit (verify a
 * webhook delivery; node:crypto only) and the typed REST client (`createApiClient`, generated
 * from docs/openapi.json by `npm run docs:openapi`, on openapi-fetch).
 */
export * from './receiver';
export * from './api';

/**
 * `@teamchat/client`: what a program talking to the service uses. Today the receiver kit
 * (verify a webhook delivery); it depends on nothing of the server (node:crypto only).
 */
export * from './receiver';

// Messaging domain (channels, messages, threads, reactions, DMs, approvals, outbox events): filled by the messaging issue.
export {};

/** Job type names of this domain (kept apart so use cases can name a job without loading its handler). */
export const MESSAGE_DELETE_JOB = 'message.delete';

import { redisOutageScenario } from './support/redis-outage';

/** The scenario's one redis-server killed under load and started again empty (support/redis-outage.ts). */
redisOutageScenario('single');

export { createMcpApp, type McpApp, type McpAppOptions } from './app';
export { TOOLS } from './tools';

export { createBatonClient, BatonClient, type AgentClientOptions, type TaskBox, type TaskFilter } from './client/agent.js';
export { createAdminClient, AdminClient, type AdminClientOptions, type NewAgent } from './client/admin.js';
export * from './errors.js';
export * from './schemas.js';
export { loadConfig, defaults, type BatonConfig } from './config.js';
export { startStack, type Stack, type StackOptions, type StackEnv } from './stack/index.js';
export { mintAgentToken, mintApiKey } from './tokens.js';
export { createAgent, BatonAgent, type AgentOptions } from './agent/daemon.js';
export { RetryableError, RETRY_EXIT_CODE, type Executor, type Executors, type ExecutorContext, type Handler, type ShellExecutor } from './agent/executors.js';

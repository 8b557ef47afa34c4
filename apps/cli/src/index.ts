export { type Config, loadConfig, SETTINGS } from './config.ts';
export { type StartTaskgateOptions, startTaskgate, type TaskgateHandle } from './embed.ts';
export { type Io, main, USAGE } from './main.ts';

export { type Config, loadConfig, SETTINGS } from './config.ts';
export { type Io, main, USAGE } from './main.ts';

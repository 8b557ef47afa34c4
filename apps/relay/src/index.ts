export { type RelayRole, type RelayRoleOptions, startRelayRole } from './relay-role.ts';

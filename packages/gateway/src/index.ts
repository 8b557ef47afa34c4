export {
  DownstreamConnection,
  DownstreamError,
  type DownstreamOptions,
  type InFlightRequest,
  type StdioDownstream,
} from './downstream-connection.ts';
export { gatewayTools } from './gateway-tools.ts';

export {
  DownstreamConnection,
  DownstreamError,
  type DownstreamErrorKind,
  type DownstreamOptions,
  type HttpDownstream,
  type InFlightRequest,
  type StdioDownstream,
} from './downstream-connection.ts';
export { gatewayTools } from './gateway-tools.ts';

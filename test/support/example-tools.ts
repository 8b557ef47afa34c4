import { tools as conformance } from '../../examples/conformance/index.ts';
import { tools as demo } from '../../examples/demo/index.ts';
import { tools as ledger } from '../../examples/ledger/index.ts';

/** What `taskgate start` serves with no module given: the demo and ledger example modules. */
export const builtinTools = [...demo, ...ledger];
/** The MCP conformance fixtures (TASKGATE_CONFORMANCE=1). */
export const conformanceTools = conformance;

import { isTaskgateError } from '@taskgate/errors';
import type { ResourceTemplateDefinition } from '@taskgate/sdk';
import { type ContentSet, UriTemplate } from '@taskgate/tools';
import type { TaskService } from '../../tasks/task-service.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import { taskError, withServerInfo } from './call-results.ts';
import { taskFields } from './task-results.ts';

export const TASK_RESOURCE_TEMPLATE = 'taskgate://tasks/{id}';
const TASKS = new UriTemplate(TASK_RESOURCE_TEMPLATE);

/** The task id a `taskgate://tasks/{id}` URI names, or undefined for any other URI. */
export function taskIdOfUri(uri: string): string | undefined {
  return TASKS.match(uri)?.id;
}

/**
 * Whether the tenant has the task `uri` names (a malformed id names none). Undefined for a URI
 * that is not a task's. A database outage throws (the caller's 503), rather than reading as "no".
 */
export async function hasTaskResource(
  service: TaskService,
  tenantId: string,
  uri: string,
): Promise<boolean | undefined> {
  const id = taskIdOfUri(uri);
  if (id === undefined) return undefined;
  try {
    await service.get(tenantId, id);
    return true;
  } catch (error) {
    if (isTaskgateError(error, 'TG_TASK_NOT_FOUND')) return false;
    throw error;
  }
}

/**
 * Taskgate's own resources: each task of the caller's tenant at `taskgate://tasks/{id}`, as JSON
 * (its fields, and by status its result, its error or its input requests). Any client of any
 * revision can so refetch the outcome of a call whose answer it lost, with no Tasks support of its
 * own. Another tenant's task, or an id that names none, is resource-not-found.
 */
export function taskResources(service: TaskService, server: ServerIdentity): ContentSet {
  const template: ResourceTemplateDefinition = {
    uriTemplate: TASK_RESOURCE_TEMPLATE,
    name: 'task',
    title: 'A Taskgate task',
    description:
      "A task of the caller's tenant: its status, and its result, error or input requests. Task ids are in tools/call's task results and in the REST API.",
    mimeType: 'application/json',
    async read(uri, variables, ctx) {
      try {
        const task = await service.get(ctx.tenant, variables.id as string);
        const view: Record<string, unknown> = {
          ...taskFields(task),
          tool: task.tool,
          ...(task.progress ? { progress: task.progress } : {}),
        };
        if (task.status === 'completed')
          view.result = withServerInfo((task.result ?? { content: [] }) as Record<string, unknown>, server);
        else if (task.status === 'failed') view.error = taskError(task);
        else if (task.status === 'input_required') view.inputRequests = task.inputRequests ?? {};
        return [{ uri, mimeType: 'application/json', text: JSON.stringify(view) }];
      } catch (error) {
        if (isTaskgateError(error, 'TG_TASK_NOT_FOUND')) return null;
        throw error;
      }
    },
  };
  return { resourceTemplates: [template] };
}

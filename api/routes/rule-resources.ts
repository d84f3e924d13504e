/**
 * `/api/v3/actions`, `/api/v3/resource_types` and `/api/v3/resources` (spec: Rule engine:
 * actions and resource types, resources), and EMQ X 4.4's `/resource_status/:id` and
 * `/rule_events`. Actions and resource types are read-only (defined by code); resources are
 * created with `{name?, type, config, description?}`, changed with `{config?, description?}`,
 * restarted (`POST /resources/:id`) and deleted unless a rule uses them. Thin: the work is in
 * rules/rule-ops.ts.
 */
import { defineRoutes, type JsonSchema, type RouteDef } from '../route-table.js'
import {
  actionsOfType, createResource, deleteResource, listActions, listRuleEvents, listResources, listResourceTypes, resourcesOfType,
  resourceStatus, restartResource, showAction, testResource, showResource, showResourceType, updateResource, type ResourceInput, type ResourcePatch
} from '../../rules/rule-ops.js'

const RESOURCE_BODY: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'named variant: the id becomes <type>:<name>' },
    type: { type: 'string', description: 'a resource type, e.g. web_hook' },
    config: { type: 'object', description: "checked against the type's params (web_hook: url, headers, method, request_timeout)" },
    description: { type: 'string' }
  },
  required: ['type']
}

const RESOURCE_PATCH_BODY: JsonSchema = {
  type: 'object',
  properties: {
    config: { type: 'object', description: "the whole new config, checked against the type's params; ****** (as shown) keeps a secret's stored value" },
    description: { type: 'string' }
  }
}

/** The action, resource type and resource endpoints. */
export const RULE_ENGINE_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'list_actions',
    method: 'GET',
    path: '/actions',
    descr: 'List actions (?for=<event>: those that can serve the event)',
    handler: (req) => ({ data: listActions(req.rules, req.query.for) })
  },
  {
    name: 'show_action',
    method: 'GET',
    path: '/actions/:name',
    descr: 'Show an action',
    handler: (req) => ({ data: showAction(req.rules, req.params.name) })
  },
  {
    name: 'list_resource_types',
    method: 'GET',
    path: '/resource_types',
    descr: 'List resource types',
    handler: (req) => ({ data: listResourceTypes(req.rules) })
  },
  {
    name: 'show_resource_type',
    method: 'GET',
    path: '/resource_types/:type',
    descr: 'Show a resource type',
    handler: (req) => ({ data: showResourceType(req.rules, req.params.type) })
  },
  {
    name: 'list_resources_by_type',
    method: 'GET',
    path: '/resource_types/:type/resources',
    descr: 'List the resources of a resource type',
    handler: (req) => ({ data: resourcesOfType(req.rules, req.params.type) })
  },
  {
    name: 'list_actions_by_type',
    method: 'GET',
    path: '/resource_types/:type/actions',
    descr: 'List the actions of a resource type',
    handler: (req) => ({ data: actionsOfType(req.rules, req.params.type) })
  },
  {
    name: 'create_resource',
    method: 'POST',
    path: '/resources',
    descr: 'Create a resource (with ?test=true: check it and whether its server answers, storing nothing)',
    body: RESOURCE_BODY,
    handler: async (req) => {
      const { name, type, config, description } = req.body as ResourceInput
      if (req.query.test === 'true') { await testResource(req.rules, { name, type, config, description }); return undefined }
      return { data: await createResource(req.rules, { name, type, config, description }) }
    }
  },
  {
    name: 'list_resources',
    method: 'GET',
    path: '/resources',
    descr: 'List resources',
    handler: (req) => ({ data: listResources(req.rules, req.query.type) })
  },
  {
    name: 'show_resource',
    method: 'GET',
    path: '/resources/:id',
    descr: 'Show a resource with its status on every node',
    handler: async (req) => ({ data: await showResource(req.rules, req.params.id) })
  },
  {
    name: 'update_resource',
    method: 'PUT',
    path: '/resources/:id',
    descr: 'Change a resource\'s config and/or description (a secret sent back as ****** keeps its value)',
    body: RESOURCE_PATCH_BODY,
    handler: async (req) => {
      const { config, description } = req.body as ResourcePatch
      return { data: await updateResource(req.rules, req.params.id, { config, description }) }
    }
  },
  {
    name: 'start_resource',
    method: 'POST',
    path: '/resources/:id',
    descr: 'Restart a resource on every node (reconnect), once its backend answers from this node',
    handler: async (req) => {
      const failed = await restartResource(req.rules, req.params.id)
      return failed.length === 0 ? undefined : { data: null, failed }
    }
  },
  {
    name: 'get_resource_status',
    method: 'GET',
    path: '/resource_status/:id',
    descr: 'The health of a resource on this node, checked now',
    handler: async (req) => ({ data: await resourceStatus(req.rules, req.params.id) })
  },
  {
    name: 'list_events',
    method: 'GET',
    path: '/rule_events',
    descr: 'List the events a rule can hang on, with their columns',
    handler: () => ({ data: listRuleEvents() })
  },
  {
    name: 'delete_resource',
    method: 'DELETE',
    path: '/resources/:id',
    descr: 'Delete a resource no rule uses',
    handler: async (req) => { await deleteResource(req.rules, req.params.id); return undefined }
  }
])

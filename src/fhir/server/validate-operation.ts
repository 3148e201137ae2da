/**
 * `POST [base]/[type]/$validate` and `POST [base]/[type]/[id]/$validate` (R4 resource-operation-validate.html,
 * OperationDefinition http://hl7.org/fhir/OperationDefinition/Resource-validate).
 *
 * Input: the resource itself as the body, or a Parameters with `resource` (Resource), `mode` (code:
 * create | update | delete | profile) and `profile` (uri); `mode` and `profile` may also come in the URL.
 * Output: 200 with an OperationOutcome whether or not the resource is valid ("A 4xx or 5xx error means
 * that the validation itself could not be performed"): one issue per finding, with its path in
 * `expression`, the same rules every write meets (src/fhir/validation); a single `information` issue
 * when there is none. Per mode: update needs the resource's id, equal to the URL's [id] when given;
 * delete needs an instance ([id]) that exists and is not deleted, and takes no resource.
 * Nothing is stored.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { Resource } from '../store/types.js';
import { isR4Id } from '../validation/ids.js';
import { validationIssues, validationWarnings } from '../validation/validate.js';
import type { FhirContext, FhirRequest, FhirResponse } from './context.js';
import { localReferences } from './integrity.js';
import type { OperationOutcome } from './outcome.js';
import { isResourceType } from './resource-types.js';

type Issue = OperationOutcome['issue'][number];
const MODES = ['create', 'update', 'delete', 'profile'] as const;
type Mode = (typeof MODES)[number];

interface Input {
  resource?: unknown;
  mode?: string;
  profile?: string;
}

function invalid(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `$validate: ${detail}` });
}

/** The operation's inputs from a Parameters body (R4 parameters.html) or a bare resource, and the URL. */
function inputs(req: FhirRequest): Input {
  const input: Input = {};
  for (const [k, v] of req.params) {
    if (k === 'mode') input.mode = v;
    else if (k === 'profile') input.profile = v;
  }
  const body = req.body as { resourceType?: unknown; parameter?: unknown } | undefined;
  if (body === undefined) return input;
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('the body must be a resource or a Parameters resource');
  if (body.resourceType !== 'Parameters') return { ...input, resource: body };
  if (!Array.isArray(body.parameter)) return input;
  for (const p of body.parameter as Array<Record<string, unknown>>) {
    if (!p || typeof p !== 'object') throw invalid('a Parameters.parameter must be an object');
    if (p.name === 'resource') input.resource = p.resource;
    else if (p.name === 'mode' && typeof p.valueCode === 'string') input.mode = p.valueCode;
    else if (p.name === 'profile' && typeof (p.valueUri ?? p.valueCanonical) === 'string') input.profile = (p.valueUri ?? p.valueCanonical) as string;
    else throw invalid(`unknown or mistyped parameter "${String(p.name).slice(0, 40)}" (resource, mode as valueCode, profile as valueUri)`);
  }
  return input;
}

const error = (code: string, text: string, path?: string): Issue => ({ severity: 'error', code, diagnostics: text, ...(path ? { expression: [path] } : {}) });

export function validateHandler(ctx: FhirContext, req: FhirRequest): FhirResponse {
  const [type, second] = req.segments as [string, string];
  const id = second.startsWith('$') ? undefined : second;
  if (!isResourceType(type)) throw new HospitalApiError('ERR_FHIR_UNKNOWN_TYPE', { type });
  if (id !== undefined && !isR4Id(id)) throw new HospitalApiError('ERR_FHIR_INVALID_ID', { id: id.slice(0, 80) });
  const input = inputs(req);
  const mode = (input.mode ?? 'create') as Mode;
  if (!MODES.includes(mode)) throw invalid(`mode "${String(input.mode).slice(0, 40)}" is not one of ${MODES.join(', ')}`);
  // this server validates against R4's base StructureDefinitions only
  if (input.profile !== undefined && input.profile !== `http://hl7.org/fhir/StructureDefinition/${type}`) {
    throw invalid(`profile "${input.profile.slice(0, 200)}" is not known here; only http://hl7.org/fhir/StructureDefinition/${type} (R4's base definition) is`);
  }
  const issues: Issue[] = [];
  if (mode === 'delete') {
    if (id === undefined) throw invalid('mode delete validates an instance: POST [type]/[id]/$validate');
    const current = ctx.store.read(type, id);
    if (!current || current.deleted) issues.push(error('not-found', `${type}/${id} ${current ? 'was deleted' : 'does not exist'}: there is nothing to delete`));
  } else {
    if (input.resource === undefined) throw invalid(`mode ${mode} needs a resource (the body, or the "resource" parameter)`);
    const resource = input.resource as Resource;
    if (!resource || typeof resource !== 'object' || Array.isArray(resource) || resource.resourceType !== type) {
      issues.push(error('invalid', `the resource must be a ${type} (got ${Array.isArray(resource) ? 'an array' : typeof resource === 'object' && resource ? `resourceType "${String(resource.resourceType).slice(0, 60)}"` : typeof resource})`, `${type}.resourceType`));
    } else {
      for (const i of validationIssues(resource)) {
        issues.push({ severity: 'error', code: i.code ?? 'invalid', ...(i.details?.text ? { diagnostics: i.details.text } : {}), ...(i.expression ? { expression: i.expression } : {}) });
      }
      if (mode === 'update') {
        if (resource.id === undefined) issues.push(error('required', 'an update needs the id in the resource', `${type}.id`));
        else if (id !== undefined && resource.id !== id) issues.push(error('invalid', `the resource id "${String(resource.id).slice(0, 80)}" does not match the URL id "${id}"`, `${type}.id`));
      }
      // what the write would also refuse: a reference to a resource that is not stored (integrity.ts)
      if (issues.length === 0 && (mode === 'create' || mode === 'update') && ctx.policy.referentialIntegrity) {
        for (const [target, path] of localReferences(resource, ctx.base)) {
          const [t, i] = target.split('/') as [string, string];
          if (!ctx.store.exists(t, i) && !(t === type && (i === id || i === resource.id))) issues.push(error('not-found', `${target} is not stored on this server`, path));
        }
      }
    }
  }
  // codes outside an extensible binding: warnings only (issue #47), after the errors or the success message
  const warnings: Issue[] =
    mode === 'delete' || !input.resource || typeof input.resource !== 'object' || (input.resource as Resource).resourceType !== type
      ? []
      : validationWarnings(input.resource).map((w) => ({ severity: 'warning', code: w.code, ...(w.details?.text ? { diagnostics: w.details.text } : {}), ...(w.expression ? { expression: w.expression } : {}) }));
  const issue: Issue[] = [
    ...(issues.length ? issues : [{ severity: 'information', code: 'informational', diagnostics: `Validation successful (mode ${mode}): no errors against R4 ${type}` } as Issue]),
    ...warnings,
  ];
  return { status: 200, body: { resourceType: 'OperationOutcome', issue } };
}

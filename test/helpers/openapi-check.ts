import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { buildOpenApiDocument } from '../../src/http/openapi.js';

/**
 * Checks real API answers against the OpenAPI document the server serves: the status must be one the
 * document lists for that route, the media type the one it names, and a JSON body must match its
 * schema. The test helpers run every answer the integration tests get through `checkAnswer`, so the
 * document cannot drift from what the code sends without a test failing.
 */

interface DocumentedResponse {
  content?: Record<string, { schema: unknown }>;
}

interface DocumentedRoute {
  method: string;
  template: string;
  pattern: RegExp;
  params: number;
  responses: Record<string, DocumentedResponse>;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const DOCUMENT_ID = 'https://hookline.invalid/openapi.json';

const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, DocumentedResponse> }>>; components: { schemas: unknown } };
// `components` is not a JSON Schema keyword; strict mode would refuse the wrapper that holds them.
const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }));
ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: document.components.schemas } });

/** Literal paths before templated ones, so `/redrive` is not taken for `/{id}`. */
const routes: DocumentedRoute[] = Object.entries(document.paths)
  .flatMap(([template, methods]) =>
    Object.entries(methods).map(([method, operation]) => {
      const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
      return { method: method.toUpperCase(), template, pattern: new RegExp(`^${source}$`), params: (template.match(/\{/g) ?? []).length, responses: operation.responses };
    }),
  )
  .sort((a, b) => a.params - b.params);

const validators = new Map<unknown, ValidateFunction>();
/** A schema of the document, with its `#/components/...` references resolved inside the document. */
function validatorFor(schema: unknown): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`));
    validate = ajv.compile(rebased);
    validators.set(schema, validate);
  }
  return validate;
}
const errorValidator = validatorFor({ $ref: '#/components/schemas/Error' });

/** "METHOD /template" of every documented route that an answer was checked for, in this test file. */
export const checkedRoutes = new Set<string>();

/** Every documented route, as "METHOD /template". */
export const documentedRoutes: readonly string[] = routes.map((route) => `${route.method} ${route.template}`);

export interface CheckedAnswer {
  method: string;
  /** The request path; a query string is ignored. */
  path: string;
  status: number;
  contentType: string | null;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: unknown;
}

/** Why `answer` does not match the document, or null when it does. */
export function answerMismatch(answer: CheckedAnswer): string | null {
  const method = answer.method.toUpperCase();
  // HEAD and preflight answers have no body to check.
  if (method === 'HEAD' || method === 'OPTIONS') return null;
  const path = answer.path.split('?')[0]!;
  const route = routes.find((candidate) => candidate.method === method && candidate.pattern.test(path));
  const mediaType = (answer.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!route) {
    // Not an API route (the dashboard, an unknown path): an error from Hookline still has the error shape.
    if (answer.status >= 400 && mediaType === 'application/json' && !errorValidator(answer.body)) {
      return `${method} ${path} → ${answer.status}: not the documented error shape: ${ajv.errorsText(errorValidator.errors)}`;
    }
    return null;
  }
  const where = `${method} ${route.template} → ${answer.status}`;
  const response = route.responses[String(answer.status)];
  if (!response) return `${where}: status ${answer.status} is not documented for this route (documented: ${Object.keys(route.responses).join(', ')})`;
  checkedRoutes.add(`${route.method} ${route.template}`);
  const content = response.content ?? {};
  if (Object.keys(content).length === 0) return answer.body === null || answer.body === '' ? null : `${where}: the document says no body, got ${JSON.stringify(answer.body).slice(0, 200)}`;
  const documented = content[mediaType];
  if (!documented) return `${where}: content type ${answer.contentType} is not documented (documented: ${Object.keys(content).join(', ')})`;
  const validate = validatorFor(documented.schema);
  if (validate(answer.body)) return null;
  return `${where}: the body does not match the document: ${ajv.errorsText(validate.errors, { separator: '; ' })}\nbody: ${JSON.stringify(answer.body).slice(0, 1000)}`;
}

/** Throws when `answer` does not match the document. */
export function checkAnswer(answer: CheckedAnswer): void {
  const mismatch = answerMismatch(answer);
  if (mismatch) throw new Error(`API answer differs from docs/openapi.json: ${mismatch}`);
}

/**
 * A fetch for the SDK client that checks every answer against the document before the client reads
 * it. Mismatches are also kept in `mismatches`, for a check at the end of the test: a client call the
 * test expects to fail would otherwise hide one.
 */
export function checkingFetch(mismatches: string[]): typeof fetch {
  return async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const request = input instanceof Request ? input : null;
    const url = new URL(request ? request.url : String(input));
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const mismatch = answerMismatch({ method: init?.method ?? request?.method ?? 'GET', path: url.pathname, status: response.status, contentType: response.headers.get('content-type'), body });
    if (mismatch) {
      mismatches.push(mismatch);
      throw new Error(`API answer differs from docs/openapi.json: ${mismatch}`);
    }
    return response;
  };
}

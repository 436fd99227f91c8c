import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** One HTTP exchange as a client saw it. */
export interface Exchange {
  method: string;
  path: string;
  requestContentType?: string;
  requestBody?: unknown;
  status: number;
  headers: Headers;
  body: string;
}

type Json = Record<string, unknown>;

const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Checks exchanges against the OpenAPI 3.1 document the server serves, as a contract validator
 * does: the operation exists for method and path; a JSON request body matches its schema; the
 * status is documented; the answer's media type is documented for that status; a JSON body
 * matches the documented schema (JSON Schema 2020-12, as OpenAPI 3.1 defines it, with ajv); and
 * every header the document marks required is present. Returns the violations, empty when none.
 */
export class ContractValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly operations: { method: string; template: string; pattern: RegExp; op: Json }[] = [];

  constructor(private readonly doc: Json) {
    (addFormats as unknown as (a: Ajv2020) => void)(this.ajv);
    this.ajv.addFormat('byte', /^[A-Za-z0-9+/]*={0,2}$/);
    this.ajv.addSchema(doc, 'openapi.json');
    for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      const parts = template.split(/\{[^}]+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      for (const [method, op] of Object.entries(item)) this.operations.push({ method, template, pattern: new RegExp(`^${parts.join('[^/]+')}$`), op });
    }
  }

  /** The operation a request reaches, or undefined. */
  operation(method: string, path: string) {
    const p = path.split('?')[0] ?? path;
    return this.operations.find((o) => o.method === method.toLowerCase() && o.pattern.test(p));
  }

  check(x: Exchange): string[] {
    const where = `${x.method} ${x.path} → ${x.status}`;
    const found = this.operation(x.method, x.path);
    if (!found) {
      // A documented path with another method: the document (info.description) promises 405
      // problem+json with Allow naming the path's methods.
      const p = x.path.split('?')[0] ?? x.path;
      const methods = this.operations.filter((o) => o.pattern.test(p)).map((o) => o.method.toUpperCase());
      if (methods.length === 0) return [`${where}: no such path in the document`];
      const problems: string[] = [];
      if (x.status !== 405) problems.push(`${where}: a method the path does not take must get 405`);
      const allow = (x.headers.get('allow') ?? '').split(/,\s*/);
      for (const m of methods) if (!allow.includes(m)) problems.push(`${where}: Allow "${x.headers.get('allow')}" lacks ${m}`);
      if (x.headers.get('content-type') !== 'application/problem+json') problems.push(`${where}: not problem+json`);
      else problems.push(...this.validate('openapi.json#/components/schemas/Problem', JSON.parse(x.body), where));
      return problems;
    }
    const problems: string[] = [];
    const base = `openapi.json#/paths/${escape(found.template)}/${found.method}`;
    if (x.requestBody !== undefined && x.requestContentType?.startsWith('application/json') && x.status < 400) {
      const content = (found.op.requestBody as Json | undefined)?.content as Json | undefined;
      if (!content?.['application/json']) problems.push(`${where}: the document takes no JSON request body`);
      else problems.push(...this.validate(`${base}/requestBody/content/application~1json/schema`, x.requestBody, `${where} request`));
    }
    const responses = found.op.responses as Record<string, Json>;
    const response = responses[String(x.status)];
    if (!response) return [...problems, `${where}: status ${x.status} is not documented (documented: ${Object.keys(responses).join(', ')})`];
    for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      const def = (h.$ref ? this.resolve(String(h.$ref)) : h) as Json;
      if (def.required === true && !x.headers.has(name)) problems.push(`${where}: required header ${name} is missing`);
    }
    const type = (x.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    const content = response.content as Json | undefined;
    if (content && x.method !== 'HEAD' && x.status !== 304) {
      if (!content[type]) problems.push(`${where}: content type "${type}" is not documented (documented: ${Object.keys(content).join(', ')})`);
      else if (/json/.test(type)) {
        let body: unknown;
        try {
          body = JSON.parse(x.body);
        } catch {
          return [...problems, `${where}: the body is not JSON`];
        }
        problems.push(...this.validate(`${base}/responses/${x.status}/content/${escape(type)}/schema`, body, where));
      }
    }
    return problems;
  }

  private resolve(ref: string): unknown {
    let node: unknown = this.doc;
    for (const part of ref.replace(/^#\//, '').split('/')) node = (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    return node;
  }

  private validate(ref: string, data: unknown, where: string): string[] {
    const validate = this.ajv.compile({ $ref: ref });
    if (validate(data)) return [];
    return (validate.errors ?? []).map((e) => `${where}: ${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  }
}

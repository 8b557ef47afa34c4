import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ArgumentCheck, ArgumentProblem } from './tool-catalog.ts';

/**
 * Compiled input-schema validators, cached by the tool's fingerprint. A fingerprint names one
 * definition (publishTools checks it), so a schema is compiled once per version however many
 * catalog refreshes list it, and a new version gets a validator of its own.
 */
export class SchemaValidators {
  readonly #ajv: Ajv2020;
  readonly #byFingerprint = new Map<string, ValidateFunction>();

  constructor() {
    this.#ajv = new Ajv2020({ allErrors: true, strict: false });
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.#ajv);
  }

  /** The validator of `schema`, compiled the first time `fingerprint` is seen. Throws if it does not compile. */
  compile(fingerprint: string, schema: Readonly<Record<string, unknown>>): ValidateFunction {
    let validate = this.#byFingerprint.get(fingerprint);
    if (!validate) {
      // Compiled from a copy: a catalog definition is frozen, and ajv annotates nothing in place,
      // but a validator must not keep a reference the catalog might replace.
      validate = this.#ajv.compile(structuredClone(schema));
      this.#byFingerprint.set(fingerprint, validate);
    }
    return validate;
  }

  /** Forgets the validators of fingerprints no longer offered (ajv's own cache goes with them). */
  retain(fingerprints: ReadonlySet<string>): void {
    for (const [fingerprint, validate] of this.#byFingerprint) {
      if (fingerprints.has(fingerprint)) continue;
      this.#ajv.removeSchema(validate.schema as object);
      this.#byFingerprint.delete(fingerprint);
    }
  }

  get size(): number {
    return this.#byFingerprint.size;
  }
}

/** Runs a compiled validator as a call check. */
export function checkWith(validate: ValidateFunction, args: unknown): ArgumentCheck {
  if (validate(args)) return { ok: true };
  return { ok: false, kind: 'invalid-arguments', problems: (validate.errors ?? []).map(toProblem) };
}

function toProblem(error: ErrorObject): ArgumentProblem {
  const missing = error.keyword === 'required' ? `/${String(error.params.missingProperty)}` : '';
  const extra = error.keyword === 'additionalProperties' ? `/${String(error.params.additionalProperty)}` : '';
  return { path: `${error.instancePath}${missing}${extra}`, message: error.message ?? error.keyword };
}

import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';

export interface IssuerKeysOptions {
  /** Reads the key set (the issuer's jwks_uri); rejects when it cannot. */
  readonly fetchKeySet: () => Promise<JSONWebKeySet>;
  readonly now: () => number;
  /** A token naming a key not in the set refetches it at most once per this long. */
  readonly cooldownMs: number;
  /** The set is refetched when older than this, before it is used (stale keys serve while that fails). */
  readonly maxAgeMs: number;
}

type KeyResolver = ReturnType<typeof createLocalJWKSet>;

/**
 * The issuer's signing keys, cached. A rotation (a token signed with a key published since the
 * last fetch) costs one fetch; tokens with made-up `kid`s cost at most one per cooldown, however
 * many arrive; concurrent misses share one fetch. The clock is injected, so tests move it.
 */
export class IssuerKeys {
  readonly #options: IssuerKeysOptions;
  #resolver: KeyResolver | null = null;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  /** Failed fetches count against the cooldown too: an outage is not met with a fetch per request. */
  #failedAt = Number.NEGATIVE_INFINITY;
  #failure: unknown = null;
  #refresh: Promise<KeyResolver> | null = null;

  constructor(options: IssuerKeysOptions) {
    this.#options = options;
  }

  /** The key for a token's protected header, as jose's jwtVerify asks for it. */
  readonly resolve = async (header: JWSHeaderParameters, token: Parameters<KeyResolver>[1]) => {
    const age = this.#options.now() - this.#fetchedAt;
    let resolver = this.#resolver;
    if (resolver === null) resolver = await this.#fetch();
    else if (age >= this.#options.maxAgeMs) resolver = await this.#fetch().catch(() => resolver as KeyResolver);
    try {
      return await resolver(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      const now = this.#options.now();
      if (now - Math.max(this.#fetchedAt, this.#failedAt) < this.#options.cooldownMs) throw error;
      return (await this.#fetch())(header, token);
    }
  };

  /** Reads the set once with `fetchKeySet` (the discovery's deadline), before any token needs it. */
  async prime(fetchKeySet: () => Promise<JSONWebKeySet>): Promise<void> {
    await this.#fetch(fetchKeySet);
  }

  #fetch(fetchKeySet = this.#options.fetchKeySet): Promise<KeyResolver> {
    if (this.#refresh === null && this.#options.now() - this.#failedAt < this.#options.cooldownMs) {
      return Promise.reject(this.#failure);
    }
    this.#refresh ??= fetchKeySet()
      .then((set) => {
        this.#resolver = createLocalJWKSet(set);
        this.#fetchedAt = this.#options.now();
        return this.#resolver;
      })
      .catch((error: unknown) => {
        this.#failedAt = this.#options.now();
        this.#failure = error;
        throw error;
      })
      .finally(() => {
        this.#refresh = null;
      });
    return this.#refresh;
  }
}

/**
 * Baton's zod schemas, made at once or when first used. A process that serves (a daemon, a server, a
 * program using the library) makes them as its modules load, as zod's schemas always are. A one-shot
 * CLI call uses a handful of the hundred, and making them all took zod 20-30 ms, a fifth of `baton
 * show`'s own start-up: its entry (src/cli/bin.ts) asks for them on demand before any loads.
 */
let onDemand = false;

/** From now on, schemas are made when first used. Call before the modules that define them load. */
export function schemasOnDemand(): void {
  onDemand = true;
}

/**
 * `build()`'s schema, or, on demand, a proxy that builds it at the first look at any of its properties
 * and is that schema from then on (its methods, `instanceof`, its place in other schemas).
 */
export function lazy<S extends object>(build: () => S): S {
  if (!onDemand) return build();
  let schema: S | undefined;
  const made = () => (schema ??= build());
  return new Proxy(Object.create(null) as S, {
    get: (_, key) => Reflect.get(made(), key),
    set: (_, key, value) => Reflect.set(made(), key, value),
    has: (_, key) => Reflect.has(made(), key),
    getPrototypeOf: () => Object.getPrototypeOf(made()),
    ownKeys: () => Reflect.ownKeys(made()),
    // Reported as configurable: a proxy may not claim a fixed property its own (empty) target lacks.
    getOwnPropertyDescriptor: (_, key) => {
      const property = Reflect.getOwnPropertyDescriptor(made(), key);
      return property && { ...property, configurable: true };
    },
  });
}

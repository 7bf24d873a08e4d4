/** A small typed event emitter that works the same in browsers and Node. */
export class Emitter<Events extends Record<string, unknown>> {
  #listeners = new Map<keyof Events, Set<(event: never) => void>>();

  /** Calls `listener` for every `type` event; returns a function that removes it. */
  on<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): () => void {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => this.off(type, listener);
  }

  /** Calls `listener` for the next `type` event only. */
  once<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): () => void {
    const off = this.on(type, (event) => {
      off();
      listener(event);
    });
    return off;
  }

  off<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): void {
    this.#listeners.get(type)?.delete(listener as (event: never) => void);
  }

  /**
   * The next `type` event for which `matches` holds, as a promise; rejects
   * after `timeoutMs` (default: never).
   */
  waitFor<K extends keyof Events>(
    type: K,
    matches: (event: Events[K]) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<Events[K]> {
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const off = this.on(type, (event) => {
        if (!matches(event)) return;
        off();
        if (timer !== undefined) clearTimeout(timer);
        resolve(event);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          off();
          reject(new Error(`no ${String(type)} event within ${timeoutMs} ms`));
        }, timeoutMs);
      }
    });
  }

  protected emit<K extends keyof Events>(type: K, event: Events[K]): void {
    for (const listener of [...(this.#listeners.get(type) ?? [])]) {
      try {
        (listener as (event: Events[K]) => void)(event);
      } catch (error) {
        // A listener's exception must not break delivery to the others, nor
        // the socket's state machine: report it asynchronously.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}

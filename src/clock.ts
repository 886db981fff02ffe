/** Time source, injectable so that tests can move hours ahead at once. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date = new Date()) {
    this.#ms = start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(date: Date): void {
    this.#ms = date.getTime();
  }
}

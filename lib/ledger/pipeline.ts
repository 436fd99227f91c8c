/**
 * Ordering helpers of LedgerSender's submit pipeline (see "Ordering" in sender.ts): which nonce's
 * broadcast waits for which, and the lock that keeps the re-send job apart from submits.
 */

/** What the submit of the next nonce learns about a nonce once its own submit left the broadcast stage. */
export type BroadcastState =
  /** A transaction holds the nonce and is, or may be, with the node (accepted, ambiguous, a foreign one, a filler). */
  | 'occupied'
  /** The nonce went back to the released set (or was never written): a gap right below the next nonce. */
  | 'released'
  /** As 'released', because the node could not be reached (the next broadcast will most likely fail the same way). */
  | 'unreachable';

interface Gate {
  readonly done: Promise<BroadcastState>;
  resolve(state: BroadcastState): void;
  state?: BroadcastState;
  settledSeq: number;
  settledAt: number;
}

/** A nonce this process is sending: from its allocation until its broadcast (or giving it up). */
export interface BroadcastTicket {
  readonly nonce: number;
  /** Sequence number taken when the allocation of the nonce STARTED (before its first DynamoDB read). */
  readonly seq: number;
  readonly gate: Gate;
}

const KEEP_SETTLED_MS = 60_000;

/**
 * The broadcast order of one process: a submit broadcasts only after the submit holding the nonce
 * right below (when this process holds it) has broadcast it or given it up.
 */
export class BroadcastOrder {
  private seq = 0;
  private readonly gates = new Map<number, Gate>();

  /** A sequence number to take before allocating nonces (passed to open()). */
  mark(): number {
    return ++this.seq;
  }

  /** Registers `nonce`, allocated by an allocation that started at `seq`. */
  open(nonce: number, seq: number): BroadcastTicket {
    let resolve!: (state: BroadcastState) => void;
    const done = new Promise<BroadcastState>((r) => (resolve = r));
    const gate: Gate = { done, resolve, settledSeq: 0, settledAt: 0 };
    this.gates.set(nonce, gate);
    if (this.gates.size > 256) this.prune();
    return { nonce, seq, gate };
  }

  /** The submit holding `ticket` left the broadcast stage with `state` (only the first call counts). */
  settle(ticket: BroadcastTicket, state: BroadcastState): void {
    const { gate } = ticket;
    if (gate.state) return;
    gate.state = state;
    gate.settledSeq = ++this.seq;
    gate.settledAt = Date.now();
    gate.resolve(state);
    // Nothing to tell the next nonce's submit: no entry reads as 'occupied'.
    if (state === 'occupied' && this.gates.get(ticket.nonce) === gate) this.gates.delete(ticket.nonce);
  }

  /**
   * Waits for the nonce below `ticket`'s when this process holds it. 'released'/'unreachable' only
   * when that nonce was given up after the allocation of `ticket` started: one given up before
   * cannot still be a gap, because an allocation takes released nonces first, lowest first, and
   * the counter only moves while none is released (so someone took it since).
   */
  async before(ticket: BroadcastTicket): Promise<BroadcastState> {
    const below = ticket.nonce - 1;
    for (;;) {
      const gate = this.gates.get(below);
      if (!gate) return 'occupied';
      const state = await gate.done;
      const current = this.gates.get(below);
      if (current && current !== gate) continue; // allocated again meanwhile (a released nonce reused): wait for that one
      if (state !== 'occupied' && gate.settledSeq < ticket.seq) return 'occupied';
      return state;
    }
  }

  private prune(): void {
    const old = Date.now() - KEEP_SETTLED_MS;
    for (const [nonce, gate] of this.gates) if (gate.state && gate.settledAt < old) this.gates.delete(nonce);
  }
}

/**
 * Submits hold it shared (any number at once), the re-send job exclusively: an exclusive run
 * starts once the shared holders before it are done, and shared holders arriving while one is
 * queued or running wait for it. Exclusive runs go one at a time, in call order.
 */
export class SharedExclusiveLock {
  private shared = 0;
  private queued = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private barrier: { promise: Promise<void>; open: () => void } | null = null;
  private idle: (() => void)[] = [];

  async runShared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.barrier) await this.barrier.promise;
    this.shared++;
    try {
      return await fn();
    } finally {
      if (--this.shared === 0) for (const wake of this.idle.splice(0)) wake();
    }
  }

  runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.queued++ === 0) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      this.barrier = { promise, open };
    }
    const run = this.tail.then(async () => {
      while (this.shared > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
      return fn();
    });
    this.tail = run.catch(() => undefined);
    return run.finally(() => {
      if (--this.queued === 0) {
        const barrier = this.barrier;
        this.barrier = null;
        barrier?.open();
      }
    });
  }
}

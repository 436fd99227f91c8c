/**
 * Supervision of the child processes of `npm start` (dynalite, the Hardhat node): a child that
 * exits while the stack is not stopping is started again at once, on the same port and data
 * directory, then made healthy (`afterStart`: the ledger's transactions replayed into a fresh
 * node); a child that dies again within 10 s of being healthy, or whose restart fails, is
 * retried after a growing backoff (0.25 s doubling to 5 s).
 * While a part is restarting, health reports it down (`restarting`). One line per restart says
 * which part, why and how long it took to be healthy again.
 */
import { setKnownPartState } from '../health.js';

/** A running child process. */
export interface RunningPart {
  pid: number;
  /** Settles when the process has exited, with how (`signal SIGKILL`, `code 1`). */
  exited: Promise<string>;
  stop(): Promise<void>;
}

export interface SupervisedPart<T extends RunningPart> {
  /** Its name in health (`database`, `ledger`). */
  healthName: string;
  /** Its name in the log line (`dynamodb (dynalite)`). */
  label: string;
  start(): Promise<T>;
  /** Runs after every restart, before the part counts as healthy; returns a note for the log line. */
  afterStart?(part: T): Promise<string | undefined>;
}

const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5000;
/** A part that ran at least this long before dying is restarted at once again. */
const STABLE_MS = 10_000;

export class Supervisor<T extends RunningPart> {
  private stopping = false;
  /** Deaths in a row, each within STABLE_MS of the part being healthy again. */
  private quickDeaths = 0;
  /** When the part last became healthy; the first run counts as long ago (a first death restarts at once). */
  private healthySince = 0;
  private wake: (() => void) | null = null;

  constructor(
    private current: T,
    private readonly part: SupervisedPart<T>,
    private readonly say: (line: string) => void,
  ) {
    this.watch(current);
  }

  get pid(): number {
    return this.current.pid;
  }

  /** Stops supervising and stops the part (no restart follows). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.current.stop();
  }

  private watch(running: T): void {
    void running.exited.then((how) => {
      if (!this.stopping && running === this.current) void this.restart(running.pid, how);
    });
  }

  private async restart(oldPid: number, how: string): Promise<void> {
    const downAt = performance.now();
    setKnownPartState(this.part.healthName, 'restarting');
    this.quickDeaths = Date.now() - this.healthySince < STABLE_MS ? this.quickDeaths + 1 : 0;
    let delayMs = this.quickDeaths === 0 ? 0 : Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** (this.quickDeaths - 1));
    const cause = `pid ${oldPid} exited (${how})${this.quickDeaths > 0 ? `, ${this.quickDeaths + 1} deaths in a row, restarted after ${delayMs} ms` : ''}`;
    for (let attempt = 1; !this.stopping; attempt += 1) {
      if (delayMs > 0) await this.sleep(delayMs);
      if (this.stopping) return;
      let next: T | undefined;
      try {
        next = await this.part.start();
        if (this.stopping) {
          await next.stop();
          return;
        }
        const died = next.exited.then((exitHow) => {
          throw new Error(`it exited again while being made healthy (${exitHow})`);
        });
        died.catch(() => undefined);
        const note = await Promise.race([this.part.afterStart?.(next), died]);
        if (this.stopping) {
          await next.stop();
          return;
        }
        this.current = next;
        this.healthySince = Date.now();
        setKnownPartState(this.part.healthName, undefined);
        this.say(
          `restarted  ${this.part.label}: ${cause}; healthy again in ${Math.round(performance.now() - downAt)} ms ` +
            `(pid ${next.pid}${attempt > 1 ? `, attempt ${attempt}` : ''}${note ? `, ${note}` : ''})`,
        );
        this.watch(next);
        return;
      } catch (error) {
        await next?.stop().catch(() => undefined);
        delayMs = Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, delayMs * 2));
        const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
        this.say(`restart    ${this.part.label} failed (attempt ${attempt}): ${message}; next try in ${delayMs} ms`);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }
}

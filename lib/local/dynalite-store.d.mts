import type { Server } from 'node:http';

/** A dynalite server (not listening yet): on disk in SQLite under `dir`, or in memory (see dynalite-store.mjs). */
export function createDynalite(options: { dir?: string }): Promise<Server>;

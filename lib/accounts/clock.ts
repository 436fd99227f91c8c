/**
 * The time source of the accounts domain. Every function that reads the time takes a `Clock`
 * parameter with this default, so tests can freeze it (token expiry, window and month edges).
 */
export type Clock = () => Date;

/** The wall clock. */
export const systemClock: Clock = () => new Date();

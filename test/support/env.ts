/**
 * Test processes share one embedded stack per run (test/run.ts starts it and passes its
 * addresses in the environment). A test file run on its own starts its own (see stack.ts).
 */
export const STACK_ENV_MARKER = 'EVIDENCE_TEST_STACK';

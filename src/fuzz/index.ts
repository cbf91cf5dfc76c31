export type { BuildContext, FuzzRequest } from './build.js';
export { TIMESTAMP_MARGIN_SECONDS, buildRequest } from './build.js';
export type { CaseKind, CaseSpec, DeliveryDraft, Expectation, FuzzCase } from './cases.js';
export { CASE_KINDS, CASE_SPECS, caseArbitrary } from './cases.js';
export type { JsonStyle } from './json-style.js';
export { JSON_STYLES, spellJson } from './json-style.js';
export { describeCase, formatFuzzFindings, formatFuzzRequest, formatFuzzSummary, formatFuzzTable } from './report.js';
export type { CaseResult, Counterexample, FuzzOptions, FuzzOutcome, FuzzReport, Verdict } from './run.js';
export { DEFAULT_MAX_BODY_BYTES, judge, kindSeed, runFuzz, runsFor } from './run.js';

#!/usr/bin/env node
// `npm run nemesis`: builds dist/ when it is stale, then runs main.ts with the arguments given.
import { launch } from './launch.mjs';

await launch('./main.ts', { needsDist: true });

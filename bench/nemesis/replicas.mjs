#!/usr/bin/env node
// `npm run nemesis:replicas`: compares a kept run's stream replicas (replicas-main.ts); reads the
// NATS stores only, so dist/ is not needed.
import { launch } from './launch.mjs';

await launch('./replicas-main.ts', { needsDist: false });

#!/usr/bin/env node
import { processIo } from './io.js';
import { runCli } from './program.js';

void runCli(process.argv.slice(2), processIo()).then((code) => {
  process.exitCode = code;
});

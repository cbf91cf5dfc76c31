import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describeCopies } from './nats-faults.js';
import { divergences, lastSeq, readStreamReplicas } from './replicas.js';

// `npm run nemesis:replicas -- DIR [STREAM]`: DIR is a run's temporary directory kept with --keep,
// its NATS servers stopped. Prints each sequence at which the servers' replicas of STREAM
// (HOOKLINE_EVENTS) hold different messages; exits 1 when there is one.
const [dir, stream = 'HOOKLINE_EVENTS'] = process.argv.slice(2);
if (!dir || !existsSync(join(dir, 'nats'))) {
  process.stderr.write('usage: npm run nemesis:replicas -- DIR [STREAM]  (DIR: a run kept with --keep, holding nats/store-n1 ...)\n');
  process.exit(2);
}
const replicas = readStreamReplicas(join(dir, 'nats'), stream);
for (const [server, messages] of Object.entries(replicas)) process.stdout.write(`${server}: ${messages.size} messages of ${stream}, up to seq ${lastSeq(messages)}\n`);
const found = divergences(replicas);
// The first few: a replica that kept one message too many differs at every sequence after it.
for (const { seq, copies } of found.slice(0, 10)) {
  process.stdout.write(`seq ${seq}: ${describeCopies(copies)}\n`);
}
process.stdout.write(found.length === 0 ? 'the replicas agree\n' : `${found.length} sequences at which the replicas disagree (from ${found[0]!.seq} to ${found.at(-1)!.seq}): a fault of NATS\n`);
process.exit(found.length === 0 ? 0 : 1);

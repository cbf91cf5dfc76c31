import { writeFile } from 'node:fs/promises';
import { z } from 'zod';
import { DIAGRAM_FORMATS, DIAGRAM_MACHINES, renderDiagram } from '../diagram/index.js';
import { defineCommand } from './args.js';
import type { CliCommand } from './command.js';
import type { CliIo } from './io.js';
import { processIo } from './io.js';

const HELP = `Usage: hookline diagram [--machine delivery|webhook] [--format mermaid|dot|svg] [--output FILE]

Prints a state diagram generated from the XState machine definitions in src/machines (never drawn
by hand, so it cannot drift from the code): every state, and every transition labelled
EVENT [guard] / actions ("always" for an eventless one). Transient states are dashed, final ones
doubled.

Options:
  --machine M   delivery (default) or webhook (the webhook configuration)
  --format F    mermaid (default; paste into Markdown), dot (Graphviz), or svg (a standalone
                drawing laid out by Hookline itself, no Graphviz needed)
  --output FILE write to FILE instead of standard output

The diagrams in docs/internals.md are this command's Mermaid output; \`npm run diagrams\` refreshes them.`;

const FLAGS = {
  machine: { type: 'string' },
  format: { type: 'string' },
  output: { type: 'string' },
} as const;

const SCHEMA = z.object({
  machine: z.enum(DIAGRAM_MACHINES, { error: `must be one of ${DIAGRAM_MACHINES.join(', ')}` }).default('delivery'),
  format: z.enum(DIAGRAM_FORMATS, { error: `must be one of ${DIAGRAM_FORMATS.join(', ')}` }).default('mermaid'),
  output: z.string().min(1, 'must name a file').optional(),
  positionals: z.array(z.string()).max(0, 'takes no positional arguments; choose the machine with --machine'),
});

/** `hookline diagram`, talking to `io` (the process by default). */
export function createDiagramCommand(io: CliIo = processIo()): CliCommand {
  return defineCommand(io, {
    name: 'diagram',
    help: HELP,
    flags: FLAGS,
    schema: () => SCHEMA,
    async run({ machine, format, output }) {
      const text = renderDiagram(machine, format);
      if (output === undefined) {
        io.stdout.write(text);
        return 0;
      }
      try {
        await writeFile(output, text);
      } catch (error) {
        io.stderr.write(`hookline diagram: cannot write ${output}: ${(error as Error).message}\n`);
        return 1;
      }
      io.stderr.write(`hookline diagram: wrote the ${machine} machine as ${format} to ${output}\n`);
      return 0;
    },
  });
}

export const diagramCommand: CliCommand = createDiagramCommand();

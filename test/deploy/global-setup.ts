import type { TestProject } from 'vitest/node';
import { baseImage, buildHooklineImage, docker, ensureDockerd, run } from './docker.js';

/**
 * Once per `npm run test:deploy`: dockerd up, the base image (made once per machine, then reused
 * by its tag), Hookline's image built from the Dockerfile on it, and a NATS server image for the
 * cluster stack (this machine's nats-server on the same base: no image registry is reachable).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    hooklineImage: string;
    natsImage: string;
    baseImage: string;
  }
}

export const HOOKLINE_TEST_IMAGE = 'hookline:deploy-test';

async function natsImage(base: string): Promise<string> {
  if (process.env.HOOKLINE_NATS_IMAGE) return process.env.HOOKLINE_NATS_IMAGE;
  let found = await run('sh', ['-c', 'command -v nats-server']);
  if (found.status !== 0) {
    await run('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server']);
    found = await run('sh', ['-c', 'command -v nats-server']);
    if (found.status !== 0) throw new Error('nats-server is not installed and could not be installed (apt-get install nats-server)');
  }
  const binary = found.stdout.trim();
  const version = (await run(binary, ['--version'])).stdout.trim().replace(/^nats-server:\s*v?/, '');
  const tag = `hookline-test/nats:${version}-${base.split(':').at(-1)}`;
  if ((await run('docker', ['image', 'inspect', tag])).status === 0) return tag;
  // The official image's layout: /nats-server as the entrypoint, arguments from the compose file.
  const container = await docker(['create', base]);
  try {
    await docker(['cp', binary, `${container}:/nats-server`]);
    await docker(['commit', '--change', 'ENTRYPOINT ["/nats-server"]', '--change', 'CMD ["--help"]', '--change', 'EXPOSE 4222 6222 8222', container, tag]);
  } finally {
    await run('docker', ['rm', '-f', container]);
  }
  return tag;
}

export default async function setup(project: TestProject): Promise<void> {
  await ensureDockerd();
  const base = await baseImage();
  await buildHooklineImage(HOOKLINE_TEST_IMAGE, base);
  project.provide('baseImage', base);
  project.provide('hooklineImage', HOOKLINE_TEST_IMAGE);
  project.provide('natsImage', await natsImage(base));
}

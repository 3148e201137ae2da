/**
 * DEMO ONLY (`hospital-api demo --runtime docker`): the platform stand-in as a
 * service of a demo install's compose project.
 */
/** Its address on the project network. */
export const DEMO_PLATFORM = Object.freeze({ service: 'platform', port: 8088, url: 'http://platform:8088' });

/**
 * DEMO ONLY: the platform stand-in as a service of a demo install's project, run from the API's image
 * as the native runtime runs it as a component (`demo --platform-stand-in`). It reads the demo tokens
 * from its own copy (container-files.ts, docker/platform/), publishes nothing, and is in no production
 * install's compose file.
 */
export function demoPlatformService(image: string, user: { uid: number; gid: number }): string {
  return [
    '',
    '  # DEMO ONLY: the platform stand-in (`hospital-api demo --runtime docker`); the API reaches it as',
    `  # ${DEMO_PLATFORM.url}. Not in a production install's compose file.`,
    `  ${DEMO_PLATFORM.service}:`,
    `    image: ${JSON.stringify(image)}`,
    '    restart: unless-stopped',
    '    logging: *logging',
    `    user: "${user.uid}:${user.gid}"`,
    `    command: ["demo", "--platform-stand-in", "--listen", "0.0.0.0:${DEMO_PLATFORM.port}", "--dir", "/platform"]`,
    '    volumes:',
    '      - ./platform:/platform:ro',
    '    init: true',
    '',
  ].join('\n');
}

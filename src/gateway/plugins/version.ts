/** The Kong release whose plugin behaviour these plugins follow (kong.md: target 3.7–3.9). */
export const KONG_VERSION = '3.9.1';

/** The Kong release whose plugin behaviour these plugins follow (we target Kong 3.7–3.9; Kong/kong CHANGELOG.md). */
export const KONG_VERSION = '3.9.1';

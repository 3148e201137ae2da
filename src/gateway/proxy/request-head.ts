/**
 * The few request headers the proxy itself needs, read in one pass over the
 * raw list: touching `req.headers` would make Node build the whole header
 * object for every request. Same values as `req.headers` gives (first Host
 * and Content-Length, Accept values joined with ", ").
 */
export interface RequestHead {
  host: string;
  /** How many Host headers came (more than one → 400, as nginx). */
  hostCount: number;
  accept: string | undefined;
  /** A request body follows (Transfer-Encoding, or a Content-Length other than 0; HTTP/2: no END_STREAM on the headers). */
  hasBody: boolean;
}

export function readHead(raw: readonly string[]): RequestHead {
  let host: string | undefined;
  let hostCount = 0;
  let authority: string | undefined;
  let accept: string | undefined;
  let length: string | undefined;
  let chunked = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // Dispatch on length first: most headers are none of these four.
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === 'host') {
          hostCount++;
          host ??= raw[i + 1] as string;
        }
        break;
      case 10:
        // HTTP/2: the authority stands for Host (RFC 9113 §8.3.1).
        if (authority === undefined && name === ':authority') authority = raw[i + 1] as string;
        break;
      case 6:
        if (name.toLowerCase() === 'accept') accept = accept === undefined ? (raw[i + 1] as string) : `${accept}, ${raw[i + 1] as string}`;
        break;
      case 14:
        if (length === undefined && name.toLowerCase() === 'content-length') length = raw[i + 1] as string;
        break;
      case 17:
        if (name.toLowerCase() === 'transfer-encoding') chunked = true;
        break;
    }
  }
  return { host: host ?? authority ?? '', hostCount, accept, hasBody: chunked || (length !== undefined && length !== '0') };
}

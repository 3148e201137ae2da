/**
 * Kong's TLS settings of the proxy listener, by Kong's names
 * (kong.conf.default; kong/templates/kong_defaults.lua): `ssl_cipher_suite`
 * (default `intermediate`), `ssl_ciphers`, `ssl_protocols` and
 * `ssl_prefer_server_ciphers`, mapped as Kong's loader maps them
 * (kong/conf_loader/parse.lua: for any suite but `custom` the suite's
 * ciphers, protocols and prefer_server_ciphers replace the other three;
 * kong/conf_loader/constants.lua CIPHER_SUITES for each suite's values).
 */
import { HospitalApiError } from '../../errors/index.js';
import { INTERMEDIATE_POLICY, TLS13_CIPHERSUITES, type TlsServerPolicy, type TlsVersion } from '../../tls/cipher-policy.js';

export interface KongTlsSettings {
  /** modern | intermediate | old | fips | custom; absent: intermediate (Kong's default). */
  sslCipherSuite?: string;
  /** OpenSSL cipher list; read only with `custom`, as Kong does. */
  sslCiphers?: string;
  /** Space-separated, e.g. "TLSv1.2 TLSv1.3"; read only with `custom`. */
  sslProtocols?: string;
  /** on | off; read only with `custom` (Kong's default on). */
  sslPreferServerCiphers?: string;
}

const VERSIONS: readonly TlsVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** kong/conf_loader/constants.lua CIPHER_SUITES `old` (Mozilla 5.7 "old"): plain RSA and 3DES included. */
const OLD_TLS12 = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305', 'DHE-RSA-AES128-GCM-SHA256', 'DHE-RSA-AES256-GCM-SHA384',
  'DHE-RSA-CHACHA20-POLY1305', 'ECDHE-ECDSA-AES128-SHA256', 'ECDHE-RSA-AES128-SHA256', 'ECDHE-ECDSA-AES128-SHA', 'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES256-SHA384', 'ECDHE-RSA-AES256-SHA384', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-RSA-AES256-SHA', 'DHE-RSA-AES128-SHA256',
  'DHE-RSA-AES256-SHA256', 'AES128-GCM-SHA256', 'AES256-GCM-SHA384', 'AES128-SHA256', 'AES256-SHA256', 'AES128-SHA', 'AES256-SHA',
  'DES-CBC3-SHA',
];

function bad(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_USAGE', { detail });
}

/** "TLSv1.2 TLSv1.3" → the lowest and highest named (Node takes a range, nginx a set; a gap is refused). */
function protocolRange(value: string): { minVersion: TlsVersion; maxVersion: TlsVersion } {
  const named = value.split(/[\s,]+/).filter(Boolean);
  const unknown = named.filter((n) => !VERSIONS.includes(n as TlsVersion));
  if (named.length === 0 || unknown.length) throw bad(`ssl_protocols: "${value}" must list TLSv1, TLSv1.1, TLSv1.2 and/or TLSv1.3`);
  const idx = named.map((n) => VERSIONS.indexOf(n as TlsVersion)).sort((a, b) => a - b);
  const lo = idx[0]!;
  const hi = idx[idx.length - 1]!;
  if (hi - lo + 1 !== new Set(idx).size) throw bad(`ssl_protocols: "${value}" leaves a gap; name consecutive versions`);
  return { minVersion: VERSIONS[lo]!, maxVersion: VERSIONS[hi]! };
}

function onOff(value: string | undefined, name: string, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw bad(`${name}: "${value}" must be on or off`);
}

/**
 * The listener's node:tls policy for Kong's settings.
 * @throws ERR_USAGE for a suite Kong does not define ("Undefined cipher suite", as Kong's loader says) or a bad custom value
 */
export function tlsPolicyOf(s: KongTlsSettings = {}): TlsServerPolicy {
  const suite = (s.sslCipherSuite ?? '').trim() || 'intermediate';
  const tls13 = TLS13_CIPHERSUITES.join(':');
  switch (suite) {
    case 'intermediate':
      return { ...INTERMEDIATE_POLICY };
    case 'modern':
      // TLS 1.3 only; all its suites are safe, the client chooses
      return { ...INTERMEDIATE_POLICY, minVersion: 'TLSv1.3', ciphers: tls13 };
    case 'old':
      // Kong's nginx template adds @SECLEVEL=0 for old (kong/templates/nginx_kong.lua): OpenSSL 3 refuses TLS 1.0/1.1 otherwise
      return { ...INTERMEDIATE_POLICY, minVersion: 'TLSv1', ciphers: `${tls13}:${OLD_TLS12.join(':')}:@SECLEVEL=0`, honorCipherOrder: true };
    case 'fips':
      return { ...INTERMEDIATE_POLICY, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', ciphers: 'TLSv1.2+FIPS:kRSA+FIPS:!eNULL:!aNULL', honorCipherOrder: true };
    case 'custom': {
      const ciphers = (s.sslCiphers ?? '').trim();
      if (!ciphers) throw bad('ssl_cipher_suite custom needs ssl_ciphers (an OpenSSL cipher list)');
      if (!/^[A-Za-z0-9_+!@=:.,-]+$/.test(ciphers)) throw bad('ssl_ciphers: an OpenSSL cipher list has only letters, digits and _ + ! @ = : . , -');
      // nginx's ssl_ciphers sets the TLS 1.2 list only; OpenSSL's TLS 1.3 suites stay
      const named13 = ciphers.split(/[:,]/).some((c) => c.startsWith('TLS_'));
      return {
        ...INTERMEDIATE_POLICY,
        ...protocolRange(s.sslProtocols?.trim() || 'TLSv1.2 TLSv1.3'),
        ciphers: named13 ? ciphers : `${tls13}:${ciphers}`,
        honorCipherOrder: onOff(s.sslPreferServerCiphers?.trim(), 'ssl_prefer_server_ciphers', true),
      };
    }
    default:
      throw bad(`Undefined cipher suite ${suite} (ssl_cipher_suite: modern, intermediate, old, fips or custom)`);
  }
}

/** Kong reads each kong.conf setting from a KONG_<NAME> variable too (kong/conf_loader/init.lua, env overrides the file). */
export function kongTlsSettingsFromEnv(env: NodeJS.ProcessEnv): KongTlsSettings {
  const out: KongTlsSettings = {};
  if (env.KONG_SSL_CIPHER_SUITE !== undefined) out.sslCipherSuite = env.KONG_SSL_CIPHER_SUITE;
  if (env.KONG_SSL_CIPHERS !== undefined) out.sslCiphers = env.KONG_SSL_CIPHERS;
  if (env.KONG_SSL_PROTOCOLS !== undefined) out.sslProtocols = env.KONG_SSL_PROTOCOLS;
  if (env.KONG_SSL_PREFER_SERVER_CIPHERS !== undefined) out.sslPreferServerCiphers = env.KONG_SSL_PREFER_SERVER_CIPHERS;
  return out;
}

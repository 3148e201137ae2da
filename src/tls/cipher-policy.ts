/**
 * The TLS policy of every TLS server the toolkit runs, and what `verify`
 * holds the gateway to: Mozilla's "intermediate" profile, guideline version
 * 5.7 (mozilla/server-side-tls Server_Side_TLS.mediawiki "Intermediate
 * compatibility"; mozilla/ssl-config-generator src/static/guidelines/5.7.json),
 * which is also what Kong 3.9 ships as its default `ssl_cipher_suite =
 * intermediate` (Kong/kong kong/conf_loader/constants.lua CIPHER_SUITES,
 * "Version 5.7"). The list is named here once; the gateway's Kong-named
 * settings (src/gateway/proxy/tls-settings.ts) and the tls-policy check read it.
 */

/** TLS 1.2 suites of the profile, in its order (OpenSSL names): every one forward-secret (ECDHE/DHE) and AEAD. */
export const MOZILLA_INTERMEDIATE_TLS12_CIPHERS: readonly string[] = Object.freeze([
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'DHE-RSA-AES128-GCM-SHA256',
  'DHE-RSA-AES256-GCM-SHA384',
  'DHE-RSA-CHACHA20-POLY1305',
]);

/**
 * The ffdhe2048 group of RFC 7919 (Appendix A.1) as PKCS#3 DH parameters: what Kong's `intermediate`
 * suite sets as `ssl_dhparam` (Kong/kong kong/conf_loader/constants.lua CIPHER_SUITES; Mozilla 5.7
 * `dh_param_size` 2048). Node's `dhparam: 'auto'` would pick OpenSSL's built-in group instead, which is
 * RFC 3526's group 14, not this one (issue 48). A published constant, the same bytes as
 * `openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048` prints.
 */
export const FFDHE2048_PEM = [
  '-----BEGIN DH PARAMETERS-----',
  'MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz',
  '+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a',
  '87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7',
  'YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi',
  '7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD',
  'ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==',
  '-----END DH PARAMETERS-----',
].join('\n');

/** TLS 1.3 suites (5.7.json `ciphersuites`); Node enables TLS 1.3 suites only by these full names. */
export const TLS13_CIPHERSUITES: readonly string[] = Object.freeze(['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']);

export type TlsVersion = 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';

/** What node:tls needs to apply a policy (tls.createSecureContext options). */
export interface TlsServerPolicy {
  minVersion: TlsVersion;
  maxVersion: TlsVersion;
  /** One colon list: TLS 1.3 names and OpenSSL TLS 1.2 specs. */
  ciphers: string;
  /** false: the client's preference stands (Mozilla: `ssl_prefer_server_ciphers off`). Node's own default is true. */
  honorCipherOrder: boolean;
  ecdhCurve: string;
  /** DH parameters (PEM) for the DHE-RSA suites: RFC 7919 ffdhe2048, as Kong's default. */
  dhparam: string;
}

/** Mozilla intermediate 5.7 as node:tls options. */
export const INTERMEDIATE_POLICY: Readonly<TlsServerPolicy> = Object.freeze({
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.3',
  ciphers: [...TLS13_CIPHERSUITES, ...MOZILLA_INTERMEDIATE_TLS12_CIPHERS].join(':'),
  honorCipherOrder: false,
  // 5.7.json `ecdh_param_size`/curves: X25519, prime256v1, secp384r1
  ecdhCurve: 'X25519:prime256v1:secp384r1',
  dhparam: FFDHE2048_PEM,
});

/**
 * Whether a negotiated suite (node:tls getCipher(): its OpenSSL `name` and the
 * protocol `version`) gives forward secrecy: every TLS 1.3 suite does (RFC
 * 8446 has only (EC)DHE and PSK-(EC)DHE key exchange for a full handshake);
 * in TLS 1.2 only the ephemeral (EC)DHE key exchanges do.
 */
export function isForwardSecret(cipher: { name: string; version: string }): boolean {
  if (cipher.version === 'TLSv1.3') return true;
  return /^(ECDHE|DHE|EDH)-/.test(cipher.name);
}

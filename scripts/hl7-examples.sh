#!/usr/bin/env bash
# Caches HL7's FHIR R4 example package (npm `hl7.fhir.r4.examples` 4.0.1, CC0) OUTSIDE the
# repository, for test/fhir/examples/hl7-examples.test.ts. The tarball is fetched from the npm
# registry by exact version with `npm pack`, checked against the sha512 pinned here (the
# registry's dist.integrity), and unpacked once.
#
#   scripts/hl7-examples.sh [DIR]     DIR defaults to $HL7_EXAMPLES_DIR, else
#                                     /var/cache/hospital-api-ci/hl7.fhir.r4.examples-4.0.1
# The test reads $HL7_EXAMPLES_DIR, else that default; it skips with a line saying so when absent.
set -euo pipefail
VERSION=4.0.1
INTEGRITY='sha512-DXBdIZOeQaSKIgCU7w6HOC7sw/6BzylmipLkBW4f//pT+Bc94x+8LImwTdvaNThPJoOzpBzvxAzNqjeu3X/zLw=='
DIR=${1:-${HL7_EXAMPLES_DIR:-/var/cache/hospital-api-ci/hl7.fhir.r4.examples-$VERSION}}
if [ -f "$DIR/package/package.json" ]; then
  echo "hl7.fhir.r4.examples@$VERSION already in $DIR"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "hl7.fhir.r4.examples@$VERSION" >/dev/null)
tarball=$(ls "$work"/hl7.fhir.r4.examples-*.tgz)
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "hl7.fhir.r4.examples@$VERSION: integrity mismatch ($actual)" >&2
  exit 1
fi
mkdir -p "$work/unpacked" && tar -xzf "$tarball" -C "$work/unpacked"
mkdir -p "$(dirname "$DIR")" && rm -rf "$DIR.tmp"
mkdir -p "$DIR.tmp" && mv "$work/unpacked/package" "$DIR.tmp/package" && mv "$DIR.tmp" "$DIR"
echo "hl7.fhir.r4.examples@$VERSION cached in $DIR ($(ls "$DIR/package" | wc -l) files)"

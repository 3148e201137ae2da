#!/bin/sh
# hospital-api as its package installs it: the toolkit on the Node.js the package bundles
# (node/bin/node beside app/), never the host's Node. The same script in both packages:
#   .deb      /usr/lib/hospital-api/bin/hospital-api (and /usr/bin/hospital-api, a link to it);
#             the default install directory is /var/lib/hospital-api, and a native install
#             made by root where systemd runs is run by systemd
#   .tar.gz   <unpacked>/bin/hospital-api; the default install directory is ./.hospital-api
# $HOSPITAL_API_DIR or --dir choose another install directory, as everywhere.
set -e
self=$(readlink -f "$0")
root=$(dirname "$(dirname "$self")")
if [ "$root" = /usr/lib/hospital-api ]; then
  if [ -z "${HOSPITAL_API_DIR:-}" ]; then
    HOSPITAL_API_DIR=/var/lib/hospital-api
    export HOSPITAL_API_DIR
  fi
  # where systemd runs the machine, a new native installation made by root runs as systemd
  # services under the hospital-api user (install --supervisor overrides)
  if [ -z "${HOSPITAL_API_SUPERVISOR:-}" ] && [ -d /run/systemd/system ] && [ "$(id -u)" = 0 ]; then
    HOSPITAL_API_SUPERVISOR=systemd
    export HOSPITAL_API_SUPERVISOR
  fi
fi
exec "$root/node/bin/node" "$root/app/bin/hospital-api.js" "$@"

#!/bin/sh
# As Kong/docker-kong docker-entrypoint.sh: KONG_*_FILE variables are read into
# KONG_* only when the command is `kong …`; anything else runs untouched.
set -e
if [ "$1" = "kong" ]; then
  for var in $(env | sed -n 's/^\(KONG_[A-Z0-9_]*\)_FILE=.*/\1/p'); do
    fvar="${var}_FILE"
    eval "fval=\${$fvar}"
    eval "cur=\${$var:-}"
    if [ -n "$cur" ]; then echo "error: both $var and $fvar are set (but are exclusive)" >&2; exit 1; fi
    export "$var=$(cat "$fval")"
    unset "$fvar"
  done
fi
exec "$@"

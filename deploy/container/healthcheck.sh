#!/bin/bash
# The HEALTHCHECK of the locr images (Dockerfile, Dockerfile.cuda), installed as
# /usr/local/bin/locr-healthcheck: GET /health of the `locr serve` running in this container, over
# bash's /dev/tcp (the slim base has no curl or wget). Exit 0 when it answers 200.
# Address and port are the server's own --host/--port (defaults 0.0.0.0 and 8000), read from its
# command line in /proc, so `docker run IMAGE MODEL --port 9000` needs no --health-cmd. A server
# with TLS (--ssl-keyfile) is only checked for accepting a TCP connection.
set -u
host=127.0.0.1 port=8000 tls=0
for p in /proc/[0-9]*; do
  argv=()
  mapfile -d '' -t argv 2>/dev/null <"$p/cmdline" || continue
  [ "${#argv[@]}" -ge 2 ] && [ "${argv[0]##*/}" = locr ] && [ "${argv[1]}" = serve ] || continue
  for ((i = 2; i < ${#argv[@]}; i++)); do
    case "${argv[i]}" in
      --port) port="${argv[i + 1]:-8000}" ;;
      --port=*) port="${argv[i]#--port=}" ;;
      --host) host="${argv[i + 1]:-}" ;;
      --host=*) host="${argv[i]#--host=}" ;;
      --ssl-keyfile | --ssl-keyfile=*) tls=1 ;;
    esac
  done
  break
done
case "$host" in "" | 0.0.0.0 | :: | "[::]") host=127.0.0.1 ;; esac
exec 3<>"/dev/tcp/$host/$port" || exit 1
[ "$tls" = 1 ] && exit 0
printf 'GET /health HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$host" >&3
read -r -t 10 _ code _ <&3 || exit 1
[ "$code" = 200 ]

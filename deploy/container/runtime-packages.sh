#!/bin/bash
# runtime-packages.sh BINARY: the packages (dpkg) owning the shared libraries BINARY loads, as ldd
# resolves them, one per line. The build stage of Dockerfile and Dockerfile.cuda writes this list
# and the runtime stage installs exactly it, so the runtime image gets the non -dev library
# packages the binary needs and nothing else, under whichever names the distribution uses.
# With Poppler linked, poppler-data too: the CMaps and encodings Poppler reads at run time for CJK
# PDFs (a Recommends of libpoppler that --no-install-recommends would leave out).
# Fails when ldd cannot resolve a library or a library belongs to no package.
set -euo pipefail
bin="$1"
out=$(ldd "$bin")
if grep -F 'not found' <<<"$out" >&2; then echo "runtime-packages: unresolved libraries" >&2; exit 1; fi
libs=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
for lib in $libs; do
  real=$(readlink -f "$lib")
  owner=
  # dpkg records a file under the path its package ships it at: with merged /usr that may be
  # /lib/... or /usr/lib/..., for the link ldd names or for the file it points to.
  for f in "$lib" "$real" "/usr${lib#/usr}" "/usr${real#/usr}" "${lib#/usr}" "${real#/usr}"; do
    owner=$(dpkg-query -S "$f" 2>/dev/null | grep -v '^diversion' | head -n1 | cut -d: -f1) && [ -n "$owner" ] && break
  done
  if [ -z "$owner" ]; then echo "runtime-packages: no package owns $lib ($real)" >&2; exit 1; fi
  echo "$owner"
  case "$owner" in libpoppler[0-9]*) echo poppler-data ;; esac
done | sort -u

#!/usr/bin/env bash
# Builds the CPU container image (Dockerfile -> locr:cpu) with buildah and runs it with podman,
# without a Docker engine and without pulling anything from a registry:
#   1. installs buildah, podman and runc from Debian when missing;
#   2. makes the base `docker.io/library/debian:bookworm-slim` when the local image store lacks it:
#      a copy of a `debootstrap --variant=minbase bookworm` root ($LOCR_MINBASE, made with
#      debootstrap when absent) trimmed the way the official slim image is (dpkg path excludes,
#      apt settings, Debian's deb822 sources), imported with `podman import`; the tarball is cached;
#   3. `buildah bud --pull=never --layers --format docker` (chroot isolation unless
#      BUILDAH_ISOLATION says otherwise; ccache in a build cache mount, so a rebuild is fast);
#   4. checks the image: size, entrypoint/port/healthcheck/user, and that its dpkg database holds
#      no compiler, no build tool and no -dev package;
#   5. runs it on the tiny fixture model mounted read-only, port 8000 published on loopback:
#      /health, /v1/models, a chat completion, a PDF through /v1/ocr (rendered with its text), the
#      image's HEALTHCHECK (also on a --port 9000 server, and failing with no server), the
#      non-root user, HF_HOME, and SIGTERM -> drain -> exit 0.
# Exits non-zero on the first failure. Cold (no layers, no ccache) it compiles all of locr inside
# the build stage: about 10 minutes on 2 cores, 30 s when cached (docs/container.md).
# Environment: LOCR_IMAGE (default locr:cpu), LOCR_MINBASE (default /var/cache/locr/bookworm-minbase),
# LOCR_IMAGE_CACHE (base tarball, default /var/tmp/locr-image), LOCR_IMAGE_REBASE=1 (re-import the
# base), LOCR_IMAGE_NICE (default 15: the build runs under nice).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
IMAGE="${LOCR_IMAGE:-locr:cpu}"
BASE=docker.io/library/debian:bookworm-slim
MINBASE="${LOCR_MINBASE:-/var/cache/locr/bookworm-minbase}"
CACHE="${LOCR_IMAGE_CACHE:-/var/tmp/locr-image}"
NICE="${LOCR_IMAGE_NICE:-15}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
T0=$SECONDS
mkdir -p "$CACHE"
# Without systemd, podman logs an error for each container whose image has a HEALTHCHECK (it
# cannot set up the check's timer); `podman healthcheck run` below runs the check itself.
if [ ! -S /run/systemd/private ]; then exec 2> >(grep -v --line-buffered 'unable to get systemd connection' >&2); fi
step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - T0)); }
ok() { printf '  ok: %s\n' "$*"; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "tools"
need=()
for p in buildah podman runc containernetworking-plugins curl python3; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
fi
ok "$(buildah --version), $(podman --version), isolation $BUILDAH_ISOLATION"

step "base image $BASE"
if [ "${LOCR_IMAGE_REBASE:-0}" = 1 ] || ! podman image exists "$BASE"; then
  if [ "${LOCR_IMAGE_REBASE:-0}" = 1 ] || [ ! -s "$CACHE/bookworm-slim.tar" ]; then
    if [ ! -x "$MINBASE/bin/bash" ]; then
      command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends debootstrap
      echo "  no minbase root at $MINBASE: debootstrap --variant=minbase bookworm into $CACHE/minbase"
      rm -rf "$CACHE/minbase"
      $SUDO debootstrap --variant=minbase bookworm "$CACHE/minbase" http://deb.debian.org/debian
      MINBASE="$CACHE/minbase"
    fi
    R="$CACHE/rootfs"
    rm -rf "$R"
    cp -a "$MINBASE" "$R"  # the minbase root itself is never written
    # What the official image's debuerreotype does to a minbase root (slim variant).
    rm -f "$R/etc/apt/sources.list"
    mkdir -p "$R/etc/apt/sources.list.d"
    cat >"$R/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    cat >"$R/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# slim: files unneeded in containers are not installed
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
    echo 'force-unsafe-io' >"$R/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
    cat >"$R/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$R/etc/apt/apt.conf.d/docker-no-languages"
    echo 'Acquire::GzipIndexes "true";' >"$R/etc/apt/apt.conf.d/docker-gzip-indexes"
    echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$R/etc/apt/apt.conf.d/docker-autoremove-suggests"
    printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d" && chmod 755 "$R/usr/sbin/policy-rc.d"
    find "$R/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "${R:?}"/usr/share/{man,info,groff,linda,locale}/* "${R:?}"/usr/share/lintian/overrides/*
    rm -rf "${R:?}"/var/lib/apt/lists/* "${R:?}"/var/cache/apt/archives/*.deb "${R:?}"/var/cache/apt/*.bin "${R:?}"/dev/* "${R:?}"/tmp/* "${R:?}"/var/log/*.log
    mkdir -p "$R/var/lib/apt/lists/partial"
    : >"$R/etc/resolv.conf"
    : >"$R/etc/hostname"  # the container runtime provides both
    tar --numeric-owner --xattrs -C "$R" -cf "$CACHE/bookworm-slim.tar.part" .
    mv "$CACHE/bookworm-slim.tar.part" "$CACHE/bookworm-slim.tar"
    rm -rf "$R"
  fi
  podman rmi -f "$BASE" >/dev/null 2>&1 || true
  podman import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$CACHE/bookworm-slim.tar" "$BASE" >/dev/null
  ok "imported $BASE from $MINBASE (tarball $CACHE/bookworm-slim.tar)"
else
  ok "$BASE already in the local image store: used as it is"
fi

step "build $IMAGE (buildah bud --pull=never --layers --format docker)"
tb=$SECONDS
set +e
nice -n "$NICE" buildah bud --pull=never --layers --format docker -f Dockerfile -t "$IMAGE" . 2>&1 | tee "$CACHE/build.log" |
  grep -E --line-buffered 'STEP [0-9]|Using cache|rror|Hits:|Misses:|not found|^lib|^zlib|^ca-cert'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || die "buildah bud failed (exit $rc; log: $CACHE/build.log)"
build_s=$((SECONDS - tb))
ok "built in ${build_s}s (log: $CACHE/build.log)"

step "image checks"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
ok "size $size bytes ($((size / 1024 / 1024)) MiB); base $(($(podman image inspect --format '{{.Size}}' "$BASE") / 1024 / 1024)) MiB"
cfg=$(podman image inspect "$IMAGE")
python3 - "$cfg" <<'EOF' || die "image config"
import json, sys
d = json.loads(sys.argv[1])[0]
c = d["Config"]
hc = d.get("Healthcheck") or c.get("Healthcheck") or {}
assert c["Entrypoint"] == ["locr", "serve"], c["Entrypoint"]
assert "8000/tcp" in c["ExposedPorts"], c["ExposedPorts"]
assert c["User"] == "1000:1000", c["User"]
assert hc.get("Test") == ["CMD", "locr-healthcheck"], hc
assert "HF_HOME=/data/huggingface" in c["Env"], c["Env"]
print("  ok: Entrypoint", c["Entrypoint"], "Cmd", c["Cmd"], "User", c["User"], "Healthcheck", hc["Test"],
      "ExposedPorts", list(c["ExposedPorts"]))
EOF

# podman's defaults do not start a container everywhere (a sandbox without CAP_SYS_RESOURCE
# refuses its rlimits, crun refuses hybrid cgroup v1/v2 hierarchies): runc and lower rlimits then.
PODMAN=(podman)
RUNOPTS=()
if ! podman run --rm "${RUNOPTS[@]}" --entrypoint true "$IMAGE" >/dev/null 2>&1; then
  PODMAN=(podman --runtime runc)
  RUNOPTS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=8192:8192)
  "${PODMAN[@]}" run --rm "${RUNOPTS[@]}" --entrypoint true "$IMAGE" || die "no container starts here"
  ok "containers start with: ${PODMAN[*]} run ${RUNOPTS[*]}"
fi
run() { "${PODMAN[@]}" run --rm "${RUNOPTS[@]}" "$@"; }

pkgs=$(run --entrypoint dpkg-query "$IMAGE" -W -f '${Package}\n')
bad=$(grep -E -- '-dev$|^(gcc|g\+\+|cpp|clang|make|cmake|ninja-build|ccache|binutils|build-essential|pkg-config|libc6-dev)(-[0-9.]+)?$' <<<"$pkgs" || true)
[ -z "$bad" ] || die "the runtime image holds build packages: $bad"
for tool in gcc g++ cc c++ make cmake ninja ld as curl wget; do
  if run --entrypoint bash "$IMAGE" -c "command -v $tool" >/dev/null; then die "the runtime image has $tool"; fi
done
ok "$(wc -l <<<"$pkgs") packages, none -dev, no compiler/linker/make/cmake (nor curl/wget)"
base_pkgs=$(run --entrypoint dpkg-query "$BASE" -W -f '${Package}\n')
ok "added to the base: $(comm -13 <(sort <<<"$base_pkgs") <(sort <<<"$pkgs") | tr '\n' ' ')"
missing=$(run --entrypoint bash "$IMAGE" -c 'ldd /usr/local/bin/locr | grep -F "not found" || true')
[ -z "$missing" ] || die "missing shared libraries: $missing"
ok "ldd /usr/local/bin/locr: every library found"

# Python with Pillow (the project's .venv has it after scripts/install-deps.sh; else a venv here).
PY="$ROOT/.venv/bin/python"
if ! "$PY" -c 'import PIL' 2>/dev/null; then
  PY="$CACHE/venv/bin/python"
  if ! "$PY" -c 'import PIL' 2>/dev/null; then
    python3 -m venv "$CACHE/venv"
    "$PY" -m pip install --quiet --disable-pip-version-check "$(grep -o '^pillow==[0-9.]*' tests/server/requirements.txt)"
  fi
fi

step "run $IMAGE on tests/fixtures/models/tiny_a"
NAME="locr-image-test-$$"
cleanup() { "${PODMAN[@]}" rm -f --ignore -t 0 "$NAME" "$NAME-9000" "$NAME-down" >/dev/null 2>&1 || true; }
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tr=$SECONDS
"${PODMAN[@]}" run -d --name "$NAME" "${RUNOPTS[@]}" -p "127.0.0.1:$PORT:8000" \
  -v "$ROOT/tests/fixtures/models/tiny_a:/models/tiny_a:ro" "$IMAGE" \
  /models/tiny_a --served-model-name tiny-a --seed 1024 --max-num-seqs 4 --max-model-len 2048 \
  --trust-remote-code --no-enable-prefix-caching --shutdown-timeout 10 >/dev/null
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 120); do
  curl -sf "$URL/health" >/dev/null && break
  [ "$(podman inspect --format '{{.State.Running}}' "$NAME")" = true ] || { podman logs "$NAME"; die "the container exited"; }
  sleep 1
done
curl -sf "$URL/health" >/dev/null || { podman logs "$NAME"; die "/health did not answer in 120 s"; }
ok "/health 200 after $((SECONDS - tr))s (port 8000 of the container published on 127.0.0.1:$PORT)"
models=$(curl -sf "$URL/v1/models")
python3 -c 'import json,sys; d = json.loads(sys.argv[1]); assert d["data"][0]["id"] == "tiny-a", d' "$models" || die "/v1/models: $models"
ok "/v1/models: tiny-a"
reply=$(curl -sf "$URL/v1/chat/completions" -H 'Content-Type: application/json' -d '{"model": "tiny-a",
  "messages": [{"role": "system", "content": "You are a concise assistant."},
               {"role": "user", "content": "用一句中文说明 TCP 和 UDP 的核心区别。"}],
  "temperature": 0, "max_tokens": 16}') || { podman logs "$NAME"; die "chat completion failed"; }
python3 - "$reply" <<'EOF' || die "chat completion: $reply"
import json, sys
d = json.loads(sys.argv[1])
c = d["choices"][0]
assert d["object"] == "chat.completion" and d["model"] == "tiny-a", d
assert c["message"]["role"] == "assistant" and isinstance(c["message"]["content"], str), c
assert c["finish_reason"] in ("length", "stop"), c
assert d["usage"]["prompt_tokens"] > 0 and d["usage"]["completion_tokens"] > 0, d["usage"]
print("  ok: chat completion:", c["finish_reason"], d["usage"], repr(c["message"]["content"][:40]))
EOF
# A PDF through /v1/ocr: Poppler renders it in the image, text in Helvetica, a font the PDF does
# not embed (fontconfig substitutes an installed one): the page image the model read has the text.
ocr=$("$PY" - "$URL" <<'EOF'
import base64, io, json, sys, urllib.error, urllib.request
from PIL import Image
text = b"BT /F1 110 Tf 60 560 Td (LOCR) Tj 0 -140 Td (IMAGE) Tj ET"
objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
pdf, offsets = b"%PDF-1.4\n", []
for i, o in enumerate(objs, 1):
    offsets.append(len(pdf))
    pdf += b"%d 0 obj\n" % i + o + b"\nendobj\n"
xref = len(pdf)
pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % x for x in offsets)
pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
body = {"model": "tiny-a", "document": base64.b64encode(pdf).decode(), "include_page_image": True,
        "dpi": 36, "max_tokens": 4, "temperature": 0}
req = urllib.request.Request(sys.argv[1] + "/v1/ocr", json.dumps(body).encode(), {"Content-Type": "application/json"})
try:
    d = json.load(urllib.request.urlopen(req, timeout=120))
except urllib.error.HTTPError as e:
    sys.exit(f"/v1/ocr: HTTP {e.code}: {e.read().decode()}")
assert d["format"] == "PDF" and d["page_count"] == 1, d
page = d["pages"][0]
img = Image.open(io.BytesIO(base64.b64decode(page["image"].split(",", 1)[1]))).convert("L")
dark = sum(img.histogram()[:100]) / (img.width * img.height)
assert 0.01 < dark < 0.5, f"page rendered without its text: {dark:.4f} of the pixels dark"
print(f"{img.width}x{img.height} page image, {100 * dark:.1f}% dark pixels (the text), {page['usage']['completion_tokens']} tokens")
EOF
) || { podman logs "$NAME"; die "/v1/ocr of a PDF"; }
ok "/v1/ocr of a PDF (Helvetica, not embedded): $ocr"
"${PODMAN[@]}" healthcheck run "$NAME" >/dev/null || die "the image's HEALTHCHECK failed on a healthy server"
ok "HEALTHCHECK (locr-healthcheck) healthy"
[ "$("${PODMAN[@]}" exec "$NAME" id -u)" = 1000 ] || die "not running as uid 1000"
"${PODMAN[@]}" exec "$NAME" sh -c 'test "$HF_HOME" = /data/huggingface && test -w /data/huggingface' || die "HF_HOME"
ok "runs as uid 1000; HF_HOME=/data/huggingface, writable"
"${PODMAN[@]}" run -d --name "$NAME-9000" "${RUNOPTS[@]}" -v "$ROOT/tests/fixtures/models/tiny_a:/models/tiny_a:ro" \
  "$IMAGE" /models/tiny_a --port 9000 >/dev/null
for _ in $(seq 1 60); do "${PODMAN[@]}" healthcheck run "$NAME-9000" >/dev/null 2>&1 && break; sleep 1; done
"${PODMAN[@]}" healthcheck run "$NAME-9000" >/dev/null || { podman logs "$NAME-9000"; die "HEALTHCHECK on --port 9000"; }
"${PODMAN[@]}" rm -f -t 0 "$NAME-9000" >/dev/null
ok "HEALTHCHECK follows --port 9000"
"${PODMAN[@]}" run -d --name "$NAME-down" "${RUNOPTS[@]}" --entrypoint sleep "$IMAGE" 60 >/dev/null
if "${PODMAN[@]}" healthcheck run "$NAME-down" >/dev/null 2>&1; then die "HEALTHCHECK healthy without a server"; fi
"${PODMAN[@]}" rm -f -t 0 "$NAME-down" >/dev/null
ok "HEALTHCHECK unhealthy when no server listens"
"${PODMAN[@]}" stop -t 30 "$NAME" >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME")
log=$(podman logs "$NAME" 2>&1)
grep -q 'received SIGTERM' <<<"$log" || { echo "$log"; die "no SIGTERM drain in the log"; }
[ "$code" = 0 ] || { echo "$log"; die "exit code $code after SIGTERM"; }
ok "podman stop: SIGTERM drain, exit 0"

step "done"
echo "image $IMAGE: $((size / 1024 / 1024)) MiB; build ${build_s}s; total $((SECONDS - T0))s"

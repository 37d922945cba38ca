# locr, CPU image: `locr serve` as the entrypoint, so the image takes `vllm serve`'s arguments the
# way vllm/vllm-openai does:
#
#   docker build -t locr:cpu .
#   docker run -p 8000:8000 -v locr-hf:/data locr:cpu lightonai/LightOnOCR-2-1B --served-model-name lightonocr-2-1b
#   docker run -p 8000:8000 -v /srv/models:/models:ro locr:cpu /models/LightOnOCR-2-1B --max-num-seqs 32
#
# Listens on 0.0.0.0:8000 (locr serve's defaults; --host/--port change them). A hub repo id is
# pulled into $HF_HOME=/data/huggingface (mount a volume at /data to keep it); a model directory
# is mounted read-only anywhere, e.g. /models. Built and run by scripts/test-image.sh (buildah and
# podman); Dockerfile.cuda is the same image with the CUDA backend. docs/container.md says more.
# BuildKit (Docker >= 23, or buildah/podman) for the ccache mount; `--format docker` with
# buildah/podman to keep the HEALTHCHECK (the OCI image format has none).
# The binary links Poppler (PDF input), so the image as distributed is GPL-2.0-or-later (README).

# ---- build: the Debian toolchain and -dev packages (scripts/install-deps.sh, less tests/tools) ----
FROM debian:bookworm-slim AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ccache \
      nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev libssl-dev zlib1g-dev \
      libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev libtiff-dev libpoppler-cpp-dev \
      libjs-marked libjs-katex node-dompurify \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# scripts/build.sh: Release, ccache (a build cache mount: a rebuild recompiles only what changed),
# no tests or micro-benchmarks; LOCR_CMAKE_ARGS adds CMake options (e.g. -DLOCR_POPPLER=OFF for a
# binary without the GPL-covered Poppler, README). The web UI's JavaScript (libjs-marked,
# node-dompurify, libjs-katex) is embedded into the binary here: the runtime stage needs none of it.
ARG LOCR_CMAKE_ARGS=""
ENV CCACHE_DIR=/ccache
RUN --mount=type=cache,id=locr-ccache,target=/ccache \
    LOCR_CUDA=OFF bash scripts/build.sh -DLOCR_BUILD_TESTS=OFF -DLOCR_BUILD_BENCH=OFF ${LOCR_CMAKE_ARGS} \
 && ccache --show-stats
# The packages owning the shared libraries the binary loads (ldd): the runtime stage installs these.
RUN bash deploy/container/runtime-packages.sh build/bin/locr >/runtime-packages.txt \
 && ldd build/bin/locr && cat /runtime-packages.txt

# ---- runtime: bookworm-slim with only the shared libraries `locr` loads (ldd) ----
FROM debian:bookworm-slim
ARG DEBIAN_FRONTEND=noninteractive
# The library packages the binary loads (for the default build: libcpp-httplib0.11, libssl3,
# zlib1g, libutf8proc2, libpng16-16, libjpeg62-turbo, libwebp7, libwebpdemux2, libgif7, libtiff6,
# libpoppler-cpp0v5 and what they depend on, and poppler-data, the CJK encodings Poppler reads),
# never upgrading what the base already has; and
# ca-certificates for HTTPS to the Hugging Face hub (`locr pull`, a repo id as MODEL) and image URLs.
COPY --from=build /runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && apt-get install -y --no-install-recommends --no-upgrade $(cat /tmp/runtime-packages.txt) ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
# A numeric non-root user (uid/gid 1000), so Kubernetes' runAsNonRoot can check it.
RUN groupadd --gid 1000 locr \
 && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/locr --shell /usr/sbin/nologin locr \
 && mkdir -p /data/huggingface /models \
 && chown -R 1000:1000 /data
COPY --from=build /src/build/bin/locr /usr/local/bin/locr
COPY deploy/container/healthcheck.sh /usr/local/bin/locr-healthcheck
# Fails the build if a shared library the binary needs is missing from this stage.
RUN ! ldd /usr/local/bin/locr | grep -F 'not found' && locr --version
ENV HF_HOME=/data/huggingface
USER 1000:1000
WORKDIR /home/locr
EXPOSE 8000
# GET /health (bash's /dev/tcp; the port is the server's --port). The start period covers
# loading (and, for a repo id, pulling) the weights.
HEALTHCHECK --interval=30s --timeout=10s --start-period=600s --retries=3 CMD ["locr-healthcheck"]
ENTRYPOINT ["locr", "serve"]
CMD ["lightonai/LightOnOCR-2-1B", "--served-model-name", "lightonocr-2-1b"]

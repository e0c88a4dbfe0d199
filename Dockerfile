# syntax=docker/dockerfile:1
# The wload image: what the pods of `wload k8s render` run
# (docs/distributed.md), and `docker run wload:0.1.0 demo` anywhere.
#
#   docker build -t wload:0.1.0 .
#
# The build stage compiles wload and the example test `wload demo`
# bundles (examples/rust/hello, for wasm32-wasip2, by crates/wload/build.rs)
# profile-guided: bench/pgo.sh builds the `dist` profile (fat LTO)
# instrumented, trains it on the hello test against `wload target` on the
# build container's loopback, and rebuilds it with the profile (a fifth
# fewer instructions per request than LTO alone: docs/BENCHMARKS.md);
# the runtime stage is Debian's slim image with the binary, CA
# certificates for https:// targets, and a user that is not root. The
# release binary needs only glibc (2.36 or older: bookworm's) and
# libgcc_s, which every Debian image has; tests/e2e/k8s.rs checks that.

FROM rust:1.95-bookworm AS build
# rust-toolchain.toml asks for "stable": use the image's toolchain rather
# than have rustup fetch whatever stable is today.
ENV RUSTUP_TOOLCHAIN=${RUST_VERSION}
RUN rustup target add wasm32-wasip2 && rustup component add llvm-tools
# The training's helpers: python3 picks a free port on 127.0.0.1 (curl and
# taskset are in the image already).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crates crates
COPY sdk sdk
COPY wit wit
COPY examples examples
COPY tests tests
COPY bench/pgo.sh bench/lib.sh bench/
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    bench/pgo.sh >/tmp/pgo.out \
    && strip --strip-debug -o /usr/local/bin/wload "$(tail -1 /tmp/pgo.out)"

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
# The uid and gid the rendered pods require (runAsUser: 10001).
RUN groupadd --system --gid 10001 wload \
    && useradd --system --uid 10001 --gid 10001 --create-home \
       --home-dir /home/wload --shell /usr/sbin/nologin wload
COPY --from=build /usr/local/bin/wload /usr/local/bin/wload
# `wload serve`'s data directory (docs/server.md): a volume mounted here
# starts owned by the service's user.
RUN install -d -o 10001 -g 10001 -m 700 /var/lib/wload
USER 10001:10001
WORKDIR /home/wload
# The compile cache in /tmp: the pods' root filesystem is read-only and
# /tmp is an emptyDir there.
ENV WLOAD_CACHE_DIR=/tmp/wload-cache
ENTRYPOINT ["wload"]
CMD ["--help"]

# syntax=docker/dockerfile:1
# The driftpreview image: `make image` builds it from source; .goreleaser.yaml builds
# it from the released binaries (BINARY=prebuilt). The final stage is Debian slim
# with git (the bot shells out to it to fetch pull requests) and CA certificates,
# nothing else; it runs as the numeric non-root user 65532 and writes only under
# /tmp and /var/lib/driftpreview, so a read-only root filesystem works (the Helm
# chart in deploy/ mounts both as volumes).

# build (source) or prebuilt (goreleaser's binaries): which stage the binary comes from.
ARG BINARY=build

FROM golang:1.26.8-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
# The same stamp as `make build` and .goreleaser.yaml.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/driftpreview ./cmd/driftpreview

FROM scratch AS prebuilt
ARG TARGETPLATFORM
COPY ${TARGETPLATFORM}/driftpreview /out/driftpreview

FROM ${BINARY} AS binary

FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && install -d -o 65532 -g 65532 -m 0750 /var/lib/driftpreview
COPY --from=binary /out/driftpreview /usr/local/bin/driftpreview
# HOME and TMPDIR on the writable /tmp: git writes nothing else.
ENV HOME=/tmp TMPDIR=/tmp
USER 65532:65532
WORKDIR /var/lib/driftpreview
# 8080: webhooks, /healthz, /readyz (the chart's server.yaml listen); 9090: metrics
# (the chart's metrics.port default).
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/driftpreview"]
CMD ["version"]

#!/usr/bin/env bash
# Installs driftpreview for action.yml into $RUNNER_TEMP/driftpreview/bin and puts
# it on the job's PATH. DP_INSTALL=release downloads the release archive for this
# runner and checks it against the release's checksums.txt; DP_INSTALL=go runs
# go install. DP_VERSION (e.g. v0.1.0) defaults to DP_ACTION_REF when that is a
# version tag, else the latest release.
set -euo pipefail
repo=driftpreview/driftpreview
bin="${RUNNER_TEMP:?}/driftpreview/bin"
mkdir -p "$bin"
version="${DP_VERSION:-}"
if [ -z "$version" ] && [[ "${DP_ACTION_REF:-}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]]; then
  version="$DP_ACTION_REF"
fi
case "${DP_INSTALL:-release}" in
go)
  GOBIN="$bin" go install "github.com/$repo/cmd/driftpreview@${version:-latest}"
  ;;
release)
  if [ -z "$version" ]; then
    # The releases are on github.com (also for GHES runners).
    version=$(curl -fsSL https://api.github.com/repos/$repo/releases/latest | sed -n 's/.*"tag_name": *"\([^"]*\)".*/\1/p' | head -n1)
    [ -n "$version" ] || { echo "::error::could not find the latest driftpreview release; set the version input"; exit 1; }
  fi
  case "${RUNNER_OS:-Linux}" in Linux) os=linux ;; macOS) os=darwin ;; *) echo "::error::driftpreview is released for Linux and macOS runners, not ${RUNNER_OS}; use install: go"; exit 1 ;; esac
  case "${RUNNER_ARCH:-X64}" in X64) arch=amd64 ;; ARM64) arch=arm64 ;; *) echo "::error::driftpreview is released for X64 and ARM64 runners, not ${RUNNER_ARCH}"; exit 1 ;; esac
  v="${version#v}"
  archive="driftpreview_${v}_${os}_${arch}.tar.gz"
  base="${DP_RELEASE_URL:-https://github.com/$repo/releases/download}/v$v"
  tmp=$(mktemp -d)
  curl -fsSL -o "$tmp/$archive" "$base/$archive"
  curl -fsSL -o "$tmp/checksums.txt" "$base/checksums.txt"
  (cd "$tmp" && grep " ${archive}\$" checksums.txt | sha256sum -c -) || { echo "::error::checksum of $archive does not match the release's checksums.txt"; exit 1; }
  tar -xzf "$tmp/$archive" -C "$bin" driftpreview
  rm -rf "$tmp"
  ;;
*)
  echo "::error::install must be release or go, not ${DP_INSTALL}"; exit 1 ;;
esac
echo "$bin" >> "${GITHUB_PATH:?}"
"$bin/driftpreview" version

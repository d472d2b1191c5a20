#!/usr/bin/env bash
# Runs `driftpreview comment` for action.yml from the DP_* inputs. The kubeconfig
# is written to a file only this user can read, under RUNNER_TEMP, and removed on
# exit; it is never echoed. The exit code is driftpreview's: 0 nothing fails the
# policy, 1 failing findings, 2 usage, config or internal error.
set -euo pipefail
args=(comment --live-mode "${DP_LIVE_MODE:-simulate}")
# The full report page for the workflow to upload (README: upload-artifact);
# the input's default when unset, none when set empty.
report="${DP_REPORT_FILE-driftpreview-report.html}"
if [ -n "$report" ]; then args+=(--report-file "$report"); fi
if [ -n "${DP_KUBECONFIG:-}" ]; then
  kc="$(umask 077 && mktemp "${RUNNER_TEMP:?}/driftpreview-kubeconfig.XXXXXX")"
  trap 'rm -f "$kc"' EXIT
  printf '%s\n' "$DP_KUBECONFIG" > "$kc"
  args+=(--kubeconfig "$kc")
  if [ -n "${DP_CONTEXT:-}" ]; then args+=(--context "$DP_CONTEXT"); fi
else
  # No kubeconfig input: no live comparison, whatever KUBECONFIG the runner has.
  export KUBECONFIG=
fi
if [ -n "${DP_CONFIG:-}" ]; then args+=(--config "$DP_CONFIG"); fi
for t in ${DP_TARGETS:-}; do args+=(--target "$t"); done
# shellcheck disable=SC2206 # extra flags are split on whitespace, as documented
extra=(${DP_ARGS:-})
set +e
driftpreview "${args[@]}" "${extra[@]}"
code=$?
set -e
exit "$code"

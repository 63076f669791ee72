#!/bin/sh
# The auditor's recipe (docs/engine.md): rebuild the engine a receipt names
# from its source, check that the rebuilt engine is byte for byte the one
# that made the run, and verify the run with it.
#
#   sh rebuild.sh RECEIPT WORKSPACE OUTPUT_DIR [REPOSITORY]
#
# RECEIPT is the run's receipt.json; WORKSPACE and OUTPUT_DIR are the
# operator's --workspace and --output-dir, holding the sources the run was
# made from and the run; REPOSITORY is what to clone (by default the
# project's public repository). Extra tool-runner options (--trusted-key P)
# go in TOOL_RUNNER_OPTIONS.
#
# It needs git, Go (GOTOOLCHAIN fetches the receipt's release if this one
# is another) and a POSIX shell; it writes only a temporary clone, removed
# at the end. Exit status: 0 the run verified with the rebuilt engine; 1
# the rebuilt engine differs from the run's, or the run does not verify; 2
# nothing to rebuild (the receipt names no clean revision) or a step failed.
set -eu

fail() {
	echo "rebuild.sh: $*" >&2
	exit 2
}

[ $# -ge 3 ] && [ $# -le 4 ] || fail "usage: sh rebuild.sh RECEIPT WORKSPACE OUTPUT_DIR [REPOSITORY]"
receipt=$1 workspace=$2 output=$3
repository=${4:-https://github.com/metricproof/metricproof}
[ -f "$receipt" ] || fail "the receipt is not a file: give the run's receipt.json"

# field NAME: the string (or true, false, null) this engine's receipts hold
# under NAME, one key a line. Anything else reads as empty.
field() {
	sed -n 's/^ *"'"$1"'": *"\{0,1\}\([^",]*\)"\{0,1\},\{0,1\}$/\1/p' "$receipt" | head -n 1
}
run_id=$(field run_id)
engine=$(field engine_sha256)
go_version=$(field go_version)
revision=$(field vcs_revision)
modified=$(field vcs_modified)

case $revision in
"" | null)
	fail "the receipt names no VCS revision (vcs_revision is null or missing): the engine that made run ${run_id:-?} was built without one (GOFLAGS=-buildvcs=false, go run, an export or a git worktree), so no source can be checked out and rebuilt. Verify the run with the engine that made it, if you still have it: its tool-runner version prints the receipt's engine_sha256."
	;;
esac
printf '%s\n' "$revision" | grep -Eqx '[0-9a-f]{40}|[0-9a-f]{64}' ||
	fail "the receipt's vcs_revision is not a git commit hash: this receipt was not written by tool-runner"
[ "$modified" = false ] ||
	fail "the receipt says the engine was built from a checkout with uncommitted changes (vcs_modified: $modified), which no commit holds: it cannot be rebuilt from revision $revision alone. Verify the run with the engine that made it."
printf '%s\n' "$go_version" | grep -Eqx 'go[0-9]+(\.[0-9]+)*((rc|beta)[0-9]+)?' ||
	fail "the receipt's go_version is not a Go release: this receipt was not written by tool-runner"
printf '%s\n' "$engine" | grep -Eqx '[0-9a-f]{64}' ||
	fail "the receipt's engine_sha256 is not a SHA256: this receipt was not written by tool-runner"
printf '%s\n' "$run_id" | grep -Eqx '[A-Za-z0-9][A-Za-z0-9_-]{0,63}' ||
	fail "the receipt's run_id is not a run ID: this receipt was not written by tool-runner"

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
echo "rebuild.sh: cloning and checking out $revision" >&2
git clone --quiet --no-checkout "$repository" "$src/metricproof" || fail "git clone of the repository failed"
git -C "$src/metricproof" checkout --quiet --detach "$revision" ||
	fail "revision $revision is not in the repository: clone the repository that holds it (the fourth argument)"

# README's build command, with the receipt's Go release. -buildvcs=true on
# the command line stamps the revision whatever GOFLAGS says.
echo "rebuild.sh: building with $go_version and README's command" >&2
(cd "$src/metricproof" && GOTOOLCHAIN=$go_version CGO_ENABLED=0 go build -buildvcs=true -trimpath -ldflags="-s -w" -o bin/tool-runner ./cmd/tool-runner) ||
	fail "the build failed: see go's message above"
runner=$src/metricproof/bin/tool-runner

version=$("$runner" version) || fail "the rebuilt engine's tool-runner version failed"
rebuilt=$(printf '%s\n' "$version" | sed -n 's/^{"engine_sha256":"\([0-9a-f]*\)".*/\1/p')
if [ "$rebuilt" != "$engine" ]; then
	echo "rebuild.sh: the rebuilt engine is not the one that made run $run_id: its SHA256 is $rebuilt, the receipt's $engine." >&2
	echo "rebuild.sh: build for the platform of the engine that made the run (GOOS, GOARCH, GOAMD64: its tool-runner version lists them), with no GOFLAGS (go env GOFLAGS: '$(go env GOFLAGS)'). The rebuilt engine's line:" >&2
	printf '%s\n' "$version" >&2
	exit 1
fi
echo "rebuild.sh: the rebuilt engine is the run's, SHA256 $engine; verifying run $run_id" >&2

# shellcheck disable=SC2086 # TOOL_RUNNER_OPTIONS is split into options on purpose
printf '{"request_id":"audit-1","tool":"verify_result","arguments":{"run_id":"%s"}}' "$run_id" |
	"$runner" --workspace "$workspace" --output-dir "$output" ${TOOL_RUNNER_OPTIONS:-} && exit 0
exit 1

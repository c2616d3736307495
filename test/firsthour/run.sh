#!/usr/bin/env bash
# The first hour, measured: from `git clone` to the first completed cycle,
# following nothing but the README of the clone.
#
#   test/firsthour/run.sh [warm|cold] [SOURCE]
#
# SOURCE is a git repository (default: the one this script is in); its
# HEAD commit is cloned with `git clone --no-local` (a real clone, no
# hard links) into a temporary HOME. Then the README's "Install" block
# runs in the clone (`make install` into `$(go env GOPATH)/bin` of that
# HOME, then PATH as the README sets it), and the "Standalone in one
# file" section as a reader with a keyless local server follows it: the
# first block line by line, its lines up to `singularity init` replaced by
# the keyless server's block (the second), as the README says, up to and
# including `singularity once`, which returns after the being's first
# cycle. `run`, which lives until stopped, is not run.
#
# The provider is mock-llm (@dwmkerr/mock-llm, pinned in test/peers), a
# server that takes no key, started from this checkout's
# test/peers/node_modules (`make peers` installs it; FIRST_HOUR_PEERS
# names another node_modules) on a free loopback port before the clock
# starts: it is the server the reader already runs. Only the README's
# --base-url is replaced, by the mock's; the mock lists the README's
# model. Its rules answer every completion with one fixed reply and its
# usage, as a local server does: its default rule echoes the being's
# message by pasting it into its JSON unescaped, and answers a 500 to a
# message holding a newline or a quote.
#
# warm: the machine's Go build and module caches and npm cache.
# cold: empty ones in the temporary directory: every module comes from
# the Go module proxy, everything is compiled, standard library included,
# and npx fetches the MCP servers of init's servers file from the npm
# registry.
#
# It prints the seconds from before `git clone` to the end of `once`, and
# each step's share. It exits non-zero, with the output of the step that
# failed, if any step fails, if `once` reports no completed cycle, or if
# FIRST_HOUR_DEADLINE seconds (default 1800) pass first. FIRST_HOUR_KEEP=1
# keeps the temporary directory.
set -euo pipefail

mode=${1:-warm}
case $mode in
warm | cold) ;;
*)
	echo "usage: $0 [warm|cold] [SOURCE]" >&2
	exit 2
	;;
esac
here=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
src=$(cd "${2:-$here}" && pwd)
rev=$(git -C "$src" rev-parse HEAD)
deadline=${FIRST_HOUR_DEADLINE:-1800}
peers=${FIRST_HOUR_PEERS:-$here/test/peers/node_modules}
mock=$peers/.bin/mock-llm
for tool in git make go node curl; do
	command -v "$tool" >/dev/null || {
		echo "first-hour: $tool is not on PATH" >&2
		exit 2
	}
done
[ -x "$mock" ] || {
	echo "first-hour: $mock is missing: run make peers in $here" >&2
	exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/first-hour.XXXXXX")
mock_pid=
cleanup() {
	if [ -n "$mock_pid" ]; then
		kill "$mock_pid" 2>/dev/null || true
		wait "$mock_pid" 2>/dev/null || true
	fi
	if [ "${FIRST_HOUR_KEEP:-}" = 1 ]; then
		echo "first-hour: kept $work" >&2
	else
		chmod -R u+w "$work" 2>/dev/null || true # the module cache is read-only
		rm -rf "$work"
	fi
}
trap cleanup EXIT

# The reader's environment: a HOME of their own (so GOPATH is new and
# GOBIN unset), the machine's Go settings (GOENV: GOTOOLCHAIN, GOFLAGS),
# the caches of the mode, and the PATH the machine has. No key: the
# server takes none.
home=$work/home
mkdir -p "$home"
if [ "$mode" = warm ]; then
	gocache=$(go env GOCACHE) gomodcache=$(go env GOMODCACHE) npmcache=$(npm config get cache)
else
	gocache=$work/cache/go-build gomodcache=$work/cache/mod npmcache=$work/cache/npm
fi
reader_env=(
	env -i "HOME=$home" "PATH=$PATH" "TERM=dumb"
	"GOENV=$(go env GOENV)" "GOCACHE=$gocache" "GOMODCACHE=$gomodcache"
	"npm_config_cache=$npmcache"
)

# section NAME N FILE prints the body of the Nth sh block of the README
# section titled NAME.
section() {
	awk -v title="## $1" -v want="$2" '
		$0 == title { in_section = 1; next }
		in_section && /^## / { exit }
		in_section && /^```sh$/ { n++; if (n == want) { in_block = 1 }; next }
		in_block && /^```$/ { exit }
		in_block { print }
	' "$3"
}

# The keyless server's block, read from the README of the commit cloned
# before the clock starts, so that the mock can list its model.
git -C "$src" show "$rev:README.md" >"$work/README.md"
keyless=$(section "Standalone in one file" 2 "$work/README.md")
case $keyless in
"singularity init "*" --auth none"*) ;;
*)
	echo "first-hour: the README's standalone section has no keyless block (singularity init ... --auth none) as its second sh block" >&2
	exit 1
	;;
esac
model=$(printf '%s\n' "$keyless" | sed -n 's/.* --model \([^ ]*\).*/\1/p' | head -n 1)
[ -n "$model" ] || {
	echo "first-hour: the README's keyless init line names no --model" >&2
	exit 1
}

# The provider: mock-llm on a free loopback port, ready (its /health
# answers) before the clock starts.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
cat >"$work/mock-llm.yaml" <<EOF
rules:
  - path: "/v1/chat/completions"
    method: "POST"
    match: "@"
    response:
      status: 200
      content: |
        {"id": "chatcmpl-{{timestamp}}", "object": "chat.completion", "model": "{{jmes request body.model}}",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "Resting for now."}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1000, "completion_tokens": 4, "total_tokens": 1004}}
  - path: "/v1/models"
    method: "GET"
    response:
      status: 200
      content: |
        {"object": "list", "data": [{"id": "$model", "object": "model", "owned_by": "first-hour"}]}
EOF
HOST=127.0.0.1 PORT=$port "$mock" --config "$work/mock-llm.yaml" >"$work/mock.out" 2>&1 &
mock_pid=$!
base=http://127.0.0.1:$port
# curl polls the starting server's /health (another process), 30 s at most.
curl -fs --retry 30 --retry-connrefused --retry-delay 1 --retry-max-time 30 "$base/health" >/dev/null || {
	echo "first-hour: mock-llm never answered $base/health:" >&2
	cat "$work/mock.out" >&2
	exit 1
}

now() { date +%s.%N; }
# name is a line's first two words, as a step's name.
name() { echo "$1" | awk '{ print $1 "-" $2 }' | tr -cd 'A-Za-z0-9._-'; }
# stamped prints line after a line that stamps the time it starts.
stamped() {
	printf 'echo "@@@ $(date +%%s.%%N) %s" >>%q\n%s\n' "$(name "$1")" "$work/stamps" "$1"
}
steps=()
start=$(now)
clone=$home/singularity
git clone -q --no-local "$src" "$clone"
if [ "$(git -C "$clone" rev-parse HEAD)" != "$rev" ]; then
	git -C "$clone" checkout -q --detach "$rev"
fi
steps+=("clone $(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')")
readme=$clone/README.md

# The script the reader types: the install block in the clone, then the
# keyless block in place of the standalone block's lines up to its
# `singularity init`, then the rest of that block up to `once`.
script=$work/reader.sh
{
	echo "cd '$clone'"
	while IFS= read -r line; do
		case $line in
		sudo\ *) echo "echo 'first-hour: the README install block needs sudo' >&2; exit 1" && break ;;
		esac
		stamped "$line"
	done < <(section Install 1 "$readme")
	while IFS= read -r line; do
		stamped "$(printf '%s\n' "$line" | sed "s|--base-url [^ ]*|--base-url $base/v1|")"
	done < <(section "Standalone in one file" 2 "$readme")
	found_init= found_once=
	while IFS= read -r line; do
		case $line in
		"singularity init "*)
			found_init=1
			continue
			;;
		"singularity run"*) break ;;
		esac
		[ -n "$found_init" ] || continue
		stamped "$line"
		case $line in
		"singularity once"*)
			found_once=1
			break
			;;
		esac
	done < <(section "Standalone in one file" 1 "$readme")
	[ -n "$found_once" ] || echo "echo 'first-hour: the README standalone block has no singularity once after its init' >&2; exit 1"
	echo "echo \"@@@ \$(date +%s.%N) end\" >>'$work/stamps'"
} >"$script"

status=0
(cd "$home" && timeout "$deadline" "${reader_env[@]}" sh -e "$script") >"$work/out" 2>&1 || status=$?
end=$(now)
if [ "$status" != 0 ]; then
	echo "first-hour: the README's steps failed (exit $status$([ "$status" = 124 ] && echo ", past the ${deadline}s deadline")); the script was:" >&2
	cat "$script" >&2
	echo "--- its output:" >&2
	tail -n 60 "$work/out" >&2
	exit 1
fi
# once prints its report last: the first cycle, completed.
report=$(awk '/^\{$/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$work/out")
if ! printf '%s' "$report" | node -e '
	let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
		const r = JSON.parse(s);
		process.exit(r.cycle === 1 && r.status === "completed" ? 0 : 1);
	});'; then
	echo "first-hour: once reported no completed first cycle:" >&2
	tail -n 40 "$work/out" >&2
	exit 1
fi

# Each step's share: from its stamp to the next one's.
prev= prevname=
while read -r _ t name; do
	if [ -n "$prev" ]; then
		steps+=("$prevname $(awk -v a="$prev" -v b="$t" 'BEGIN { printf "%.1f", b - a }')")
	fi
	prev=$t prevname=$name
done <"$work/stamps"
total=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "first-hour: $mode: $total s from git clone to the first completed cycle, keyless, on mock-llm $(node -p "require('$peers/@dwmkerr/mock-llm/package.json').version")"
printf '  %s s\n' "${steps[@]}"
echo "  $(date -u +%F) $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg)), /tmp on $(df -T "${TMPDIR:-/tmp}" | awk 'NR == 2 { print $2 }'), $(go env GOVERSION), node $(node --version), revision ${rev:0:12}"

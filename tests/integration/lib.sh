# Shared helpers for the integration tests (sourced). Each test exits 0 on
# success, 1 on failure, 77 when something it needs is absent.
set -u
: "${TOPOPLACE:?TOPOPLACE must point at the built topoplace}"
TP_FIXTURES=${TP_FIXTURES:-}
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-it.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; failures=$((failures + 1)); }
skip_all() { echo "SKIP: $*"; exit 77; }
# expect CODE DESC CMD...: run CMD, check its exit status
expect() {
	want=$1 desc=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$desc"; else
		bad "$desc (exit $got, wanted $want)"
		sed 's/^/    /' "$tmp/err" | head -5
	fi
}
# jeq FILE FILTER VALUE DESC: jq filter on FILE equals VALUE
jeq() {
	v=$(jq -r "$2" "$1" 2>/dev/null)
	if [ "$v" = "$3" ]; then ok "$4 ($2 = $3)"; else bad "$4 ($2 = '$v', wanted '$3')"; fi
}
finish() {
	if [ "$failures" -eq 0 ]; then echo "all passed"; exit 0; fi
	echo "$failures failed"
	exit 1
}
command -v jq >/dev/null 2>&1 || skip_all "jq not installed (contrib/install-deps.sh installs it)"

#!/bin/sh
# Print the Debian mirror apt is configured with, for the private deb-src
# lists of build-slurm.sh and fetch-slurm-src.sh.
#
#   contrib/debian-mirror.sh [SUITE [FILE...]]
#
# Prints the URI (no trailing slash) of the first apt source entry whose
# suites include SUITE and whose components include main: one-line entries
# ("deb [OPTIONS] URI SUITE COMPONENT...") in *.list files and deb822
# paragraphs (Types/URIs/Suites/Components, Enabled: no skipped) in
# *.sources files. Other repositories (Docker's "bookworm stable", Google's
# "cloud-sdk-bookworm main") never match. Without a match it prints
# http://deb.debian.org/debian, or .../debian-security for a SUITE ending
# in -security.
#
# SUITE  default: this system's codename when it is Debian, else bookworm
# FILE   the files to read, in order; default /etc/apt/sources.list, then
#        /etc/apt/sources.list.d/*.list and *.sources in name order
# TP_DEBIAN_MIRROR  when set, printed instead (for a -security SUITE, its
#        sibling: TP_DEBIAN_MIRROR without /debian, plus /debian-security)
set -eu

case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
-*) echo "debian-mirror.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

suite=${1:-}
if [ -z "$suite" ]; then
	# shellcheck source=/dev/null
	[ ! -r /etc/os-release ] ||
		suite=$(. /etc/os-release && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}") || true
	suite=${suite:-bookworm}
fi
[ $# -eq 0 ] || shift

if [ -n "${TP_DEBIAN_MIRROR:-}" ]; then
	m=${TP_DEBIAN_MIRROR%/}
	case $suite in *-security) m=${m%/debian}/debian-security ;; esac
	echo "$m"
	exit 0
fi

if [ $# -eq 0 ]; then
	set -- /etc/apt/sources.list
	for f in /etc/apt/sources.list.d/*; do
		case $f in *.list | *.sources) set -- "$@" "$f" ;; esac
	done
fi
n=$#
for f; do
	[ ! -r "$f" ] || set -- "$@" "$f"
done
shift "$n"

m=
if [ $# -gt 0 ]; then
	m=$(awk -v want="$suite" '
	function has(list, word,   n, i, w) {
		n = split(list, w, /[ \t]+/)
		for (i = 1; i <= n; i++) if (w[i] == word) return 1
		return 0
	}
	function found(uri) {
		if (uri == "" || uri ~ /^cdrom:/) return 0
		sub(/\/+$/, "", uri)
		print uri
		done = 1
		exit
	}
	# deb822: one paragraph of fields, lower-cased names
	function para(   u) {
		if (("types" in fld) && ("uris" in fld) && ("suites" in fld) &&
		    ("components" in fld) && tolower(fld["enabled"]) != "no" &&
		    (has(fld["types"], "deb") || has(fld["types"], "deb-src")) &&
		    has(fld["suites"], want) && has(fld["components"], "main")) {
			split(fld["uris"], u, /[ \t]+/)
			found(u[1])
		}
		split("", fld)
		cur = ""
	}
	FNR == 1 && NR > 1 && deb822 { para() }
	FNR == 1 { deb822 = FILENAME ~ /\.sources$/ }
	deb822 && /^[ \t]*#/ { next }
	deb822 && /^[ \t]*$/ { para(); next }
	deb822 && /^[ \t]/ {
		v = $0
		gsub(/^[ \t]+|[ \t]+$/, "", v)
		if (cur != "") fld[cur] = fld[cur] == "" ? v : fld[cur] " " v
		next
	}
	deb822 {
		i = index($0, ":")
		if (i == 0) next
		cur = tolower(substr($0, 1, i - 1))
		v = substr($0, i + 1)
		gsub(/^[ \t]+|[ \t]+$/, "", v)
		fld[cur] = v
		next
	}
	# one-line: deb [OPTIONS] URI SUITE COMPONENT...
	{
		sub(/#.*/, "")
		if ($1 != "deb" && $1 != "deb-src") next
		l = $0
		sub(/^[ \t]*deb(-src)?[ \t]+/, "", l)
		sub(/^\[[^]]*\][ \t]*/, "", l)
		n = split(l, w, /[ \t]+/)
		if (n < 3 || w[2] != want) next
		for (i = 3; i <= n; i++) if (w[i] == "main") found(w[1])
	}
	END { if (!done && deb822) para() }' "$@")
fi
if [ -z "$m" ]; then
	case $suite in
	*-security) m=http://deb.debian.org/debian-security ;;
	*) m=http://deb.debian.org/debian ;;
	esac
fi
echo "$m"

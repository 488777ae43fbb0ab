#!/bin/sh
# Installs the anamnesis release binary for this machine: picks the file
# for this OS and CPU from the release's SHA256SUMS, downloads it, checks
# its SHA-256 and only then puts it in place.
#
#   curl -fsSL https://github.com/anamnesis-memory/anamnesis/releases/latest/download/install.sh | sh
#   sh install.sh [-d DIR] [-b BASE]
#
# -d DIR   where to install (default $ANAMNESIS_INSTALL_DIR, else ~/.local/bin)
# -b BASE  where the release files are: a URL or a local directory
#          (default $ANAMNESIS_RELEASE_URL, else the latest GitHub release)
set -eu

dir=${ANAMNESIS_INSTALL_DIR:-"$HOME/.local/bin"}
base=${ANAMNESIS_RELEASE_URL:-https://github.com/anamnesis-memory/anamnesis/releases/latest/download}

die() {
	echo "install.sh: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	-d) [ $# -ge 2 ] || die "-d needs a directory"; dir=$2; shift 2 ;;
	-b) [ $# -ge 2 ] || die "-b needs a URL or directory"; base=$2; shift 2 ;;
	-h | --help) sed -n '2,11p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see -h)" ;;
	esac
done

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
MINGW* | MSYS* | CYGWIN*) os=windows ;;
*) die "no release binary for $(uname -s); build from source: go install github.com/anamnesis-memory/anamnesis/cmd/anamnesis@latest" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no release binary for $(uname -m); build from source: go install github.com/anamnesis-memory/anamnesis/cmd/anamnesis@latest" ;;
esac
# A shell under Rosetta 2 says x86_64 on an Apple silicon Mac: take the
# native binary.
if [ "$os" = darwin ] && [ "$arch" = amd64 ] && [ "$(sysctl -n hw.optional.arm64 2>/dev/null || true)" = 1 ]; then
	arch=arm64
fi
ext=
[ "$os" = windows ] && ext=.exe

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t anamnesis)
trap 'rm -rf "$tmp"' EXIT INT TERM

# fetch NAME: copies the release file NAME into $tmp.
fetch() {
	case $base in
	http://* | https://*)
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL -o "$tmp/$1" "$base/$1" || die "download $base/$1 failed"
		elif command -v wget >/dev/null 2>&1; then
			wget -q -O "$tmp/$1" "$base/$1" || die "download $base/$1 failed"
		else
			die "need curl or wget to download $base/$1"
		fi
		;;
	file://*) cp "${base#file://}/$1" "$tmp/$1" || die "no $1 in ${base#file://}" ;;
	*) cp "$base/$1" "$tmp/$1" || die "no $1 in $base" ;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	else
		die "need sha256sum or shasum to check the download"
	fi
}

fetch SHA256SUMS
# Lines are "<sha256>  <name>" (sha256sum's text mode); a "*" before the
# name marks binary mode.
line=$(sed 's/ \*/  /' "$tmp/SHA256SUMS" | grep -E "^[0-9a-f]{64}  anamnesis_[^ ]*_${os}_${arch}${ext}\$" | head -n 1 || true)
[ -n "$line" ] || die "the release has no binary for ${os}/${arch}"
want=${line%% *}
name=${line##* }
fetch "$name"
got=$(sha256 "$tmp/$name")
[ "$got" = "$want" ] || die "checksum mismatch for $name: got $got, SHA256SUMS says $want; nothing installed"

mkdir -p "$dir" || die "cannot create $dir"
chmod 755 "$tmp/$name"
# Copy next to the target, then rename: a running anamnesis (a hook, the
# MCP server) keeps its old file and never sees a half-written one.
cp "$tmp/$name" "$dir/.anamnesis.new$ext" || die "cannot write to $dir"
mv -f "$dir/.anamnesis.new$ext" "$dir/anamnesis$ext" || die "cannot install into $dir"
v=$("$dir/anamnesis$ext" --version) || die "installed $dir/anamnesis$ext, but it does not run"
echo "installed $v to $dir/anamnesis$ext"
case :$PATH: in
*:"$dir":*) ;;
*) echo "note: $dir is not on your PATH; add it, e.g. export PATH=\"$dir:\$PATH\"" ;;
esac

#!/bin/sh
# Builds the release binaries of anamnesis into $DIST (make release calls
# this): one stripped, statically linked binary per platform, named
# anamnesis_<version>_<os>_<arch>[.exe], their SHA256SUMS, and install.sh.
#
# Environment: VERSION (required), COMMIT, BUILT (stamped into --version),
# DIST (default dist), PLATFORMS (default: the five Claude Code runs on),
# TAGS (build tags, default urfave_cli_no_docs: see the Makefile's build),
# GO (default go).
set -eu

: "${VERSION:?set VERSION, e.g. v0.1.0}"
DIST=${DIST:-dist}
GO=${GO:-go}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"}
COMMIT=${COMMIT:-}
BUILT=${BUILT:-}
TAGS=${TAGS-urfave_cli_no_docs}
root=$(cd "$(dirname "$0")/.." && pwd)

mkdir -p "$DIST"
# Stale binaries of another version would end up in SHA256SUMS.
rm -f "$DIST"/anamnesis_* "$DIST/SHA256SUMS"

ldflags="-s -w -X main.version=$VERSION"
[ -n "$COMMIT" ] && ldflags="$ldflags -X main.commit=$COMMIT"
[ -n "$BUILT" ] && ldflags="$ldflags -X main.built=$BUILT"

for p in $PLATFORMS; do
	os=${p%/*}
	arch=${p#*/}
	ext=
	[ "$os" = windows ] && ext=.exe
	name="anamnesis_${VERSION}_${os}_${arch}${ext}"
	# -trimpath: no build machine paths in the binary; CGO_ENABLED=0: a
	# static binary (the SQLite driver is pure Go), so one file runs on
	# any libc.
	(cd "$root" && GOOS=$os GOARCH=$arch CGO_ENABLED=0 "$GO" build -trimpath -tags "$TAGS" -ldflags "$ldflags" -o "$DIST/$name" ./cmd/anamnesis)
	echo "built $DIST/$name"
done

cd "$DIST"
if command -v sha256sum >/dev/null 2>&1; then
	sha256sum anamnesis_* >SHA256SUMS
else
	shasum -a 256 anamnesis_* >SHA256SUMS
fi
cp "$root/scripts/install.sh" install.sh
echo "wrote $DIST/SHA256SUMS and $DIST/install.sh"

#!/usr/bin/env bash
# Builds the Debian package (`make deb`): bin/collie_<version>_<arch>.deb.
#
# 1. Copies the work tree (without .git, bin/ and what .gitignore names)
#    into bin/deb/collie/, so that the build leaves nothing in the tree.
# 2. Fetches the Go modules into a build-local cache, bin/deb/gomod, with
#    `go mod download`: the only step that uses the network (the Go module
#    proxy). Nothing is vendored.
# 3. Runs `dpkg-buildpackage -b -us -uc` there; debian/rules builds with
#    GOPROXY=off from that cache.
#
# Needs: Go 1.26 or later on PATH, and the Debian packages debhelper,
# dpkg-dev, build-essential (see .ci/deps).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=$top/bin/deb
src=$out/collie

for tool in go dpkg-buildpackage dh; do
	if ! command -v "$tool" >/dev/null; then
		case $tool in
		go) echo "build-deb: go is not on PATH; install Go 1.26 or later" >&2 ;;
		*) echo "build-deb: $tool is missing; install it with: sudo apt-get install debhelper dpkg-dev build-essential" >&2 ;;
		esac
		exit 1
	fi
done

# One build at a time in this tree: a second `make deb` (another test run)
# waits rather than removing this one's files.
mkdir -p "$out"
exec 9>"$out.lock"
if ! flock -n 9; then
	echo "build-deb: waiting for another make deb in this tree to finish" >&2
	flock 9
fi

# The module cache is read-only unless -modcacherw; make it writable so
# that a later run can remove it.
[ -d "$out/gomod" ] && chmod -R u+w "$out/gomod"
rm -rf "$src" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
tar --exclude-vcs --exclude-vcs-ignores --exclude=./bin -cf - . | tar -C "$src" -xf -

export GOMODCACHE=$out/gomod
export GOFLAGS=-modcacherw
# The compile cache is only an accelerator (content-addressed): share the
# user's.
GOCACHE=$(go env GOCACHE)
export GOCACHE
(cd "$src" && go mod download)

(cd "$src" && dpkg-buildpackage -b -us -uc)

version=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb=collie_${version}_${arch}.deb
cp "$out/$deb" "$top/bin/$deb"
echo "build-deb: built bin/$deb"

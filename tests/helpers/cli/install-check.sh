#!/usr/bin/env bash
# install-check.sh BUILDDIR SRCDIR - redlock-cli as installed: staged with
# `meson install --destdir`, it must run without LD_LIBRARY_PATH (its RPATH
# finds the staged libredlock, not one on the system), and its man page
# must render without a troff warning, and the shell completions are
# installed. TAP on stdout.
set -euo pipefail
build=$(cd "$1" && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
option() {
    meson introspect "$build" --buildoptions | python3 -c \
        'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]==sys.argv[1]))' "$1"
}
meson install -C "$build" --no-rebuild --destdir "$dest" --quiet >/dev/null
prefix=$(option prefix)
bindir=$(option bindir)
mandir=$(option mandir)
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $mandir in /*) ;; *) mandir=$prefix/$mandir ;; esac
cli=$dest$bindir/redlock-cli
echo "1..4"
if [[ $prefix == /usr ]]; then
    echo "ok 1 # SKIP prefix /usr: on the loader's path, no RPATH by design"
elif lib=$(env -u LD_LIBRARY_PATH ldd "$cli" | awk '/libredlock/ {print $3}') &&
     [[ $lib == "$dest"/* ]]; then
    echo "ok 1 - the staged redlock-cli loads the staged libredlock ($lib)"
else
    echo "not ok 1 - the staged redlock-cli loads '${lib:-nothing}', not one under $dest"
    exit 1
fi
if [[ $prefix == /usr ]]; then
    echo "ok 2 # SKIP prefix /usr: the library is found on the loader's path"
elif out=$(env -u LD_LIBRARY_PATH "$cli" --version 2>&1) && [[ $out == redlock-cli\ * ]]; then
    echo "ok 2 - the staged redlock-cli runs without LD_LIBRARY_PATH: $out"
else
    echo "not ok 2 - the staged redlock-cli does not run: $out"
    exit 1
fi
man=$dest$mandir/man1/redlock-cli.1
if [[ ! -f $man ]]; then
    echo "not ok 3 - no man page at $man"
    exit 1
fi
if warn=$(groff -ww -z -man "$man" 2>&1) && [[ -z $warn ]]; then
    echo "ok 3 - the installed man page renders without troff warnings"
else
    echo "not ok 3 - troff warns about the installed man page: $warn"
    exit 1
fi
bash_comp=$(find "$dest" -path '*/bash-completion/completions/redlock-cli' | head -n 1)
zsh_comp=$(find "$dest" -path '*/zsh/*/_redlock-cli' | head -n 1)
if [[ -n $bash_comp && -n $zsh_comp ]]; then
    echo "ok 4 - bash and zsh completions installed (${bash_comp#"$dest"}, ${zsh_comp#"$dest"})"
else
    echo "not ok 4 - completions missing: bash '${bash_comp}', zsh '${zsh_comp}'"
    exit 1
fi

#!/bin/bash
# dlopen (tests/programs/dlopener.c + libplug.so): a library loaded and
# unloaded at run time is symbolized (plug_work), and the process's
# .csprof file holds two epochs, the newest with libplug.so, the oldest
# without it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/dlopen.data
lib=$P/libplug.so
[[ -f $lib ]] || fail "$lib was not built"

check "narwhal-record runs dlopener and exits 0"
nw_record_ok "$d" "$P/dlopener" "$lib"
nw_check_measurement "$d"
ok "measurement is complete"

check "--flat names plug_work (in the unloaded library) and before_dlopen, about 50% each"
nw_report "$NW_TMP/flat" "$d" --flat
for fn in plug_work before_dlopen; do
	got=$(nw_flat_cumul "$NW_TMP/flat" "$fn")
	if ! nw_near "$got" 50 10; then
		nw_show "narwhal-report --flat" "$NW_TMP/flat"
		fail "$fn holds $got%, expected 50% +- 10"
	fi
	ok "$fn $got%"
done
grep -Eq 'plug_work \(.*libplug\.c:[0-9]+\)' "$NW_TMP/flat" ||
	fail "plug_work's row does not name libplug.c:LINE"
ok "plug_work's row names libplug.c:LINE"

check "the .csprof file holds at least 2 epochs; libplug.so only in the newer ones"
files=("$d"/*.csprof)
[[ ${#files[@]} -eq 1 ]] || fail "${#files[@]} .csprof files, expected 1 (one thread)"
read -r _ nepochs ntrees _ _ < <(nw_csprof summary "${files[0]}")
((nepochs >= 2)) || fail "${files[0]##*/} holds $nepochs epoch(s), expected 2 or more"
((ntrees >= 2)) || fail "${files[0]##*/} holds $ntrees tree(s), expected one per sampled epoch (2+)"
nw_csprof modules "${files[0]}" >"$NW_TMP/modules"
grep -Eq '^0 .*/libplug\.so$' "$NW_TMP/modules" || {
	nw_show "epoch modules" "$NW_TMP/modules"
	fail "the newest epoch (0) does not list libplug.so"
}
# The oldest epoch with a user module: a sample taken inside the execve
# that started the program (the kernel's frames only, before the new image
# is mapped) may make an older one of the kernel alone.
oldest=$(awk '$2 != "[kernel.kallsyms]" && $1 > m { m = $1 } END { print m + 0 }' "$NW_TMP/modules")
if grep -Eq "^$oldest .*/libplug\\.so\$" "$NW_TMP/modules"; then
	nw_show "epoch modules" "$NW_TMP/modules"
	fail "the oldest epoch ($oldest) lists libplug.so, which was loaded later"
fi
grep -Eq "^$oldest .*/dlopener\$" "$NW_TMP/modules" ||
	fail "the oldest epoch does not list the dlopener executable"
ok "$nepochs epochs, $ntrees trees; libplug.so in epoch 0, not in epoch $oldest"

pass

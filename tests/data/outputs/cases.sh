# shellcheck shell=bash disable=SC2034 # (NW_OUTPUT_CASES: read by the scripts that source it)
# The golden outputs (tests/integration/outputs.sh, regen.sh): one case per
# line, "NAME|MEASUREMENT|ARGS" — narwhal-report MEASUREMENT ARGS, its
# output in NAME.out.  ARGS naming OUT.ext write an export to that file,
# which is compared instead of stdout (gzip exports decompressed: their
# header carries no date, but zlib's version may differ).  Measurements
# are directories beside this file; DIFF stands for "--diff demo demo2".
NW_OUTPUT_CASES=(
	"tree|demo|--tree"
	"tree-pct|demo|--tree --percent-limit 0"
	"flat|demo|--flat"
	"threads|demo|--threads"
	"folded|demo|--folded"
	"folded-thread|demo|--folded --per-thread"
	"inverted|demo|--tree --inverted"
	"callers|demo|--callers shade_pixels"
	"modules|demo|--by module"
	"lines|demo|--lines shade_pixels"
	"addresses|demo|--addresses shade_pixels --sort"
	"timeline|demo|--timeline --width 40"
	"timeline-fn|demo|--timeline=functions --width 40"
	"health|demo|--stack-health"
	"time|demo|--time 20%,60% --flat"
	"focus|demo|--focus draw_scene --ignore rasterize --hide render_thread --folded"
	"root|demo|--root draw_scene --tree"
	"fold-recursion|cxx|--fold-recursion --tree"
	"cxx-tree|cxx|--tree"
	"cxx-full|cxx|--full-names --flat"
	"diff|DIFF|"
	"diff-folded|DIFF|--folded"
	"diff-all|DIFF|--all"
	"diff-tree|DIFF|--tree --all"
	"diff-modules|DIFF|--by module --all"
	"diff-callers|DIFF|--callers shade_pixels --all"
	"diff-lines|DIFF|--lines shade_pixels --all"
	"leaks|alloc|--leaks"
	"alloc-flat|alloc|--flat --metric alloc-bytes"
	"sections|sections|--sections"
	"by-section|sections|--by-section --folded"
	"pprof|demo|--pprof OUT.pb.gz"
	"speedscope|demo|--speedscope OUT.json"
	"chrome-trace|demo|--chrome-trace OUT.json"
	"flamegraph|demo|--flamegraph OUT.svg"
	"flamegraph-diff|DIFF|--flamegraph OUT.svg"
	"html|demo|--html OUT.html"
	"html-diff|DIFF|--html OUT.html"
	"cxx-speedscope|cxx|--speedscope OUT.json"
	"cxx-pprof|cxx|--pprof OUT.pb.gz"
)

# nw_output_run NAME MEAS ARGS REPORT DATA OUTDIR: runs one case with
# narwhal-report REPORT on the measurements in DATA; its output (or
# export) goes to OUTDIR/NAME.out.
nw_output_run() {
	local name=$1 meas=$2 args=$3 report=$4 data=$5 dir=$6 out=""
	local -a argv=() words

	# Relative names: the outputs that name the measurement are the same anywhere.
	if [[ $meas == DIFF ]]; then
		argv=(--diff demo demo2)
	else
		argv=("$meas")
	fi
	read -r -a words <<<"$args"
	for w in "${words[@]}"; do
		if [[ $w == OUT.* ]]; then
			out=$dir/$name.${w#OUT.}
			w=$out
		fi
		argv+=("$w")
	done
	if [[ -z $out ]]; then
		(cd "$data" && "$report" "${argv[@]}") >"$dir/$name.out"
	elif [[ $out == *.gz ]]; then
		(cd "$data" && "$report" "${argv[@]}") >/dev/null
		gzip -dc "$out" >"$dir/$name.out"
		rm -f "$out"
	else
		(cd "$data" && "$report" "${argv[@]}") >/dev/null
		mv "$out" "$dir/$name.out"
	fi
}

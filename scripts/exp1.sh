w=.gpu/bin/warpkit
o=$OUT
(for t in .gpu/tests/gpu_sbh-*; do timeout 200 $t --include-ignored 2>&1 | grep -E "test |result|2\^20"; done) > $o/gpu_sbh.txt 2>&1
timeout 60 compute-sanitizer --tool memcheck $w --backend gpu sbh --m 65536 --grid 24 2>&1 | tail -3 > $o/memcheck.txt
timeout 60 $w sbh --m 1048576 > $o/sbh-default.txt 2>&1
timeout 60 $w sbh --m 1048576 --shuffle > $o/sbh-shuffle.txt 2>&1
for r in 48 40; do WARPKIT_MAXNREG=sbh_estimate_wide_kernel=$r timeout 60 $w sbh --m 1048576 > $o/sbh-est$r.txt 2>&1; done
for b in 2.2 2.4; do timeout 60 $w sbh --m 1048576 --beta $b > $o/sbh-beta$b.txt 2>&1; done
g() { timeout 60 $w gravity --check 300 "$@" 2>&1 | grep -E "gravity|total|median" ; }
for r in 0 32 36; do echo "== lattice group maxnreg $r"; WARPKIT_MAXNREG=bh_gravity_group=$r g --scene lattice --n 1048576 --traversal group --theta 0.5; done > $o/lattice.txt
for r in 0 40; do echo "== plummer group2 quad maxnreg $r"; WARPKIT_MAXNREG=bh_gravity_group2_quad=$r g --scene plummer --n 1048576 --traversal group2 --theta 0.5 --quadrupole; done > $o/plummer.txt

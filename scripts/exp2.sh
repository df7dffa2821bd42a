w=.gpu/bin/warpkit
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu -k regex:^sbh_estimate_wide_kernel$ -c 1 --section SourceCounters --section WarpStateStats --section ComputeWorkloadAnalysis --page source --print-source sass --csv $w sbh --m 1048576 > $OUT/est-source.csv 2>$OUT/est-err.txt
timeout 200 $ncu -k regex:^sbh_estimate_wide_kernel$ -c 1 --section ComputeWorkloadAnalysis --section SpeedOfLight $w sbh --m 1048576 > $OUT/est-compute.txt 2>&1
timeout 200 $ncu -k regex:^bh_gravity_group$ -c 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv $w gravity --scene lattice --n 1048576 --traversal group --theta 0.5 --check 0 --repeats 1 > $OUT/grav-source.csv 2>$OUT/grav-err.txt
ls -la $OUT

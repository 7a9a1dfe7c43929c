# The latency distribution of one latency section (HdrHistogram's percentile plot): tag is set
# by the caller, e.g. gnuplot -e "tag='8'" Scripts/latency.gnuplot, which reads latency-8.dat
# (its first line "# TITLE", then one block per path: percentile, 1/(1-p), µs) and writes
# latency-8.png.
if (!exists("tag")) tag = '1'
data = sprintf('latency-%s.dat', tag)
title = system(sprintf("head -n 1 '%s' | sed 's/^# //'", data))
# One block per path, each named on its first line in quotes.
paths = int(system(sprintf("grep -c '^\"' '%s'", data)))
set terminal png size 900,500
set output sprintf('latency-%s.png', tag)
set title sprintf('Propagation latency by percentile, %s (loopback, each write timed from when it was due)', title)
set logscale x
set logscale y
set xrange [1:100000]
set xtics ('50%%' 2, '90%%' 10, '99%%' 100, '99.9%%' 1000, '99.99%%' 10000, '99.999%%' 100000)
set ylabel 'µs'
set key top left
set grid
plot for [i=0:paths-1] data index i using 2:3 with lines linewidth 2 title columnheader(1)

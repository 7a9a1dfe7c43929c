# Latency percentiles (µs, log scale) from latency.dat, and throughput to 8 subscribers from
# throughput.dat, of the raw libzmq path and SharedMirror.
set terminal png size 1200,500
set output 'latency.png'
set multiplot layout 1,2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left

set title 'Propagation latency, writer → broker → readers (loopback)'
set logscale y
set yrange [10:*]
set ylabel 'µs'
plot 'latency.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99', '' using 4 title 'p99.9'

set title 'Throughput, one writer → 8 subscribers'
set logscale y
set yrange [100:*]
set key below
set ylabel 'per second'
plot 'throughput.dat' using 2:xtic(1) title 'writes reaching all 8'

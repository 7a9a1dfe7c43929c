# Latency percentiles (µs, log scale) of the raw libzmq path and SharedMirror, from latency.dat.
set terminal png size 900,500
set output 'latency.png'
set title 'Propagation latency, writer → broker → readers (loopback)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'µs'
set key top left
plot 'latency.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99', '' using 4 title 'p99.9'

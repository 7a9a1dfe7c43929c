# Bar charts of the sections without a distribution: call with chart='web' (or 'durability',
# 'store-send'); the data file has a quoted label per line, then one or two figures.
set terminal png size 1100,550
set output chart.'.png'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics rotate by -20 font ',9' nomirror
set yrange [0:*]
columns = 2
if (chart eq 'web') { set title 'A tap to the new value on a terminal profile (ms)'; columns = 3 }
if (chart eq 'durability') { set title 'One confirmed write by broker (µs, log scale)'; set logscale y; set yrange [10:*] }
if (chart eq 'store-send') { set title 'Store.send and the reducer called directly (ns per action, log scale)'; set logscale y; set yrange [1:*]; columns = 3 }
if (columns == 3) {
  plot chart.'.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99'
} else {
  plot chart.'.dat' using 2:xtic(1) notitle
}

# Confirmed writes per second of the cluster section (cluster.dat: writers on keys, through a
# broker on etcd, etcd's own transactions, a single broker in memory) into cluster.png.
set terminal png size 900,500
set output 'cluster.png'
set title 'A cluster on etcd: confirmed writes per second (log scale)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [100:*]
set ylabel 'writes per second'
set xlabel 'writers on keys'
set key top left
plot 'cluster.dat' using 2:xtic(1) title 'through a broker on etcd', '' using 3 title "etcd's own transactions", '' using 4 title 'single broker in memory'

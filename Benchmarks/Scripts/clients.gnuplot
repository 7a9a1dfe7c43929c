# Write to last subscriber by connected clients (clients.dat: clients, then ms for ours p50,
# raw p50, ours p99, raw p99) into clients.png.
set terminal png size 900,500
set output 'clients.png'
set title 'A write to the last of N subscribers (ms), SharedMirror against a raw libzmq forwarder'
set xlabel 'connected clients'
set ylabel 'ms'
set key top left
set grid
plot 'clients.dat' using 1:2 with linespoints linewidth 2 title 'SharedMirror p50', \
  '' using 1:3 with linespoints linewidth 2 title 'raw p50', \
  '' using 1:4 with linespoints dashtype 2 title 'SharedMirror p99', \
  '' using 1:5 with linespoints dashtype 2 title 'raw p99'

#!/bin/bash
# Inside the VM (see scripts/host/run.sh): sroce as installed by
# "make install".
set -euxo pipefail
modprobe sroce
rdma link add sroce0 type sroce netdev eth0
rdma link show
rdma dev show
ibv_devices
ibv_devinfo -d sroce0
ibv_devinfo -v -d sroce0 | grep -E 'GID\['
tests/bin/sroce-check pds sroce0 4 16
# Traffic: RC ping-pong with data checks, then RDMA WRITE bandwidth.
ibv_rc_pingpong -d sroce0 -g 1 -n 100 -c > /tmp/srv.log 2>&1 &
sleep 1
ibv_rc_pingpong -d sroce0 -g 1 -n 100 -c localhost
wait $!
ib_write_bw -d sroce0 -x 1 -n 200 -s 65536 > /tmp/srv.log 2>&1 &
sleep 1.5
ib_write_bw -d sroce0 -x 1 -n 200 -s 65536 localhost
wait $!
rdma link delete sroce0
rmmod sroce

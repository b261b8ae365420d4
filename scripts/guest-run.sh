#!/bin/bash
# Inside the VM (see scripts/run.sh): sroce as installed by "make install".
set -euxo pipefail
modprobe sroce
rdma link add sroce0 type sroce netdev eth0
rdma link show
rdma dev show
ibv_devices
ibv_devinfo -d sroce0
ibv_devinfo -v -d sroce0 | grep -E 'GID\['
tests/bin/sroce-check pds sroce0 4 16
rdma link delete sroce0
rmmod sroce

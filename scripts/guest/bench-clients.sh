# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The kernel's storage clients over one RDMA device, for make bench
# (scripts/guest/guest-bench.sh, which sources this after tests/lib.sh):
# each is a target and an initiator on this one VM, over eth0's IPv4
# address, so whichever RDMA device is on eth0 (rxe0 or sroce0) carries
# them. Their backing stores are in memory, so that no disk is the limit.
#
#   nfs   NFSv4.2 over RDMA: knfsd exports a tmpfs ("rdma 20049"), the
#         client mounts it with proto=rdma; the file is written first (a
#         hole would go back as one, its bytes never crossing the wire)
#   nvme  NVMe over Fabrics: nvmet-rdma serves a file on tmpfs
#         (buffered_io=1: tmpfs has no O_DIRECT), nvme-rdma connects
#   srp   SRP: LIO's ib_srpt with a ramdisk LUN (rd_mcp), ib_srp logs in
#         through rdma_cm
#   iser  iSCSI over RDMA: LIO with a ramdisk LUN and an iSER portal
#         (ib_isert), open-iscsi's initiator (ib_iser) logs in
#
# NAME_up DEV sets it up over the RDMA device DEV and sets ulp_target to
# what fio is to use (a file or a block device); or returns 1 with the
# reason in ulp_why. NAME_down undoes whatever NAME_up got to, quietly,
# each step only if it was done, and unloads what was loaded, so that the
# device can go afterwards (make bench alternates rdma_rxe and sroce);
# it returns 1, with the reason in ulp_why, if something stayed. Call it
# after NAME_up whether or not that worked.
#
# Written from tests/cases/nfs_rdma.sh and nvme_rdma_fs.sh (which pass)
# and tests/drafts/srp.sh and iser.sh (never run yet): where SRP or iSER
# fails, look at those drafts' notes first.

# shellcheck disable=SC2034 # ulp_target and ulp_why are for the caller
ulp_target='' ulp_why=''
ulp_size_mb=64			# what fio reads and writes of each
ulp_ip=''			# eth0's IPv4 address: both ends
lio_cfg=/sys/kernel/config/target
lio_backends="target_core_iblock target_core_file target_core_pscsi target_core_user"

# ulp_no WHY...: a setup or teardown step failed: say why (one line)
ulp_no() {
	ulp_why=$(printf '%s' "$*" | tr '\n' ' ' | cut -c1-200)
	return 1
}

# ulp_prepare: what every client needs; returns 1 with ulp_why
ulp_prepare() {
	ulp_target='' ulp_why=''
	ulp_ip=$(ipv4_of eth0)
	[ -n "$ulp_ip" ] || { ulp_no "eth0 has no IPv4 address"; return 1; }
	# configfs may be a module nothing has loaded yet (6.12): without
	# it there is no /sys/kernel/config to mount on.
	modprobe configfs 2>/dev/null
	mountpoint -q /sys/kernel/config ||
		mount -t configfs none /sys/kernel/config ||
		{ ulp_no "cannot mount configfs"; return 1; }
}

# klog_tail: the kernel's last lines, for a reason
klog_tail() { dmesg | tail -3 | cut -c1-120 | tr '\n' ' '; }

# --- NFSv4.2 over RDMA -------------------------------------------------
nfs_port=20049
nfs_exp=/tmp/bench-nfs-export	# the server's tmpfs, the NFSv4 root
nfs_mnt=/tmp/bench-nfs-mnt	# the client's mount point
nfs_state=/tmp/bench-nfs-state	# bound over /var/lib/nfs (read-only)
nfs_mountd=''


# nfs_up DEV: see tests/cases/nfs_rdma.sh for why each step is as it is
nfs_up() {
	local c out xprt

	ulp_prepare || return 1
	for c in rpc.nfsd rpc.mountd exportfs mount.nfs; do
		command -v $c > /dev/null ||
			{ ulp_no "no $c (nfs-kernel-server)"; return 1; }
	done
	modprobe -a nfsd nfsv4 rpcrdma ||
		{ ulp_no "modprobe nfsd nfsv4 rpcrdma failed"; return 1; }
	mkdir -p $nfs_state/v4recovery $nfs_exp $nfs_mnt
	: > $nfs_state/etab
	: > $nfs_state/rmtab
	mount --bind $nfs_state /var/lib/nfs ||
		{ ulp_no "cannot bind $nfs_state over /var/lib/nfs"; return 1; }
	mount -t tmpfs -o size=$((2 * ulp_size_mb))m,mode=0777 tmpfs $nfs_exp ||
		{ ulp_no "cannot mount a tmpfs at $nfs_exp"; return 1; }
	dd if=/dev/zero of=$nfs_exp/fio.dat bs=1M count=$ulp_size_mb \
		status=none || { ulp_no "cannot write $nfs_exp/fio.dat"; return 1; }
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		{ ulp_no "cannot mount the nfsd filesystem"; return 1; }
	out=$(timeout 30 exportfs -i \
		-o rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync \
		"$ulp_ip/32:$nfs_exp" 2>&1) || { ulp_no "exportfs: $out"; return 1; }
	rpc.mountd -F -N 2 -N 3 -u > /tmp/bench-nfs-mountd.log 2>&1 &
	nfs_mountd=$!
	wait_for 10 mountd_ready "$nfs_mountd" ||
		{ ulp_no "rpc.mountd did not start: $(tail -1 /tmp/bench-nfs-mountd.log)"; return 1; }
	timeout 60 rpc.nfsd -N 3 -V 4.2 -U -G 10 -L 30 4 ||
		{ ulp_no "rpc.nfsd failed: $(klog_tail)"; return 1; }
	if ! grep -qx "rdma $nfs_port" /proc/fs/nfsd/portlist; then
		echo "rdma $nfs_port" > /proc/fs/nfsd/portlist ||
			{ ulp_no "no rdma listener on $nfs_port: $(klog_tail)"; return 1; }
	fi
	echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null
	wait_for 30 grace_over ||
		{ ulp_no "the NFSv4 grace period did not end"; return 1; }
	out=$(timeout 60 mount -t nfs -o vers=4.2,proto=rdma,port=$nfs_port \
		"$ulp_ip:/" $nfs_mnt 2>&1) ||
		{ ulp_no "mount over RDMA: $out $(klog_tail)"; return 1; }
	# Over RDMA, or the row would measure something else.
	xprt=$(awk -v m=$nfs_mnt '$1 == "device" { on = ($5 == m) }
		on && $1 == "xprt:" { print $2; exit }' /proc/self/mountstats)
	[ "$xprt" = rdma ] ||
		{ ulp_no "the mount's transport is '$xprt', not rdma"; return 1; }
	ulp_target=$nfs_mnt/fio.dat
}

# nfs_rpcs: the mount's READ and WRITE RPCs so far, from mountstats:
# "NAME OPS QUEUE_MS RTT_MS EXECUTE_MS" for each (the times are sums: in
# the client's queue, on the wire and at the server, and in all); its
# whole block goes to standard error (the log)
nfs_rpcs() {
	awk -v m=$nfs_mnt '$1 == "device" { on = ($5 == m) }
		on { print > "/dev/stderr" }
		on && ($1 == "READ:" || $1 == "WRITE:") {
			printf "%s %d %d %d %d ", substr($1, 1, length($1) - 1),
				$2, $7, $8, $9
		}' /proc/self/mountstats
}

nfs_down() {
	local m rc=0

	if mountpoint -q $nfs_mnt; then
		timeout 60 umount $nfs_mnt || timeout 30 umount -f $nfs_mnt ||
			{ umount -l $nfs_mnt; ulp_no "umount $nfs_mnt failed"; rc=1; }
	fi
	mountpoint -q /var/lib/nfs && timeout 30 exportfs -ua
	[ -e /proc/fs/nfsd/threads ] && timeout 60 rpc.nfsd 0
	if [ -n "$nfs_mountd" ]; then
		kill "$nfs_mountd" 2>/dev/null
		wait "$nfs_mountd" 2>/dev/null
		nfs_mountd=''
	fi
	mountpoint -q /proc/fs/nfsd && umount /proc/fs/nfsd
	mountpoint -q $nfs_exp && umount $nfs_exp
	mountpoint -q /var/lib/nfs && umount /var/lib/nfs
	# The transports go in work items after their last reference.
	wait_for 30 unload rpcrdma ||
		{ ulp_no "rpcrdma would not unload"; rc=1; }
	for m in nfsv4 nfsd nfs; do
		unload $m 2>/dev/null
	done
	rm -rf $nfs_exp $nfs_mnt $nfs_state /tmp/bench-nfs-mountd.log
	return $rc
}

# --- NVMe over Fabrics (RDMA) ------------------------------------------
nvme_nqn=nqn.2026-11.org.sroce:bench
nvme_cfg=/sys/kernel/config/nvmet
nvme_img=/tmp/bench-nvme-ns.img	# on the guest's tmpfs

# nvme_ns_dev: the namespace's block device (the multipath head's or the
# controller's, not a hidden path's nvmeXcYnZ)
nvme_ns_dev() {
	local b

	for b in /sys/block/nvme*; do
		[[ ${b##*/} =~ ^nvme[0-9]+n[0-9]+$ ]] || continue
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = $nvme_nqn ] ||
			continue
		[ -b "/dev/${b##*/}" ] || continue
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}
nvme_ns_there() { nvme_ns_dev > /dev/null; }
nvme_ctrl_gone() { ! grep -qx $nvme_nqn /sys/class/nvme/nvme*/subsysnqn 2>/dev/null; }

nvme_up() {
	local s=$nvme_cfg/subsystems/$nvme_nqn p=$nvme_cfg/ports/1 out

	ulp_prepare || return 1
	command -v nvme > /dev/null || { ulp_no "no nvme (nvme-cli)"; return 1; }
	modprobe -a rdma_cm nvmet nvmet-rdma nvme-rdma ||
		{ ulp_no "modprobe nvmet nvmet-rdma nvme-rdma failed"; return 1; }
	truncate -s $((2 * ulp_size_mb))M $nvme_img
	mkdir $s || { ulp_no "cannot make the nvmet subsystem"; return 1; }
	echo 1 > $s/attr_allow_any_host
	mkdir $s/namespaces/1
	echo -n $nvme_img > $s/namespaces/1/device_path
	echo 1 > $s/namespaces/1/buffered_io
	echo 1 > $s/namespaces/1/enable ||
		{ ulp_no "nvmet namespace enable: $(klog_tail)"; return 1; }
	mkdir $p
	echo rdma > $p/addr_trtype
	echo ipv4 > $p/addr_adrfam
	echo "$ulp_ip" > $p/addr_traddr
	echo 4420 > $p/addr_trsvcid
	ln -s $s $p/subsystems/$nvme_nqn ||
		{ ulp_no "nvmet-rdma port on $ulp_ip: $(klog_tail)"; return 1; }
	out=$(timeout 60 nvme connect -t rdma -a "$ulp_ip" -s 4420 \
		-n $nvme_nqn --hostnqn=nqn.2026-11.org.sroce:bench-host \
		--hostid=5e5e5e5e-0000-4000-8000-0000000000b1 2>&1) ||
		{ ulp_no "nvme connect: $out $(klog_tail)"; return 1; }
	wait_for 10 nvme_ns_there ||
		{ ulp_no "no namespace block device after nvme connect"; return 1; }
	ulp_target=$(nvme_ns_dev)
}

nvme_down() {
	local s=$nvme_cfg/subsystems/$nvme_nqn p=$nvme_cfg/ports/1 m rc=0

	if ! nvme_ctrl_gone; then
		timeout 60 nvme disconnect -n $nvme_nqn > /dev/null 2>&1
		wait_for 10 nvme_ctrl_gone ||
			{ ulp_no "the NVMe controller stayed after disconnect"; rc=1; }
	fi
	[ -L $p/subsystems/$nvme_nqn ] && rm $p/subsystems/$nvme_nqn
	[ -d $p ] && rmdir $p
	[ -e $s/namespaces/1/enable ] && echo 0 > $s/namespaces/1/enable
	[ -d $s/namespaces/1 ] && rmdir $s/namespaces/1
	[ -d $s ] && rmdir $s
	for m in nvme-rdma nvmet-rdma nvmet; do
		wait_for 30 unload $m || { ulp_no "$m would not unload"; rc=1; }
	done
	rm -f $nvme_img
	return $rc
}

# --- SRP (LIO ib_srpt, ib_srp) -----------------------------------------
srp_cm_port=5555
srp_rd=$lio_cfg/core/rd_mcp_0/bench_srp	# the ramdisk
srp_dev=''				# the RDMA device of the login
srp_wwn='' srp_tpg='' srp_acl=''

# srp_shost: the SCSI host number of ib_srp's login on $srp_dev
srp_shost() {
	local h

	# No login made (a setup that failed before it): no host, and not
	# every host without an ib_srp device either.
	[ -n "$srp_dev" ] || return 1
	for h in /sys/class/scsi_host/host*; do
		[ "$(cat "$h/local_ib_device" 2>/dev/null)" = "$srp_dev" ] ||
			continue
		echo "${h##*/host}"
		return 0
	done
	return 1
}
# srp_disk: the LIO-ORG disk behind that host (no udevd: by /sys)
srp_disk() {
	local n d b

	n=$(srp_shost) || return 1
	for d in /sys/class/scsi_host/host"$n"/device/target*/*:*; do
		grep -q '^LIO-ORG' "$d/vendor" 2>/dev/null || continue
		for b in "$d"/block/*; do
			[ -b "/dev/${b##*/}" ] &&
				{ echo "/dev/${b##*/}"; return 0; }
		done
	done
	return 1
}
srp_disk_there() { srp_disk > /dev/null; }
srp_no_host() { ! srp_shost > /dev/null; }

# srp_up DEV: see tests/drafts/srp.sh for the names (the target port
# after GID 0, the ACL after the initiator's IP address)
srp_up() {
	local opts=() gid name guid host login

	ulp_prepare || return 1
	srp_dev=$1
	modprobe -a target_core_mod sd_mod rdma_cm ||
		{ ulp_no "modprobe target_core_mod sd_mod rdma_cm failed"; return 1; }
	modinfo -F parm ib_srpt | grep -q '^rdma_cm_port:' &&
		opts+=("rdma_cm_port=$srp_cm_port")
	modprobe ib_srpt "${opts[@]}" ||
		{ ulp_no "modprobe ib_srpt failed"; return 1; }
	[ -d $lio_cfg/core ] || { ulp_no "no $lio_cfg/core"; return 1; }
	mkdir -p $srp_rd || { ulp_no "cannot make the rd_mcp ramdisk"; return 1; }
	{ echo rd_pages=$((2 * ulp_size_mb * 256)) > $srp_rd/control &&
		echo 1 > $srp_rd/enable; } ||
		{ ulp_no "rd_mcp ramdisk: $(klog_tail)"; return 1; }
	{ mkdir -p $lio_cfg/srpt && echo $srp_cm_port > \
		$lio_cfg/srpt/discovery_auth/rdma_cm_port; } ||
		{ ulp_no "ib_srpt listening on rdma_cm port $srp_cm_port: $(klog_tail)"; return 1; }
	gid=$(cat "/sys/class/infiniband/$srp_dev/ports/1/gids/0")
	case $gid in
	fe80:0000:0000:0000:*) name=${gid#fe80:0000:0000:0000:} ;;
	*) name=0x${gid//:/} ;;
	esac
	srp_wwn=$lio_cfg/srpt/$name
	srp_tpg=$srp_wwn/tpgt_1
	srp_acl=$srp_tpg/acls/$ulp_ip
	mkdir "$srp_wwn" ||
		{ ulp_no "ib_srpt has no port $name (GID 0 $gid): $(klog_tail)"; return 1; }
	{ mkdir "$srp_tpg" "$srp_tpg/lun/lun_0" &&
		ln -s $srp_rd "$srp_tpg/lun/lun_0/bench_srp" &&
		mkdir "$srp_acl" "$srp_acl/lun_0" &&
		ln -s "$srp_tpg/lun/lun_0" "$srp_acl/lun_0/lun_0" &&
		echo 1 > "$srp_tpg/enable"; } ||
		{ ulp_no "the SRP target's configfs: $(klog_tail)"; return 1; }
	guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
	modprobe ib_srp || { ulp_no "modprobe ib_srp failed"; return 1; }
	host=/sys/class/infiniband_srp/srp-$srp_dev-1
	[ -e "$host/add_target" ] || { ulp_no "no $host/add_target"; return 1; }
	login="id_ext=$guid,ioc_guid=$guid,dest=$ulp_ip:$srp_cm_port,src=$ulp_ip"
	echo "$login" > "$host/add_target" ||
		{ ulp_no "ib_srp login refused: $(klog_tail)"; return 1; }
	wait_for 30 srp_disk_there ||
		{ ulp_no "no LIO-ORG disk after the SRP login"; return 1; }
	ulp_target=$(srp_disk)
}

srp_down() {
	local p m rc=0

	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p/delete" ] && echo 1 > "$p/delete"
	done 2>/dev/null
	wait_for 30 srp_no_host ||
		{ ulp_no "the SRP host stayed after logout"; rc=1; }
	wait_for 30 unload ib_srp || { ulp_no "ib_srp would not unload"; rc=1; }
	unload scsi_transport_srp
	if [ -n "$srp_tpg" ]; then
		[ -e "$srp_tpg/enable" ] && echo 0 > "$srp_tpg/enable"
		[ -L "$srp_acl/lun_0/lun_0" ] && rm "$srp_acl/lun_0/lun_0"
		[ -d "$srp_acl/lun_0" ] && rmdir "$srp_acl/lun_0"
		[ -d "$srp_acl" ] && rmdir "$srp_acl"
		[ -L "$srp_tpg/lun/lun_0/bench_srp" ] &&
			rm "$srp_tpg/lun/lun_0/bench_srp"
		[ -d "$srp_tpg/lun/lun_0" ] && rmdir "$srp_tpg/lun/lun_0"
		[ -d "$srp_tpg" ] && rmdir "$srp_tpg"
		[ -d "$srp_wwn" ] && rmdir "$srp_wwn"
		srp_tpg=''
	fi
	[ -e $lio_cfg/srpt/discovery_auth/rdma_cm_port ] &&
		echo 0 > $lio_cfg/srpt/discovery_auth/rdma_cm_port
	[ -d $lio_cfg/srpt ] && rmdir $lio_cfg/srpt
	[ -d $srp_rd ] && rmdir $srp_rd
	[ -d "${srp_rd%/*}" ] && rmdir "${srp_rd%/*}"
	wait_for 30 unload ib_srpt || { ulp_no "ib_srpt would not unload"; rc=1; }
	lio_unload || rc=1
	return $rc
}

# lio_unload: LIO's modules. The first backstore made target_core_mod
# load every backend it knows; they hold it.
lio_unload() {
	local m

	for m in $lio_backends target_core_mod; do
		unload "$m" || { ulp_no "$m would not unload"; return 1; }
	done
}

# --- iSER (LIO ib_isert, open-iscsi ib_iser) ---------------------------
iser_iqn=iqn.2026-11.org.sroce:bench-target
iser_ini=iqn.2026-11.org.sroce:bench-initiator
iser_iface=sroce-bench
iser_tpg=$lio_cfg/iscsi/$iser_iqn/tpgt_1
iser_rd=$lio_cfg/core/rd_mcp_1/bench_iser	# the ramdisk
iser_etc=/tmp/bench-iser-etc			# bound over /etc/iscsi
iser_iscsid=''
iser_np=''					# the portal

iser_iscsid_ready() { grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix; }
# iser_disk: the block device of our session's LUN 0
iser_disk() {
	local s b

	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = $iser_iqn ] || continue
		for b in "$s"/device/target*/*:0/block/*; do
			[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
		done
	done
	return 1
}
iser_disk_there() { iser_disk > /dev/null; }
iser_no_session() { ! compgen -G '/sys/class/iscsi_session/session*' > /dev/null; }

# iser_up DEV: see tests/drafts/iser.sh (iscsid in a session of its own:
# its shutdown signals its whole process group)
iser_up() {
	local a c out

	ulp_prepare || return 1
	for c in iscsid iscsiadm; do
		command -v $c > /dev/null ||
			{ ulp_no "no $c (open-iscsi)"; return 1; }
	done
	[ -d /etc/iscsi ] || { ulp_no "no /etc/iscsi to bind over"; return 1; }
	modprobe -a target_core_mod iscsi_target_mod ib_isert ib_iser sd_mod ||
		{ ulp_no "modprobe LIO, ib_isert, ib_iser failed"; return 1; }
	[ -d $lio_cfg/core ] || { ulp_no "no $lio_cfg/core"; return 1; }
	mkdir -p $iser_rd || { ulp_no "cannot make the rd_mcp ramdisk"; return 1; }
	{ echo rd_pages=$((2 * ulp_size_mb * 256)) > $iser_rd/control &&
		echo 1 > $iser_rd/enable; } ||
		{ ulp_no "rd_mcp ramdisk: $(klog_tail)"; return 1; }
	{ mkdir -p $iser_tpg/lun/lun_0 &&
		ln -s $iser_rd $iser_tpg/lun/lun_0/bench_iser; } ||
		{ ulp_no "iSCSI target $iser_iqn lun_0: $(klog_tail)"; return 1; }
	iser_np=$iser_tpg/np/$ulp_ip:3260
	{ mkdir "$iser_np" && echo 1 > "$iser_np/iser"; } ||
		{ ulp_no "iSER portal on $ulp_ip:3260: $(klog_tail)"; return 1; }
	# Demo mode: any initiator, no CHAP, writable.
	for a in generate_node_acls=1 cache_dynamic_acls=1 authentication=0 \
		demo_mode_write_protect=0; do
		echo "${a#*=}" > "$iser_tpg/attrib/${a%=*}" ||
			{ ulp_no "tpgt_1 attribute $a"; return 1; }
	done
	echo 1 > $iser_tpg/enable || { ulp_no "cannot enable tpgt_1"; return 1; }

	mkdir -p $iser_etc/nodes $iser_etc/send_targets $iser_etc/ifaces \
		/run/lock/iscsi
	echo "InitiatorName=$iser_ini" > $iser_etc/initiatorname.iscsi
	cat > $iser_etc/iscsid.conf <<-EOF
	node.startup = manual
	node.session.auth.authmethod = None
	node.session.timeo.replacement_timeout = 20
	node.conn[0].timeo.login_timeout = 15
	node.conn[0].timeo.logout_timeout = 15
	node.session.initial_login_retry_max = 2
	node.session.scan = auto
	EOF
	mount --bind $iser_etc /etc/iscsi ||
		{ ulp_no "cannot bind $iser_etc over /etc/iscsi"; return 1; }
	setsid iscsid -f > /tmp/bench-iscsid.log 2>&1 &
	iser_iscsid=$!
	wait_for 10 iser_iscsid_ready ||
		{ ulp_no "iscsid did not start: $(tail -1 /tmp/bench-iscsid.log)"; return 1; }
	{ iscsiadm -m iface -I $iser_iface -o new > /dev/null &&
		iscsiadm -m iface -I $iser_iface -o update \
			-n iface.transport_name -v iser > /dev/null; } ||
		{ ulp_no "iscsiadm: iface $iser_iface over iser"; return 1; }
	out=$(timeout 60 iscsiadm -m discovery -t sendtargets \
		-p "$ulp_ip:3260" -I $iser_iface 2>&1) ||
		{ ulp_no "SendTargets discovery over iSER: $out"; return 1; }
	out=$(timeout 120 iscsiadm -m node -T $iser_iqn -p "$ulp_ip:3260" \
		-I $iser_iface --login 2>&1) ||
		{ ulp_no "iSER login: $out $(klog_tail)"; return 1; }
	wait_for 30 iser_disk_there ||
		{ ulp_no "no disk for LUN 0 after the iSER login"; return 1; }
	ulp_target=$(iser_disk)
}

iser_down() {
	local d rc=0

	if [ -n "$iser_iscsid" ]; then
		if ! iser_no_session; then
			timeout 60 iscsiadm -m node -u > /dev/null 2>&1
			wait_for 30 iser_no_session ||
				{ ulp_no "the iSCSI session stayed after logout"; rc=1; }
		fi
		kill "$iser_iscsid" 2>/dev/null
		timeout 30 tail --pid="$iser_iscsid" -f /dev/null ||
			kill -9 "$iser_iscsid" 2>/dev/null
		wait "$iser_iscsid" 2>/dev/null
		iser_iscsid=''
	fi
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	if [ -n "$iser_np" ] && [ -e "$iser_np/iser" ]; then
		echo 0 > "$iser_np/iser"
	fi
	[ -e $iser_tpg/enable ] && echo 0 > $iser_tpg/enable
	[ -L $iser_tpg/lun/lun_0/bench_iser ] &&
		rm $iser_tpg/lun/lun_0/bench_iser
	for d in $iser_tpg/lun/lun_0 "$iser_np" $iser_tpg \
		$lio_cfg/iscsi/$iser_iqn $lio_cfg/iscsi $iser_rd "${iser_rd%/*}"; do
		[ -n "$d" ] && [ -d "$d" ] && rmdir "$d"
	done
	iser_np=''
	# The connections go in work items after logout.
	for d in ib_iser ib_isert iscsi_target_mod; do
		wait_for 30 unload $d || { ulp_no "$d would not unload"; rc=1; }
	done
	lio_unload || rc=1
	for d in libiscsi scsi_transport_iscsi; do
		unload $d 2>/dev/null
	done
	rm -rf $iser_etc /tmp/bench-iscsid.log
	return $rc
}

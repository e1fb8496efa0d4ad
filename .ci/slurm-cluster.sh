#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for CI.
#
#   .ci/slurm-cluster.sh up       install slurm-wlm and munge when missing, start munged, slurmctld and
#                                 slurmd for this host, wait until its node is idle
#   .ci/slurm-cluster.sh status   the daemons this script started, and sinfo
#   .ci/slurm-cluster.sh down     stop exactly the daemons `up` started and remove its state
#
# Exit 3 with one "SKIP: ..." line when the cluster cannot be set up here (not root, no apt-get).
# Everything lives in one state directory (CAPSTAN_SLURM_STATE, default /tmp/capstan-slurm): the munge
# key and socket, the daemons' pid files, logs and spool. munged runs on its own socket (AuthInfo),
# so a system munged, if any, is neither used nor disturbed. The configuration is written to
# /etc/slurm/slurm.conf and /etc/slurm/cgroup.conf, where Debian's clients (sbatch, squeue, ...) read
# it; `up` refuses to overwrite such files unless this script wrote them, `down` removes them.
#
# What works on this machine kind (Debian 12, Slurm 22.05, cgroup v1 hosts, no systemd, root):
# ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, cgroup.conf CgroupPlugin=cgroup/v1 and
# IgnoreSystemd=yes, SlurmUser=root. select/cons_tres with CR_Core_Memory runs several array tasks at
# once when their CPUs and memory fit.
set -euo pipefail

STATE="${CAPSTAN_SLURM_STATE:-/tmp/capstan-slurm}"
case "$STATE" in
/?*/?*) ;;
*)
	echo "slurm-cluster: error: CAPSTAN_SLURM_STATE=$STATE: want an absolute directory at least two levels deep (down removes it)" >&2
	exit 2
	;;
esac
CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
CGROUP_CONF="$CONF_DIR/cgroup.conf"
MARK="# written by capstan .ci/slurm-cluster.sh; removed by its down"
UP_TIMEOUT="${CAPSTAN_SLURM_TIMEOUT:-120}" # seconds until the node must be idle

say() { printf 'slurm-cluster: %s\n' "$*" >&2; }
die() {
	printf 'slurm-cluster: error: %s\n' "$*" >&2
	exit 1
}
skip() {
	printf 'SKIP: %s\n' "$*"
	exit 3
}

# ours FILE: FILE is absent or was written by this script.
ours() { [ ! -e "$1" ] || head -n 1 "$1" | grep -qxF "$MARK"; }

# alive NAME: the pid in $STATE/NAME.pid is a running process.
alive() {
	local pid
	[ -s "$STATE/$1.pid" ] || return 1
	pid=$(cat "$STATE/$1.pid")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

tails() {
	local f
	for f in "$STATE"/log/*.log; do
		[ -e "$f" ] || continue
		printf '==> %s (last 20 lines) <==\n' "$f" >&2
		tail -n 20 "$f" >&2
	done
}

install_packages() {
	local missing=""
	command -v munged >/dev/null 2>&1 || missing="$missing munge"
	command -v slurmctld >/dev/null 2>&1 || missing="$missing slurmctld"
	command -v slurmd >/dev/null 2>&1 || missing="$missing slurmd"
	command -v sbatch >/dev/null 2>&1 || missing="$missing slurm-client"
	[ -n "$missing" ] || return 0
	say "installing slurm-wlm munge (missing:$missing)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends slurm-wlm munge >"$STATE/log/apt.log" 2>&1 ||
		{ tail -n 20 "$STATE/log/apt.log" >&2; die "apt-get install slurm-wlm munge failed (log $STATE/log/apt.log)"; }
	for c in munged slurmctld slurmd sbatch sinfo squeue scontrol scancel; do
		command -v "$c" >/dev/null 2>&1 || die "$c is missing after apt-get install slurm-wlm munge"
	done
}

# start NAME CMD...: runs CMD in the foreground of its own session, in the background of this
# script, output to $STATE/log/NAME.log, pid to $STATE/NAME.pid.
start() {
	local name=$1
	shift
	if alive "$name"; then
		say "$name already running (pid $(cat "$STATE/$name.pid"))"
		return 0
	fi
	setsid "$@" </dev/null >>"$STATE/log/$name.log" 2>&1 &
	echo $! >"$STATE/$name.pid"
	sleep 1
	alive "$name" || {
		tails
		die "$name exited at once (log $STATE/log/$name.log)"
	}
	say "$name started (pid $(cat "$STATE/$name.pid"))"
}

write_conf() {
	local host node
	host=$(hostname -s)
	# slurmd -C: "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1
	# RealMemory=24105" (and an UpTime line).
	node=$(slurmd -C | grep '^NodeName=') || die "slurmd -C printed no NodeName line"
	case "$node" in
	"NodeName=$host "*) ;;
	*) die "slurmd -C names another host than hostname -s ($host): $node" ;;
	esac
	ours "$CONF" || die "$CONF exists and was not written by this script: not overwriting it (move it away)"
	ours "$CGROUP_CONF" || die "$CGROUP_CONF exists and was not written by this script: not overwriting it"
	mkdir -p "$CONF_DIR"
	cat >"$CONF.tmp" <<EOF
$MARK
ClusterName=capstanci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job waits this long before it may start again (default 120 s); 30 s is
# still ample to launch a batch step on this one node
AuthInfo=socket=$STATE/munge/munge.socket,cred_expire=${CAPSTAN_SLURM_CRED_EXPIRE:-30}
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.daemon.pid
SlurmdPidFile=$STATE/slurmd.daemon.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldPort=${CAPSTAN_SLURM_PORT:-6817}
SlurmdPort=$((${CAPSTAN_SLURM_PORT:-6817} + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=512
# preemption and requeue: a finished or killed batch job can be requeued (scontrol requeue) and its
# record stays long enough for it; a requeued task runs again on this node
JobRequeue=1
MinJobAge=3600
ReturnToService=2
KillWait=30
SlurmdTimeout=60
InactiveLimit=0
$node State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
	mv "$CONF.tmp" "$CONF"
	printf '%s\nCgroupPlugin=cgroup/v1\nIgnoreSystemd=yes\n' "$MARK" >"$CGROUP_CONF.tmp"
	mv "$CGROUP_CONF.tmp" "$CGROUP_CONF"
	say "wrote $CONF ($node) and $CGROUP_CONF"
}

cmd_up() {
	[ "$(id -u)" = 0 ] || skip "not root: a Slurm cluster needs root to install and run slurmctld/slurmd"
	if ! command -v munged >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 || ! command -v sbatch >/dev/null 2>&1; then
		command -v apt-get >/dev/null 2>&1 || skip "slurm-wlm or munge missing and no apt-get to install them"
	fi
	mkdir -p "$STATE"
	mkdir -p "$STATE/log" "$STATE/ctld" "$STATE/d" "$STATE/munge"
	chmod 711 "$STATE" "$STATE/munge" # munged: its socket's directories must be searchable by all
	say "state and logs in $STATE (logs: $STATE/log)"
	install_packages

	if [ ! -s "$STATE/munge/munge.key" ]; then
		(umask 077 && dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none)
		chmod 400 "$STATE/munge/munge.key"
	fi
	start munged munged --foreground --force \
		--key-file="$STATE/munge/munge.key" \
		--socket="$STATE/munge/munge.socket" \
		--pid-file="$STATE/munge/munged.pid" \
		--seed-file="$STATE/munge/munged.seed" \
		--log-file="$STATE/log/munged.log"
	local i
	for ((i = 0; i < 20; i++)); do
		[ -S "$STATE/munge/munge.socket" ] && break
		sleep 0.5
	done
	munge -n -S "$STATE/munge/munge.socket" | unmunge -S "$STATE/munge/munge.socket" >/dev/null ||
		{ tails; die "munge/unmunge round trip failed on $STATE/munge/munge.socket"; }

	if alive slurmctld || alive slurmd; then
		say "slurmctld/slurmd already running: keeping $CONF"
	else
		write_conf
	fi
	start slurmctld slurmctld -D -i
	start slurmd slurmd -D

	local t0=$SECONDS state=""
	while ((SECONDS - t0 < UP_TIMEOUT)); do
		state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
		case "$state" in
		idle | mixed | allocated) break ;;
		down* | drain* | *\*)
			# a node that was down in the saved state: bring it back
			scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true
			;;
		esac
		sleep 1
	done
	case "$state" in
	idle | mixed | allocated) ;;
	*)
		sinfo -N -l >&2 || true
		scontrol show node >&2 || true
		tails
		die "node $(hostname -s) not idle after ${UP_TIMEOUT}s (state: ${state:-none}); daemons left running, call down"
		;;
	esac
	say "up in $((SECONDS - t0))s after the daemons started: node $(hostname -s) $state"
	sinfo >&2
}

# stop NAME: TERM the daemon whose pid this script recorded, KILL after 15 s.
stop() {
	local name=$1 pid i
	[ -s "$STATE/$name.pid" ] || return 0
	pid=$(cat "$STATE/$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 30; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "$name (pid $pid) ignored TERM for 15 s: KILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		say "$name (pid $pid) stopped"
	fi
	rm -f "$STATE/$name.pid"
}

cmd_down() {
	# jobs still running are killed by slurmd's stop (linuxproc kills the steps it tracks)
	if alive slurmctld && command -v scancel >/dev/null 2>&1; then
		scancel --quiet --partition=ci 2>/dev/null || true
	fi
	stop slurmd
	stop slurmctld
	stop munged
	if ours "$CONF"; then rm -f "$CONF" "$CONF.tmp"; fi
	if ours "$CGROUP_CONF"; then rm -f "$CGROUP_CONF" "$CGROUP_CONF.tmp"; fi
	rm -rf "$STATE"
	say "down: daemons stopped, $STATE and the configuration removed"
}

cmd_status() {
	local n
	for n in munged slurmctld slurmd; do
		if alive "$n"; then echo "$n: running (pid $(cat "$STATE/$n.pid"))"; else echo "$n: not running"; fi
	done
	if alive slurmctld; then sinfo -N -l; fi
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
	echo "usage: $0 up|down|status" >&2
	exit 2
	;;
esac

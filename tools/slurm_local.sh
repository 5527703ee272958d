#!/bin/sh
# A one-node Slurm cluster from Debian's packages (slurmctld slurmd
# slurm-client munge; `make deps` installs them), run as root without
# systemd, in a scratch directory (DESIGN.md section 9):
#
#   tools/slurm_local.sh start DIR   starts munged, slurmctld and slurmd with
#                                    DIR/slurm.conf; prints "export SLURM_CONF=..."
#   tools/slurm_local.sh stop DIR    stops them by their pid files
#
# Exits 1 with the reason on stderr when a daemon cannot run here (not root,
# packages missing, a daemon refused to start): callers fail, never skip.
set -u
cmd=${1:-}; DIR=${2:-}
die() { echo "slurm_local: $*" >&2; exit 1; }
[ -n "$cmd" ] && [ -n "$DIR" ] || die "usage: slurm_local.sh start|stop DIR"

stop() {
	for p in slurmd slurmctld munged; do
		f="$DIR/$p.pid"
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	# give them a moment to go, then make sure
	sleep 0.5
	for p in slurmd slurmctld munged; do
		f="$DIR/$p.pid"
		[ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
	return 0
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || die "unknown command '$cmd' (start|stop)"

[ "$(id -u)" -eq 0 ] || die "the daemons need root here (SlurmUser=root, munge key owned by munge); running as $(id -un)"
for b in munged slurmctld slurmd srun scontrol sinfo; do
	command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || die "$b is not installed (run make deps: slurmctld slurmd slurm-client munge)"
done
PATH="$PATH:/usr/sbin"
id munge >/dev/null 2>&1 || die "no munge user (the munge package creates it)"
mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/munge"
chmod 755 "$DIR"

# munge: its own key, socket and pid in DIR (the system's /etc/munge key is
# left alone); munged insists on owner and modes
KEY="$DIR/munge-key/munge.key"
mkdir -p "$DIR/munge-key"
dd if=/dev/urandom of="$KEY" bs=1024 count=1 2>/dev/null
chown -R munge:munge "$DIR/munge-key" "$DIR/munge"
chmod 700 "$DIR/munge-key"; chmod 400 "$KEY"
# the socket's directory must be searchable by every client
chmod 755 "$DIR/munge"
SOCK="$DIR/munge/munge.socket"
su -s /bin/sh munge -c "munged --key-file=$KEY --socket=$SOCK --pid-file=$DIR/munge/munged.pid \
	--log-file=$DIR/munge/munged.log --seed-file=$DIR/munge/munge.seed" \
	|| die "munged did not start: $(tail -n 5 "$DIR/munge/munged.log" 2>/dev/null)"
cp "$DIR/munge/munged.pid" "$DIR/munged.pid" 2>/dev/null || die "munged wrote no pid file"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(port); SLURMD_PORT=$(port)
HOST=$(hostname -s)
CPUS=$(nproc)
cat > "$DIR/slurm.conf" <<EOF
ClusterName=nxcc
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
AuthInfo=socket=$SOCK
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=nxcc Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF="$DIR/slurm.conf"
slurmctld -f "$SLURM_CONF" > "$DIR/log/slurmctld.out" 2>&1 \
	|| { stop; die "slurmctld did not start: $(tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.out" 2>/dev/null)"; }
slurmd -f "$SLURM_CONF" > "$DIR/log/slurmd.out" 2>&1 \
	|| { stop; die "slurmd did not start: $(tail -n 5 "$DIR/log/slurmd.log" "$DIR/log/slurmd.out" 2>/dev/null)"; }
# wait for the node to be usable
i=0
while :; do
	st=$(sinfo -h -o %t 2>/dev/null | head -n 1)
	case "$st" in idle*|mix*|alloc*) break ;; esac
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		stop
		die "the node never became idle (state '$st'): $(tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" 2>/dev/null)"
	fi
	sleep 0.2
done
echo "export SLURM_CONF=$SLURM_CONF"

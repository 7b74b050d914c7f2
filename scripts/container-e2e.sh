#!/usr/bin/env bash
# End-to-end test of the container.* checks inside real Podman containers
# (rootful, runc, no network): `gpuprobe check --simulate
# dgx-h100:real-container --checks job,container` runs in each container with
# a job step's environment. The node (8 H100s, driver 550.54.15 / CUDA 12.4,
# eight mlx5 HCAs in its sysfs) is simulated; the container is real: its
# /proc/self/mountinfo (/dev/shm), /proc/self/limits (RLIMIT_MEMLOCK),
# /dev/infiniband, /run/.containerenv, environment and files are what Podman
# made (real-container: docs/containers.md, "Testing").
#
# The image is imported from a tarball (no registry): the gpuprobe binary,
# the libraries ldd lists, and an empty /opt/cuda-compat/libcuda.so.580.65.06
# standing for NVIDIA's forward-compatibility package. This machine has no
# HCA: the verbs devices given with --device are character devices made with
# mknod with uverbs0's and rdma_cm's numbers (231:192, 10:58), as the Slurm
# e2e makes its GPUs.
#
# Asserts, each finding with its fix in Podman's terms:
#   - --shm-size 64m: container.shm fails, "podman run --shm-size=1g";
#   - --ulimit memlock=65536: container.memlock warns, "--ulimit memlock=-1";
#   - no /dev/infiniband while the node has HCAs: container.rdma_devices
#     fails, "podman run --device=/dev/infiniband/uverbsN";
#   - CUDA_VERSION=13.0 on the CUDA 12.4 driver: container.cuda_compat and
#     job.cuda_compat fail (cudaErrorInsufficientDriver); with the compat
#     libcuda on LD_LIBRARY_PATH it passes (forward compatibility on H100);
#   - NVIDIA_VISIBLE_DEVICES=4,5 with CUDA_VISIBLE_DEVICES=4,5:
#     container.visible_devices fails (the GPUs are 0,1 inside);
#   - an EFA host (--simulate dgx-h100:real-container,efa): with the image's
#     fake aws-ofi-nccl (an empty /opt/amazon/ofi-nccl/lib/libnccl-net.so)
#     hidden under an empty bind mount (--tmpfs would copy the image's
#     files up: podman-run(1), tmpcopyup), container.net_plugin fails with
#     Podman's fix;
#     present but off the loader's path, it fails naming the directory;
#     on LD_LIBRARY_PATH it passes;
#   - a libnvidia-ml.so.535.104.05 in the image's library directory on the
#     550.54.15 module: container.driver_libs fails ("Driver/library version
#     mismatch"), with the Container Toolkit/CDI fix; 550.54.15 passes;
#   - a correctly configured container (--shm-size 1g, the verbs devices,
#     memlock as high as this machine allows, CUDA 12.4) passes all of them.
#     An unlimited memlock needs a hard limit of unlimited or CAP_SYS_RESOURCE:
#     where this machine has neither (a sandbox), that one assertion is
#     reported as SKIP with the limit, and the check must warn with exactly
#     the limit the container got.
#
# Fails (never skips) when podman cannot run a container; skips (exit 0,
# with a SKIP line) only when the kernel cannot make mount, PID and IPC
# namespaces here. Bounded to 60 s. Needs root.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/e2e-lib.sh
. "$REPO/scripts/e2e-lib.sh"

PASSED=0
SKIPS=()
TAG="e2e-$$-$RANDOM"
IMAGE="localhost/gpuprobe-e2e:$TAG"
PODMAN=()
CTRS=()

finish() {
	local rc=$? c
	if ((${#PODMAN[@]})); then
		for c in "${CTRS[@]}"; do timeout 10 "${PODMAN[@]}" rm -f "$c" >/dev/null 2>&1; done
		timeout 10 "${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
	fi
	# The private store's mounts (overlay layers, its shm) go with the
	# image; unmount whatever is left under $W before it is removed.
	awk -v w="$W/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
	if [ "$FAILS" -gt 0 ] || [ "$rc" -ne 0 ]; then
		log "container-e2e: FAIL: $PASSED passed, $FAILS failed (rc $rc)"
		e2e_cleanup
		exit 1
	fi
	if [ -n "${SKIPPED:-}" ]; then
		log "container-e2e: SKIP: $SKIPPED (nothing was tested)"
	else
		log "container-e2e: PASS: $PASSED passed, 0 failed${SKIPS[*]:+; SKIP: ${SKIPS[*]}}"
	fi
	e2e_cleanup
}
SKIPPED=
skip() {
	SKIPPED=$*
	exit 0
}

e2e_init container
trap finish EXIT
pass() { log "PASS: $*"; PASSED=$((PASSED + 1)); }
# The whole script is bounded: a hung podman must not hold make test.
(sleep 60 && log "FAIL: over 60 s" && kill -TERM $$) &
PIDS+=($!)

[ "$(id -u)" = 0 ] || die "needs root (rootful podman, mknod)"

# --- install ---------------------------------------------------------------
need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
	log "missing: ${need[*]} -> apt-get install"
	# shellcheck source=scripts/apt.sh
	. "$REPO/scripts/apt.sh"
	apt_install "${need[@]}" || die "apt-get install ${need[*]} failed"
fi

# Can the kernel make a container's namespaces here at all? That, and only
# that, is a skip; podman failing to run one afterwards is a failure.
unshare --mount --pid --ipc --uts --fork true 2>"$W/unshare.err" ||
	skip "unshare --mount --pid --ipc --uts: $(cat "$W/unshare.err")"

# A private store (no other run's images, no lock shared with them); runc,
# because crun cannot set up cgroups on a hybrid v1/v2 host; cgroupfs,
# because there may be no systemd. The rlimits are given explicitly: podman's
# defaults (1048576 files) are above the hard limits of many sandboxes.
PODMAN=(podman --root "$W/storage" --runroot "$W/run" --tmpdir "$W/tmp" --runtime runc --cgroup-manager cgroupfs --events-backend none)
mkdir -p "$W/tmp" "$W/root/bin" "$W/root/opt/cuda-compat" "$W/root/opt/amazon/ofi-nccl/lib" "$W/empty" "$W/dev" || die "mkdir $W"
log "podman $(podman --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), image $IMAGE"

# --- image -----------------------------------------------------------------
e2e_binary "$W/root/bin/gpuprobe"
for lib in $(ldd "$W/root/bin/gpuprobe" | grep -o '/[^ ]*'); do
	mkdir -p "$W/root$(dirname "$lib")" && cp -L "$lib" "$W/root$lib" || die "copy $lib into the image"
done
: >"$W/root/opt/cuda-compat/libcuda.so.580.65.06"
: >"$W/root/opt/amazon/ofi-nccl/lib/libnccl-net.so"
tar -C "$W/root" -c . | timeout 30 "${PODMAN[@]}" import - "$IMAGE" >"$W/import.log" 2>&1 ||
	die "podman import: $(tail -n 3 "$W/import.log")"

mknod "$W/dev/uverbs0" c 231 192 && mknod "$W/dev/rdma_cm" c 10 58 || die "mknod the verbs devices in $W/dev"
VERBS=(--device "$W/dev/uverbs0:/dev/infiniband/uverbs0" --device "$W/dev/rdma_cm:/dev/infiniband/rdma_cm")

# The highest memlock this machine can give a container.
hard=$(ulimit -H -l)
if [ "$hard" = unlimited ]; then
	MEMLOCK_OK=-1:-1
else
	MEMLOCK_OK=$((hard * 1024)):$((hard * 1024))
	SKIPS+=("unlimited memlock in the healthy container (this machine's hard RLIMIT_MEMLOCK is $hard KiB and podman cannot raise it)")
fi

# run NAME PODMAN-OPTIONS...: one container, gpuprobe's JSON in $W/NAME.json.
# A job step of task 0 on GPUs 0,1.
run() {
	local name=$1 rc
	shift
	CTRS+=("gpuprobe-$TAG-$name")
	timeout 30 "${PODMAN[@]}" run --rm --name "gpuprobe-$TAG-$name" --network none \
		--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		-e SLURM_JOB_ID=4242 -e SLURM_STEP_ID=0 -e SLURM_PROCID=0 -e SLURM_LOCALID=0 \
		-e SLURM_JOB_GPUS=0,1 -e SLURM_STEP_GPUS=0,1 -e CUDA_VISIBLE_DEVICES=0,1 \
		"$@" "$IMAGE" /bin/gpuprobe check --simulate "${SIM:-dgx-h100:real-container}" --checks job,container --format json \
		>"$W/$name.json" 2>"$W/$name.err"
	rc=$?
	# 0 pass, 1 a finding; anything else is podman's or gpuprobe's failure.
	if [ $rc -gt 1 ] || ! [ -s "$W/$name.json" ]; then
		die "$name: podman run exited $rc: $(tail -n 5 "$W/$name.err")"
	fi
}

# expect NAME CHECK STATUS SUMMARY-SUBSTRING [REMEDY-SUBSTRING]
expect() {
	local name=$1 id=$2 want=$3 sum=$4 fix=${5:-} got
	got=$(python3 - "$W/$name.json" "$id" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["checks"]:
    if r["id"] == sys.argv[2]:
        print(r["status"] + "\t" + r.get("summary", "") + "\t" + r.get("remedy", ""))
        break
else:
    print("absent\t\t")
EOF
)
	local st=${got%%$'\t'*} rest=${got#*$'\t'}
	local summary=${rest%%$'\t'*} remedy=${rest#*$'\t'}
	if [ "$st" = "$want" ] && [[ "$summary" == *"$sum"* ]] && [[ "$remedy" == *"$fix"* ]]; then
		pass "$name: $id $st: ${summary:0:150}${fix:+ | fix: ${remedy:0:90}}"
	else
		fail "$name: $id: got $st: $summary | fix: $remedy; want $want with \"$sum\"${fix:+ and fix \"$fix\"}"
	fi
}

# --- cases -----------------------------------------------------------------
run shm64 --shm-size 64m --ulimit memlock="$MEMLOCK_OK" "${VERBS[@]}"
expect shm64 container.shm fail "/dev/shm in this Podman container" "podman run --shm-size=1g"
expect shm64 container.rdma_devices pass "verbs device(s) inside the container"

run memlock --shm-size 1g --ulimit memlock=65536:65536 "${VERBS[@]}"
expect memlock container.memlock warn "RLIMIT_MEMLOCK is 64 KiB (soft) / 64 KiB (hard) in this Podman container" "podman run --ulimit memlock=-1"

run nordma --shm-size 1g --ulimit memlock="$MEMLOCK_OK"
expect nordma container.rdma_devices fail "has no /dev/infiniband/uverbs*" "podman run --device=/dev/infiniband/uverbsN"

run cuda13 --shm-size 1g "${VERBS[@]}" -e CUDA_VERSION=13.0
expect cuda13 container.cuda_compat fail "CUDA 13.0 in this Podman container" "an image built for CUDA 12.4 or older"
expect cuda13 job.cuda_compat fail "needs a CUDA 13 driver"

run cuda13compat --shm-size 1g "${VERBS[@]}" -e CUDA_VERSION=13.0 -e LD_LIBRARY_PATH=/opt/cuda-compat
expect cuda13compat container.cuda_compat pass "forward compatibility through /opt/cuda-compat/libcuda.so.580.65.06"

run nvd45 --shm-size 1g "${VERBS[@]}" -e SLURM_STEP_GPUS=4,5 -e SLURM_JOB_GPUS=4,5 -e CUDA_VISIBLE_DEVICES=4,5 -e NVIDIA_VISIBLE_DEVICES=4,5
expect nvd45 container.visible_devices fail "numbered 0-1 inside" "CUDA_VISIBLE_DEVICES=0,1"

SIM=dgx-h100:real-container,efa run efanoplugin --shm-size 1g "${VERBS[@]}" -v "$W/empty:/opt/amazon:ro"
expect efanoplugin container.net_plugin fail "has none on the loader's path, nor any libnccl-net*.so elsewhere" "build the image with aws-ofi-nccl (the EFA installer's libfabric and aws-ofi-nccl), or bind the host's: podman run -v /opt/amazon:/opt/amazon:ro"
expect efanoplugin container.rdma_devices pass "for the host's rdmap"
SIM=dgx-h100:real-container,efa run efaoffpath --shm-size 1g "${VERBS[@]}"
expect efaoffpath container.net_plugin fail "/opt/amazon/ofi-nccl/lib/libnccl-net.so (not on the loader's path)" "put /opt/amazon/ofi-nccl/lib on LD_LIBRARY_PATH"
SIM=dgx-h100:real-container,efa run efaplugin --shm-size 1g "${VERBS[@]}" -e LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib
expect efaplugin container.net_plugin pass "NCCL loads /opt/amazon/ofi-nccl/lib/libnccl-net.so (LD_LIBRARY_PATH)"

# The image's own driver libraries: a libnvidia-ml of another driver than
# the (simulated) kernel module 550.54.15, bound into the library directory
# as a driver package installed in an image would put it.
: >"$W/libnvml" || die "touch $W/libnvml"
run nvmlold --shm-size 1g "${VERBS[@]}" -v "$W/libnvml:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05:ro"
expect nvmlold container.driver_libs fail "(NVML 535.104.05) is the first libnvidia-ml on the loader's path in this Podman container"
expect nvmlold container.driver_libs fail "but the kernel module is 550.54.15 (/proc/driver/nvidia/version): NVML fails with \"Driver/library version mismatch\"" "let the NVIDIA Container Toolkit inject the host's libraries (podman run --device nvidia.com/gpu=all with CDI)"
run nvmlok --shm-size 1g "${VERBS[@]}" -v "$W/libnvml:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15:ro"
expect nvmlok container.driver_libs pass "libnvidia-ml 550.54.15 in the container matches the kernel module 550.54.15"

run healthy --shm-size 1g --ulimit memlock="$MEMLOCK_OK" "${VERBS[@]}" -e CUDA_VERSION=12.4 -e NVIDIA_VISIBLE_DEVICES=0,1
expect healthy container.shm pass "is 1 GiB"
expect healthy container.rdma_devices pass "1 verbs device(s)"
expect healthy container.cuda_compat pass "no forward compatibility needed"
expect healthy container.visible_devices pass "agrees with Slurm's GPUs"
expect healthy container.net_plugin pass "no EFA device"
if [ "$MEMLOCK_OK" = -1:-1 ]; then
	expect healthy container.memlock pass "unlimited"
else
	expect healthy container.memlock warn "RLIMIT_MEMLOCK is $((hard / 1024)) MiB (soft) / $((hard / 1024)) MiB (hard)"
fi
# The runtime and its evidence: the env podman sets and the file it writes.
if python3 - "$W/healthy.json" <<'EOF'; then
import json, sys
doc = json.load(open(sys.argv[1]))
sums = " ".join(r.get("summary", "") for r in doc["checks"] if r["id"].startswith("container."))
sys.exit(0 if "Podman container" in sums and doc.get("simulate_spec", "").endswith("real-container") else 1)
EOF
	pass "healthy: judged as a Podman container against the simulated node ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["simulate_spec"])' "$W/healthy.json"))"
else
	fail "healthy: the report does not name the Podman container or the real-container spec"
fi

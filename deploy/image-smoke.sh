#!/usr/bin/env bash
# Smoke test of the release image without running a container (this
# machine may not run one): check the image's config, copy its root file
# system out of a created container's mount, then start the binary from that
# copy as the image's user on the embedded Redis and ask it for /healthz and
# a join.
#
#   deploy/image-smoke.sh IMAGE "BUILDAH COMMAND"
set -euo pipefail
image=${1:?image}
buildah=${2:-buildah}
fail() { echo "image-smoke: $*" >&2; exit 1; }

config=$($buildah inspect --type image "$image" | jq -c '.OCIv1.config')
user=$(jq -r '.User' <<<"$config")
[[ $user =~ ^[1-9][0-9]*(:[0-9]+)?$ ]] || fail "USER is $user, want a numeric non-root uid"
jq -e '.ExposedPorts["8080/tcp"]' <<<"$config" >/dev/null || fail "port 8080/tcp is not exposed: $config"
jq -e '.Env | index("WAITROOM_ADDR=0.0.0.0:8080")' <<<"$config" >/dev/null || fail "WAITROOM_ADDR=0.0.0.0:8080 is not in Env: $config"
[[ $(jq -c '.Entrypoint' <<<"$config") == '["/waitroom"]' ]] || fail "entrypoint: $config"

work=$(mktemp -d)
ctr=
cleanup() {
  [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [[ -n $ctr ]] && { $buildah umount "$ctr" >/dev/null 2>&1; $buildah rm "$ctr" >/dev/null 2>&1; }
  rm -rf "$work"
}
trap cleanup EXIT

ctr=$($buildah from --pull-never "$image")
mnt=$($buildah mount "$ctr")
mkdir "$work/rootfs"
cp -a "$mnt/." "$work/rootfs/"
files=$(cd "$work/rootfs" && find . -type f | sort | tr '\n' ' ')
[[ $files == "./etc/ssl/certs/ca-certificates.crt ./waitroom " ]] || fail "unexpected files in the image: $files"
[[ -s $work/rootfs/etc/ssl/certs/ca-certificates.crt ]] || fail "empty CA bundle"
# A static binary: no program interpreter (ld.so) to look for in scratch.
readelf -l "$work/rootfs/waitroom" >"$work/elf" || fail "readelf: not an ELF binary"
if grep -q "program interpreter" "$work/elf"; then
  fail "the binary is dynamically linked"
fi

uid=${user%%:*}
gid=${user#*:}; [[ $gid == "$user" ]] && gid=$uid
chmod 755 "$work"
as_user=(setpriv --reuid "$uid" --regid "$gid" --clear-groups)

"${as_user[@]}" "$work/rootfs/waitroom" -h >"$work/help" || fail "-h exited $?"
grep -q -- '-addr' "$work/help" || fail "-h lists no -addr flag"
ver=$("${as_user[@]}" "$work/rootfs/waitroom" -version) || fail "-version exited $?"
[[ $ver == "waitroom "*"(commit "*", go"*")" ]] || fail "-version printed: $ver"

# The image's own environment, with the address moved to a free loopback
# port (a flag wins over WAITROOM_ADDR).
: >"$work/log"
env -i $(jq -r '.Env[]' <<<"$config") "${as_user[@]}" "$work/rootfs/waitroom" \
  -addr 127.0.0.1:0 -open-rooms 2>"$work/log" &
pid=$!
addr=
for _ in $(seq 1 300); do
  addr=$(sed -n 's|^waitroom listening on http://\([^/]*\)/.*|\1|p' "$work/log")
  [[ -n $addr ]] && break
  kill -0 "$pid" 2>/dev/null || fail "the server exited: $(cat "$work/log")"
  sleep 0.1
done
[[ -n $addr ]] || fail "no listening line within 30 s: $(cat "$work/log")"

code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/healthz")
[[ $code == 200 ]] || fail "GET /healthz: $code"
code=$(curl -s -o "$work/join" -w '%{http_code}' -X POST "http://$addr/api/v1/rooms/demo/join")
[[ $code == 200 ]] || fail "POST /api/v1/rooms/demo/join: $code $(cat "$work/join")"
jq -e '.room == "demo" and (.visitor | length > 0)' "$work/join" >/dev/null || fail "join answered $(cat "$work/join")"
echo "image-smoke: $image ok: user $user, files $files, $ver, /healthz 200, join 200"

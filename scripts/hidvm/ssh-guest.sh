# ssh-guest.sh — sourced (not run) by scripts/hidvm/test-ssh.sh and scripts/bench/ssh-in-guest.sh
# inside the QEMU guest of scripts/hidvm/run-in-vm.sh: a `securitykey virtual serve --uhid` key
# on a real /dev/hidrawN, Debian's sshd on 127.0.0.1 with a private configuration, and
# ssh-keygen/ssh through a chosen security-key provider (OpenSSH's built-in libfido2 one,
# `internal`, or a library path such as ours, libsecuritykey-sk.so).
#
# Needs: ssh_guest_name (the caller's name, for messages), SECURITYKEY_BIN (the CLI that serves
# the key) and, before starting anything, SSH_GUEST_WORK (a private scratch directory). Sets
# ssh_guest_uri, ssh_guest_port.

# Prints why the caller fails, with the end of every log in SSH_GUEST_WORK, and exits 1.
ssh_guest_fail() {
    echo "$ssh_guest_name: $*" >&2
    local log
    for log in "${SSH_GUEST_WORK:-/nonexistent}"/*.log; do
        [[ -s $log ]] && { echo "--- $log" >&2; tail -n 25 "$log" >&2; }
    done
    exit 1
}

# How the messages name a provider: `internal` is OpenSSH's built-in one, any library is ours.
ssh_guest_provider_name() { [[ $1 == internal ]] && echo built-in || echo ours; }

ssh_guest_key_pid=
ssh_guest_sshd_pid=
ssh_guest_uri=
ssh_guest_port=

# Stops what ssh_guest_start_key and ssh_guest_start_sshd started (for an EXIT trap).
ssh_guest_stop() {
    local pid
    for pid in $ssh_guest_sshd_pid $ssh_guest_key_pid; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    ssh_guest_sshd_pid= ssh_guest_key_pid=
    return 0
}

# Serves a virtual key on /dev/uhid (touches answered at once) and waits for its hidraw node.
ssh_guest_start_key() {
    [[ -c /dev/uhid ]] || ssh_guest_fail "the guest has no /dev/uhid"
    "$SECURITYKEY_BIN" virtual serve --uhid --presence auto --json \
        >"$SSH_GUEST_WORK/key.json" 2>"$SSH_GUEST_WORK/key.log" &
    ssh_guest_key_pid=$!
    local _
    for _ in $(seq 600); do
        grep -q '"uri"' "$SSH_GUEST_WORK/key.json" 2>/dev/null && break
        kill -0 "$ssh_guest_key_pid" 2>/dev/null || ssh_guest_fail "the virtual key exited: $(cat "$SSH_GUEST_WORK/key.log")"
        sleep 0.1
    done
    ssh_guest_uri=$(sed -n 's/.*"uri" *: *"\([^"]*\)".*/\1/p' "$SSH_GUEST_WORK/key.json" | head -n 1)
    [[ $ssh_guest_uri == hid:/dev/hidraw* && -c ${ssh_guest_uri#hid:} ]] ||
        ssh_guest_fail "the virtual key announced no hidraw node: $(cat "$SSH_GUEST_WORK/key.json" "$SSH_GUEST_WORK/key.log")"
}

# Debian's sshd on 127.0.0.1 with a configuration of its own: only public keys, only the keys in
# $SSH_GUEST_WORK/authorized_keys, and ExposeAuthInfo so a session can say which key logged it in.
ssh_guest_start_sshd() {
    ip link set lo up 2>/dev/null || ssh_guest_fail "cannot bring up lo in the guest"
    # sshd's privilege-separation directory and user (the host's /etc/passwd has sshd).
    mkdir -p /run/sshd && chmod 0755 /run/sshd
    getent passwd sshd >/dev/null || ssh_guest_fail "no sshd user in /etc/passwd (openssh-server installed?)"
    # The session runs as root, whose home in the guest is the host's: its shell start-up files
    # (bash reads ~/.bashrc for sshd's sessions) would run on every login. An empty home instead.
    mount -t tmpfs -o mode=0700 tmpfs /root || ssh_guest_fail "cannot give root an empty home in the guest"
    local work=$SSH_GUEST_WORK
    ssh-keygen -q -t ed25519 -N '' -f "$work/host_ed25519" || ssh_guest_fail "cannot make a host key"
    : >"$work/authorized_keys"
    ssh_guest_port=${SSH_GUEST_PORT:-2222}
    cat >"$work/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $ssh_guest_port
HostKey $work/host_ed25519
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
ExposeAuthInfo yes
LogLevel VERBOSE
EOF
    /usr/sbin/sshd -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
    ssh_guest_sshd_pid=$!
    local _ banner
    for _ in $(seq 600); do
        kill -0 "$ssh_guest_sshd_pid" 2>/dev/null || ssh_guest_fail "sshd exited: $(cat "$work/sshd.log")"
        # The banner, read in a subshell so that a refused connection's message stays there.
        banner=$( (exec 3<>"/dev/tcp/127.0.0.1/$ssh_guest_port" && read -r -t 10 line <&3 && echo "$line") 2>/dev/null) || true
        [[ $banner == SSH-2.0-* ]] && return 0
        sleep 0.1
    done
    ssh_guest_fail "sshd did not answer on 127.0.0.1:$ssh_guest_port: $(cat "$work/sshd.log")"
}

# ssh_guest_enrol PROVIDER TYPE FILE: ssh-keygen makes an unencrypted TYPE (ecdsa-sk, ed25519-sk)
# key file through PROVIDER (`internal` or a library path) on the key, and its public key is
# authorised. OpenSSH's own debug lines name the provider that answered; they are kept in
# FILE.log.
ssh_guest_enrol() {
    local provider=$1 type=$2 file=$3
    rm -f "$file" "$file.pub"
    env -u SSH_SK_PROVIDER ssh-keygen -v -t "$type" -w "$provider" -N '' -C "$(basename "$file")" -f "$file" \
        </dev/null >"$file.out" 2>"$file.log" ||
        ssh_guest_fail "ssh-keygen -t $type -w $provider failed: $(cat "$file.out" "$file.log")"
    [[ -s $file && -s $file.pub ]] || ssh_guest_fail "ssh-keygen -w $provider wrote no key file"
    cat "$file.pub" >>"$SSH_GUEST_WORK/authorized_keys"
}

# ssh_guest_login FILE PROVIDER: logs in to the private sshd with the key file FILE, signing
# through PROVIDER, and prints what sshd says authenticated the session ($SSH_USER_AUTH:
# "publickey ALGORITHM BASE64"). No configuration file, agent or other identity takes part.
ssh_guest_login() {
    local file=$1 provider=$2
    env -u SSH_SK_PROVIDER -u SSH_AUTH_SOCK ssh -v -F /dev/null -p "$ssh_guest_port" -i "$file" \
        -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o SecurityKeyProvider="$provider" \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=60 \
        root@127.0.0.1 'read -r line <"$SSH_USER_AUTH" && echo "$line"' </dev/null 2>"$file.login.log"
}

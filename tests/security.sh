# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# Security: TLS to a real etcd with certificates made here by openssl
# (server and client certificates, client-certificate authentication),
# refused connections without the right CA or client certificate;
# checkpoint files and directories private to their owner whatever the
# umask; job names that could reach outside the job's keys refused; no
# password in logs or traces.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/etcd-lib.sh"
. "$top_srcdir/tests/job-lib.sh"
trap 'job_kill; etcd_stop; rm -rf "$TMP"' EXIT

# ---- certificates ----------------------------------------------------------------
PKI=$TMP/pki
mkdir -p "$PKI" && chmod 700 "$PKI"
ossl() { openssl "$@" >>"$PKI/openssl.log" 2>&1 || fail "openssl $1 failed: see $PKI/openssl.log"; }
key() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$1.key"; }
# cert NAME CN USAGE CA: a certificate for 127.0.0.1 signed by CA
cert() {
    key "$1"
    ossl req -new -key "$PKI/$1.key" -subj "/CN=$2" -out "$PKI/$1.csr"
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$3" >"$PKI/$1.ext"
    ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$4.pem" -CAkey "$PKI/$4.key" -CAcreateserial -days 1 \
        -extfile "$PKI/$1.ext" -out "$PKI/$1.pem"
}
for ca in ca other-ca; do
    key "$ca"
    ossl req -x509 -new -key "$PKI/$ca.key" -subj "/CN=libpreempt test $ca" -days 1 -out "$PKI/$ca.pem"
done
cert server 127.0.0.1 serverAuth,clientAuth ca
cert client worker clientAuth ca
cert stranger worker clientAuth other-ca
expect "openssl made the certificates" test -s "$PKI/server.pem" -a -s "$PKI/client.pem" -a -s "$PKI/stranger.pem"

# ---- a TLS etcd that requires client certificates -----------------------------------
ETCD_SCHEME=https
ETCD_EXTRA="--cert-file $PKI/server.pem --key-file $PKI/server.key --trusted-ca-file $PKI/ca.pem --client-cert-auth"
export ETCDCTL_CACERT="$PKI/ca.pem" ETCDCTL_CERT="$PKI/client.pem" ETCDCTL_KEY="$PKI/client.key"
etcd_start tls || finish
TLS="--etcd-ca $PKI/ca.pem --etcd-cert $PKI/client.pem --etcd-key $PKI/client.key"

tag=tls
job_start "$tag" 2 --steps 100000 --step-ms 5 --raise-at 30 $TLS
job_wait 60
eq "tls: two workers agree and save over TLS" "$RCS" "42 42"
step=$(same "$tag" 2 exit saved_step)
expect "tls: at one step ($step)" one_step "$step"
[ "$failures" -eq 0 ] || show_logs "$tag" 2

# refusals: each a failed start (2) with the reason in the log, within the bound
bad() { # WHAT WANT-IN-LOG ARGS...: a refused start
    _what=$1 _want=$2
    shift 2
    expect_rc 2 "$TRAINER" --etcd "$@" --job refused --ckpt-dir "$TMP/refused" --steps 10 --join-timeout-ms 3000 \
        --verbose && expect_output "$_want"
    [ $? -eq 0 ] || fail "tls: $_what"
}
bad "no CA: the server is not trusted" "certificate" "$ETCD_URL"
bad "another CA: the server is not trusted" "certificate" "$ETCD_URL" --etcd-ca "$PKI/other-ca.pem" \
    --etcd-cert "$PKI/client.pem" --etcd-key "$PKI/client.key"
bad "no client certificate: etcd refuses" "cannot join" "$ETCD_URL" --etcd-ca "$PKI/ca.pem"
bad "a client certificate of another CA: etcd refuses" "cannot join" "$ETCD_URL" --etcd-ca "$PKI/ca.pem" \
    --etcd-cert "$PKI/stranger.pem" --etcd-key "$PKI/stranger.key"
bad "plain HTTP to the TLS port" "cannot join" "http://${ETCD_URL#https://}"
bad "a missing CA file: said at once" "etcd_ca, etcd_cert or etcd_key cannot be read" "$ETCD_URL" \
    --etcd-ca "$PKI/nothing.pem"
bad "a key without its certificate" "etcd_key needs etcd_cert" "$ETCD_URL" --etcd-ca "$PKI/ca.pem" \
    --etcd-key "$PKI/client.key"
expect "tls: no key material in the logs" sh -c "! grep -q 'PRIVATE KEY' $TMP/tls.*.err $TMP/out"
etcd_stop

# ---- checkpoint files and directories are the owner's alone -------------------------
# With a umask that would let everyone read and write, every directory the
# trainer and the library make is 0700 and every file 0600, the trace too.
(umask 000 && "$TRAINER" --ckpt-dir "$TMP/perm" --steps 100000 --step-ms 1 --raise-at 20 --trace "$TMP/perm.trace" \
    >/dev/null 2>&1)
eq "modes: the run saved" "$?" 42
eq "modes: directories 0700" "$(find "$TMP/perm" -type d ! -perm 0700 | wc -l) $(find "$TMP/perm" -type d | wc -l | tr -d ' ')" \
    "0 $(find "$TMP/perm" -type d | wc -l | tr -d ' ')"
eq "modes: no file other than 0600" "$(find "$TMP/perm" -type f ! -perm 0600 | wc -l)" 0
expect "modes: there are files" test "$(find "$TMP/perm" -type f | wc -l)" -ge 2
eq "modes: the trace is 0600" "$(stat -c %a "$TMP/perm.trace")" 600

# ---- job names: nothing outside the job's own keys -----------------------------------
# The job name is the only free text in etcd keys (/preempt/<job>/...): a name
# that could climb out of it or inject another key is refused before any
# traffic, by the trainer and by preemptctl alike.
CTL="$top_builddir/tools/preemptctl"
for job in "../x" "a/b" "a/../../b" "." ".." "x y" "$(printf 'a\nb')" "" \
    "$(printf '%0129d' 0)" 'a\x00b' "a*" "%2e%2e"; do
    expect_rc 2 "$TRAINER" --etcd http://127.0.0.1:9 --job "$job" --ckpt-dir "$TMP/jobs" --steps 1 --verbose
    expect_output "job must be 1-128 of"
    expect_rc 2 "$CTL" --etcd http://127.0.0.1:9 status "$job"
    expect_output "not a job name"
done

# ---- no password in logs or traces ---------------------------------------------------
# A wrong password: the start fails with a clear reason, and the password is
# in neither the log nor the trace.
unset ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY ETCD_EXTRA
ETCD_SCHEME=http
etcd_start auth || finish
# (etcd checks each password with bcrypt: seconds on a loaded machine, so
# each command is bounded by 30 s, and the set-up's result is checked)
EC="etcdctl --endpoints=$ETCD_URL --dial-timeout=5s --command-timeout=30s"
$EC user add root:rootpw >/dev/null && $EC user grant-role root root >/dev/null &&
    $EC user add worker:s3cret-pw >/dev/null && $EC auth enable >/dev/null
expect "auth: enabled" test $? -eq 0
PREEMPT_ETCD_PASSWORD=wrong-pw expect_rc 2 "$TRAINER" --etcd "$ETCD_URL" --etcd-user worker --job creds \
    --ckpt-dir "$TMP/creds" --steps 10 --trace "$TMP/creds.trace" --verbose
expect_output "authentication failed"
expect "auth: the wrong password is not in the log" sh -c "! grep -q wrong-pw $TMP/out"
$EC --user root:rootpw role add preempt-rw >/dev/null &&
    $EC --user root:rootpw role grant-permission preempt-rw readwrite /preempt/ --prefix >/dev/null &&
    $EC --user root:rootpw user grant-role worker preempt-rw >/dev/null
expect "auth: the worker's role granted (read and write under /preempt/)" test $? -eq 0
PREEMPT_ETCD_PASSWORD=s3cret-pw expect_rc 42 "$TRAINER" --etcd "$ETCD_URL" --etcd-user worker --job creds \
    --ckpt-dir "$TMP/creds" --steps 100000 --step-ms 1 --raise-at 20 --trace "$TMP/creds.trace" --verbose
expect "auth: the trace was written" test -s "$TMP/creds.trace"
expect "auth: the password is in neither the log nor the trace" sh -c "! grep -q s3cret-pw $TMP/out $TMP/creds.trace"
expect "auth: nor is etcd's token" sh -c "! grep -qi 'token' $TMP/creds.trace"
finish

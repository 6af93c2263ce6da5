#!/bin/sh
# clone-through-http.sh HELPER_DIR WORK_DIR
#
# End to end: git clones from a local HTTP server requiring basic auth, with
# git-credential-secitem (found in HELPER_DIR) as the only credential helper and
# the keychain the environment selects (SECITEM_BACKEND and friends).
#   1. the first clone asks (askpass) and the helper stores the credential;
#   2. the second clone asks nothing: the helper answers;
#   3. after the server's password changes, the clone fails once and git makes
#      the helper erase the stale credential;
#   4. the next clone asks again and stores the new password.
# Every step checks what the server saw, what askpass was asked, and what the
# keychain holds (via `secitem find-internet-password`). Exits 0 when all hold.
set -eu
helper_dir=$1
work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
PATH=$helper_dir:$PATH
export PATH

mkdir -p "$work"
cd "$work"
rm -rf origin.git served clone1 clone2 clone3 clone4
git init -q --bare -b main origin.git
git clone -q origin.git seed 2>/dev/null
(cd seed && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m first && git push -q origin HEAD:main)
rm -rf seed
git -C origin.git update-server-info
mkdir served && mv origin.git served/repo.git

printf 'alice:first-password' >password
: >server.log
/usr/bin/python3 "$here/basic-auth-server.py" "$work/served" "$work/password" "$work/port" "$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
i=0
while [ ! -s port ]; do
    i=$((i + 1)); [ $i -lt 200 ] || fail "the server did not start"
    sleep 0.05
done
port=$(cat port)
url="http://127.0.0.1:$port/repo.git"

# askpass answers from files and records every question.
cat >askpass <<ASK
#!/bin/sh
echo "\$1" >>"$work/askpass.log"
case "\$1" in
    Username*) cat "$work/answer-user" ;;
    *) cat "$work/answer-password" ;;
esac
ASK
chmod +x askpass
: >askpass.log
GIT_ASKPASS=$work/askpass
GIT_TERMINAL_PROMPT=0
GIT_CONFIG_NOSYSTEM=1
export GIT_ASKPASS GIT_TERMINAL_PROMPT GIT_CONFIG_NOSYSTEM
clone() { git -c credential.helper= -c credential.helper=secitem -c http.emptyAuth=false clone -q "$url" "$1"; }

echo "1. first clone: asks, stores"
printf alice >answer-user; printf first-password >answer-password
clone clone1 || fail "the first clone failed"
[ "$(grep -c . askpass.log)" = 2 ] || fail "askpass was not asked for user and password once: $(cat askpass.log)"
[ "$(secitem find-internet-password -s 127.0.0.1 -P "$port" -r http -a alice -w)" = first-password ] \
    || fail "the keychain does not hold the stored credential"

echo "2. second clone: asks nothing"
: >askpass.log; : >server.log
clone clone2 || fail "the second clone failed"
[ ! -s askpass.log ] || fail "askpass was asked: $(cat askpass.log)"
grep -q '^200 alice' server.log || fail "the server saw no authenticated request"
! grep -q '^401 wrong' server.log || fail "a wrong password was sent"

echo "3. the server's password changes: the clone fails and git erases the stale credential"
printf 'alice:second-password' >password
: >askpass.log; : >server.log
if clone clone3 2>clone3.err; then fail "the clone with a stale password succeeded"; fi
grep -q '^401 wrong alice' server.log || fail "the stale password was not sent: $(cat server.log)"
if secitem find-internet-password -s 127.0.0.1 -P "$port" -r http -a alice >/dev/null 2>&1; then
    fail "the stale credential was not erased"
fi

echo "4. the next clone asks again and stores the new password"
printf second-password >answer-password
: >askpass.log
clone clone4 || fail "the clone with the new password failed"
grep -q '^Password' askpass.log || fail "askpass was not asked for the new password"
[ "$(secitem find-internet-password -s 127.0.0.1 -P "$port" -r http -a alice -w)" = second-password ] \
    || fail "the keychain does not hold the new password"
echo "all steps passed"

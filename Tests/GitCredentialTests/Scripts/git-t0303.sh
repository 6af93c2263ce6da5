#!/bin/sh
# git-t0303.sh GIT_T_DIR HELPER_DIR WORK_DIR
#
# Runs git's own test for external credential helpers, t0303-credential-external.sh
# (with lib-credential.sh), from the source of the installed git (GIT_T_DIR, as
# scripts/git-test-suite prepares it), against git-credential-secitem in HELPER_DIR,
# on the keychain the environment selects. The timeout cases run with
# "secitem --timeout=1". git's test library sets HOME to its own trash directory,
# so the file backend is pointed at WORK_DIR explicitly when it is the one selected.
#
# Exits with the suite's status; its TAP output goes to standard output.
set -eu
t=$1
helper_dir=$2
work=$3
mkdir -p "$work"
if [ "${SECITEM_BACKEND:-}" = file ] && [ -z "${SECITEM_FILE:-}" ]; then
    SECITEM_FILE=$work/keychain.db
    SECITEM_KEY_FILE=$work/keychain.key
    od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$SECITEM_KEY_FILE"
    chmod 600 "$SECITEM_KEY_FILE"
    export SECITEM_FILE SECITEM_KEY_FILE
fi
PATH=$helper_dir:$PATH
GIT_TEST_INSTALLED=$(dirname "$(command -v git)")
GIT_TEST_CREDENTIAL_HELPER=secitem
GIT_TEST_CREDENTIAL_HELPER_TIMEOUT="secitem --timeout=1"
export PATH GIT_TEST_INSTALLED GIT_TEST_CREDENTIAL_HELPER GIT_TEST_CREDENTIAL_HELPER_TIMEOUT
cd "$t"
exec sh ./t0303-credential-external.sh --root="$work/trash" -v

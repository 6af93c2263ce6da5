#!/bin/sh
# How these fixture stores were made: with the `secitem` CLI of commit 588f7f0
# (file format 1, before per-application access groups), on 2026-11-30.
# They are committed as made; do NOT regenerate them with newer code: their
# point is to be what an earlier release wrote.
#
#   keychain.db        key-file protected (keychain.key, 64 hex digits)
#   passphrase.db      passphrase protected (passphrase "fixture passphrase", scrypt N=2^15)
#
# Usage: make.sh /path/to/secitem   (run inside this directory; refuses to overwrite)
set -eu
secitem=$1
[ ! -e keychain.db ] && [ ! -e passphrase.db ] || { echo "refusing to overwrite" >&2; exit 1; }
export SECITEM_CONFIG=none SECITEM_BACKEND=file
unset SECITEM_ACCESS_GROUPS SECITEM_PASSPHRASE SECITEM_KEY_FILE SECITEM_KEY_SOURCE 2>/dev/null || true

fill() {
    # Two items in the group every process used by default ("default").
    printf 's3cret-alice' | "$secitem" add-generic-password -a alice -s com.example.api -l "API token" -j "fixture" -w -
    printf 'hunter2' | "$secitem" add-internet-password -a bob -s example.com -r htps -P 443 -p /login -w -
    # Binary data, byte for byte (all 256 byte values).
    python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))' \
        | "$secitem" add-generic-password -a binary -s com.example.blob -w -
    # One item in an explicitly listed group, which must keep its group.
    printf 'shared-secret' | SECITEM_ACCESS_GROUPS=com.example.shared,default \
        "$secitem" add-generic-password -a carol -s com.example.shared -w -
}

SECITEM_FILE=$PWD/keychain.db SECITEM_KEY_FILE=$PWD/keychain.key SECITEM_KEY_SOURCE=key-file fill
SECITEM_FILE=$PWD/passphrase.db SECITEM_PASSPHRASE="fixture passphrase" SECITEM_KEY_SOURCE=passphrase fill

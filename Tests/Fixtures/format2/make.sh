#!/bin/sh
# How these fixture stores were made: with the `secitem` CLI of commit 1e6e670
# (file format 2: `seq` not bound into the sealed box), on 2026-12-01.
# They are committed as made; do NOT regenerate them with newer code: their
# point is to be what an earlier release wrote.
#
#   keychain.db        key-file protected (keychain.key, 64 hex digits)
#
# Usage: make.sh /path/to/secitem   (run inside this directory; refuses to overwrite)
set -eu
secitem=$1
[ ! -e keychain.db ] && [ ! -e keychain.key ] || { echo "refusing to overwrite" >&2; exit 1; }
export SECITEM_CONFIG=none SECITEM_BACKEND=file
unset SECITEM_ACCESS_GROUPS SECITEM_PASSPHRASE SECITEM_KEY_FILE SECITEM_KEY_SOURCE 2>/dev/null || true
umask 077
python3 -c 'import os; print(os.urandom(32).hex())' > keychain.key

export SECITEM_FILE=$PWD/keychain.db SECITEM_KEY_FILE=$PWD/keychain.key SECITEM_KEY_SOURCE=key-file
# The same items as ../format1-default-group, in the same groups.
printf 's3cret-alice' | "$secitem" add-generic-password -G default -a alice -s com.example.api -l "API token" -j "fixture" -w -
printf 'hunter2' | "$secitem" add-internet-password -G default -a bob -s example.com -r htps -P 443 -p /login -w -
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))' \
    | "$secitem" add-generic-password -G default -a binary -s com.example.blob -w -
printf 'shared-secret' | "$secitem" add-generic-password -G com.example.shared -a carol -s com.example.shared -w -

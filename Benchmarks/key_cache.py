#!/usr/bin/env python3
"""`secitem find -w` on a passphrase store with its key in the session key cache, paired
with the key-file case, and the floors of both ways of getting a passphrase store's key.

    python3 Benchmarks/key_cache.py [--runs 15] [--items 100] [--secitem PATH]

Whole processes (fork/exec to exit, as a shell script calling `secitem` sees them), timed
by Benchmarks/CLIStartup/spawn_measure.c, subject and baseline alternating run by run:

- cached:    `find -w` on a passphrase store whose derived key is in the kernel's user
             keyring (SECITEM_KEY_CACHE_TIMEOUT default)  vs  the same on a key-file store
             of the same items. Target (issue 23): ≤ 1.5×.
- uncached:  the passphrase store with SECITEM_KEY_CACHE_TIMEOUT=0 (scrypt in every
             process)  vs  the key-file store: what the cache saves.
- floors, in this process: scrypt alone (N=2^15, r=8, p=1, OpenSSL's, through hashlib),
  and one keyctl read of a 65-byte user key (KEYCTL_SEARCH + KEYCTL_READ by syscall(2),
  as secitem does it).

Needs cc, keyutils (the kernel keyrings; the `keyctl` command is not used). Secrets are
random test values and are never printed. Drops its own cached key when done.
"""
import argparse
import ctypes
import hashlib
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def key_cache_benchmark(secitem, runs, items):
    work = tempfile.mkdtemp(prefix="secitem-key-cache-bench-")
    try:
        spawn = os.path.join(work, "spawn_measure")
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", spawn,
                        os.path.join(ROOT, "Benchmarks/CLIStartup/spawn_measure.c")], check=True)

        def run_once(argv, env):
            report = spawn + ".report"
            proc = subprocess.run([spawn, report, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL)
            with open(report) as f:
                ns, rss, status = (int(x) for x in f.read().split())
            os.unlink(report)
            return ns, rss, proc.stdout, status

        def paired(subject, baseline, warmup=2):
            samples = {"subject": [], "baseline": []}
            for i in range(warmup + runs):
                for name, (argv, env, expected) in (("subject", subject), ("baseline", baseline)):
                    ns, rss, out, status = run_once(argv, env)
                    if status != 0 or out != expected:
                        sys.exit(f"key_cache: {name} failed (status {status})")
                    if i >= warmup:
                        samples[name].append((ns, rss))
            return samples

        def median_ms(samples):
            return statistics.median(ns for ns, _ in samples) / 1e6

        base_env = {k: v for k, v in os.environ.items() if not k.startswith("SECITEM_")}
        base_env.update({"SECITEM_CONFIG": "none", "SECITEM_BACKEND": "file", "XDG_DATA_HOME": work,
                         "XDG_CONFIG_HOME": work})
        key = os.path.join(work, "key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(secrets.token_hex(32))
        passphrase = os.path.join(work, "passphrase")
        with open(os.open(passphrase, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(secrets.token_urlsafe(24))
        key_env = dict(base_env, SECITEM_FILE=os.path.join(work, "key.db"), SECITEM_KEY_FILE=key)
        pass_env = dict(base_env, SECITEM_FILE=os.path.join(work, "passphrase.db"), SECITEM_PASSPHRASE_FILE=passphrase)
        value = secrets.token_hex(16)
        for env in (key_env, pass_env):
            for i in range(items):
                secret = value if i == items // 2 else secrets.token_hex(16)
                subprocess.run([secitem, "add-generic-password", "-a", f"account-{i}", "-s", "bench", "-w", "-"],
                               input=secret.encode(), env=env, check=True, stderr=subprocess.DEVNULL)
        expected = (value + "\n").encode()
        find = [secitem, "find-generic-password", "-a", f"account-{items // 2}", "-s", "bench", "-w"]

        cached = paired((find, pass_env, expected), (find, key_env, expected))
        uncached = paired((find, dict(pass_env, SECITEM_KEY_CACHE_TIMEOUT="0"), expected), (find, key_env, expected))

        # Floors, in this process.
        salt = secrets.token_bytes(16)
        scrypt = []
        for _ in range(max(5, runs // 2)):
            start = time.perf_counter_ns()
            hashlib.scrypt(b"a passphrase", salt=salt, n=1 << 15, r=8, p=1, maxmem=64 << 20, dklen=32)
            scrypt.append(time.perf_counter_ns() - start)
        libc = ctypes.CDLL(None, use_errno=True)
        sys_add_key, sys_keyctl = 248, 250  # x86_64
        KEYCTL_SEARCH, KEYCTL_READ, KEYCTL_INVALIDATE = 10, 11, 21
        KEY_SPEC_USER_KEYRING = -4
        name = f"secitem:bench:{secrets.token_hex(8)}".encode()
        payload = secrets.token_bytes(65)
        serial = libc.syscall(sys_add_key, b"user", name, payload, ctypes.c_size_t(len(payload)),
                              ctypes.c_long(KEY_SPEC_USER_KEYRING))
        keyctl = []
        if serial > 0:
            buf = ctypes.create_string_buffer(65)
            for _ in range(1000):
                start = time.perf_counter_ns()
                found = libc.syscall(sys_keyctl, KEYCTL_SEARCH, ctypes.c_long(KEY_SPEC_USER_KEYRING), b"user", name,
                                     ctypes.c_long(0))
                libc.syscall(sys_keyctl, KEYCTL_READ, ctypes.c_long(found), buf, ctypes.c_size_t(65))
                keyctl.append(time.perf_counter_ns() - start)
            libc.syscall(sys_keyctl, KEYCTL_INVALIDATE, ctypes.c_long(serial))
        subprocess.run([secitem, "lock"], env=base_env, stderr=subprocess.DEVNULL)

        print(f"key_cache: {runs} paired runs, {items} items in each store")
        for label, samples in (("cached passphrase", cached), ("passphrase, cache off", uncached)):
            s, b = median_ms(samples["subject"]), median_ms(samples["baseline"])
            target = "  (target ≤ 1.5×)" + ("" if s / b <= 1.5 else "  MISSED") if label.startswith("cached") else ""
            print(f"find -w, {label:22} {s:8.2f} ms   key file {b:8.2f} ms   {s / b:5.2f}×{target}")
        print(f"floor: scrypt alone (N=2^15, r=8, p=1)  {statistics.median(scrypt) / 1e6:8.2f} ms")
        if keyctl:
            print(f"floor: one keyctl search + read          {statistics.median(keyctl) / 1e3:8.2f} µs")
        else:
            print("floor: keyctl: the kernel refused add_key (no keyrings here)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--secitem", help="a built secitem (default: swift build -c release --product secitem)")
    args = parser.parse_args()
    secitem = args.secitem
    if not secitem:
        subprocess.run(["swift", "build", "-c", "release", "--product", "secitem"], cwd=ROOT, check=True)
        bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.strip()
        secitem = os.path.join(bin_path, "secitem")
    key_cache_benchmark(secitem, args.runs, args.items)


if __name__ == "__main__":
    main()

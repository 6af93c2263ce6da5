#!/usr/bin/env python3
"""What users would pick instead of SecItem, measured like the Swift benchmark.

    python3 Benchmarks/peers.py [--quick] [--json FILE] [--swift SWIFT_JSON]

Installs (pip, into a private venv: $SECITEM_PEERS_VENV, default
/tmp/secitem-bench-peers-venv) keyring, secretstorage, keyrings.alt and
keyrings.cryptfile, then measures "lookup-hit" (a get of an existing password):

- python-keyring-secretservice: keyring's SecretService backend on the session
  bus's daemon at 1,000 items (100 with --quick), like the Swift benchmark's
  Secret Service group (run under scripts/with-secret-service; skipped without
  a bus);
- keyrings.cryptfile (CryptFileKeyring, argon2 + AES) at 1,000 items;
- keyrings.alt-encrypted (EncryptedKeyring, PBKDF2 + AES) at 1,000 items;
- secret-tool-lookup: one `secret-tool lookup` process per call.

Writes the Swift benchmark's JSON format ({"machine", "date", "results": [...]}).
With --swift, also prints SecItem's lookup against these (targets: >= 10x faster
than Python keyring on the same daemon, >= 100x faster than keyrings.cryptfile).
Secrets are random test values and are never printed.
"""
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

PACKAGES = ["keyring", "secretstorage", "keyrings.alt", "keyrings.cryptfile"]


def ensure_venv():
    """Re-runs this script inside a venv holding the peers."""
    if os.environ.get("SECITEM_PEERS_INSIDE") == "1":
        return
    venv = os.environ.get("SECITEM_PEERS_VENV", "/tmp/secitem-bench-peers-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PACKAGES], check=True)
    env = dict(os.environ, SECITEM_PEERS_INSIDE="1")
    sys.exit(subprocess.call([python, os.path.abspath(__file__), *sys.argv[1:]], env=env))


def sample(body, count, warmup):
    for i in range(warmup):
        body(i)
    out = []
    for i in range(count):
        start = time.perf_counter_ns()
        body(warmup + i)
        out.append(time.perf_counter_ns() - start)
    return out


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * p))]


def result(backend, items, samples, note=None):
    r = {"backend": backend, "op": "lookup-hit", "items": items, "median_ns": percentile(samples, 0.5),
         "p99_ns": percentile(samples, 0.99), "baseline": None, "baseline_median_ns": None, "ratio": None}
    if note:
        r["note"] = note
    print(f"{backend:32} {items:6} items  median {r['median_ns'] / 1e6:9.3f} ms  p99 {r['p99_ns'] / 1e6:9.3f} ms",
          file=sys.stderr)
    return r


def fill(kr, service, items):
    passwords = {}
    for i in range(items):
        passwords[i] = secrets.token_hex(16)
        kr.set_password(service, f"acct-{i}", passwords[i])
    return passwords


def lookups(kr, service, items, count, warmup):
    def body(k):
        i = (k * 7919) % items
        if kr.get_password(service, f"acct-{i}") is None:
            raise RuntimeError("a stored password was not found")
    return sample(body, count, warmup)


def bench_secret_service(items, count):
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        print("python-keyring-secretservice: skipped: no DBUS_SESSION_BUS_ADDRESS "
              "(run under scripts/with-secret-service)", file=sys.stderr)
        return []
    from keyring.backends import SecretService
    kr = SecretService.Keyring()
    service = f"secitem-peers-{uuid.uuid4()}"
    fill(kr, service, items)
    try:
        samples = lookups(kr, service, items, count, 3)
        out = [result("python-keyring-secretservice", items, samples)]
        if shutil.which("secret-tool"):
            def tool(k):
                i = (k * 7919) % items
                subprocess.run(["timeout", "10", "secret-tool", "lookup", "service", service, "username", f"acct-{i}"],
                               check=True, stdout=subprocess.DEVNULL)
            out.append(result("secret-tool-lookup", items, sample(tool, max(10, count // 2), 2)))
        return out
    finally:
        for i in range(items):
            try:
                kr.delete_password(service, f"acct-{i}")
            except Exception:
                pass


def bench_cryptfile(items, count, root):
    import argon2.low_level
    from keyrings.cryptfile import cryptfile
    kr = cryptfile.CryptFileKeyring()
    kr.file_path = os.path.join(root, "cryptfile.cfg")
    kr.keyring_key = secrets.token_hex(16)
    # Filling 1,000 items pays argon2 per item (minutes). While filling only, every
    # item gets the same salt and its argon2 key is derived once; the entries stay
    # real (lookups below derive the key from the stored salt as always).
    real_kdf, real_os = argon2.low_level.hash_secret_raw, cryptfile.os
    salt, cache = os.urandom(16), {}

    def cached_kdf(**kwargs):
        key = (kwargs["secret"], kwargs["salt"])
        if key not in cache:
            cache[key] = real_kdf(**kwargs)
        return cache[key]

    class FixedSalt:
        def __getattr__(self, name):
            return getattr(real_os, name)

        @staticmethod
        def urandom(n):
            return salt if n == 16 else real_os.urandom(n)

    argon2.low_level.hash_secret_raw, cryptfile.os = cached_kdf, FixedSalt()
    try:
        fill(kr, "bench", items)
    finally:
        argon2.low_level.hash_secret_raw, cryptfile.os = real_kdf, real_os
    return [result("keyrings.cryptfile", items, lookups(kr, "bench", items, count, 2))]


def bench_alt_encrypted(items, count, root):
    import getpass
    from keyrings.alt import file as altfile
    password = secrets.token_hex(16)
    getpass.getpass = lambda prompt="": password
    kr = altfile.EncryptedKeyring()
    kr.file_path = os.path.join(root, "alt-encrypted.cfg")
    fill(kr, "bench", items)
    return [result("keyrings.alt-encrypted", items, lookups(kr, "bench", items, count, 3))]


def machine():
    return {"arch": platform.machine(), "cores": os.cpu_count(), "os": platform.platform(),
            "python": platform.python_version()}


def compare(swift_path, peers):
    with open(swift_path) as f:
        swift = json.load(f)["results"]

    def find(results, backend, items=None):
        for r in results:
            if r["backend"] == backend and r["op"] == "lookup-hit" and (items is None or r["items"] == items):
                return r
        return None

    # None: SecItem's row with as many items as the peer's (the daemon's search cost grows with them).
    rows = [("secret-service", None, "python-keyring-secretservice", 10),
            ("secret-service", None, "secret-tool-lookup", None),
            ("file", 1000, "keyrings.cryptfile", 100),
            ("file", 1000, "keyrings.alt-encrypted", None)]
    print("\nSecItem lookup-hit against the peers (how many times faster):")
    for ours, items, theirs, target in rows:
        b = find(peers, theirs)
        a = find(swift, ours, items if items is not None or b is None else b["items"])
        if not a or not b:
            print(f"  {ours} vs {theirs}: not measured")
            continue
        speedup = b["median_ns"] / a["median_ns"]
        verdict = "" if target is None else (f"  target >= {target}x: {'met' if speedup >= target else 'MISSED'}")
        print(f"  {ours} ({a['median_ns'] / 1e3:.1f} µs) vs {theirs} ({b['median_ns'] / 1e3:.1f} µs): "
              f"{speedup:.1f}x{verdict}")


def main():
    ensure_venv()
    args = sys.argv[1:]
    quick = "--quick" in args
    json_path = args[args.index("--json") + 1] if "--json" in args else None
    swift_path = args[args.index("--swift") + 1] if "--swift" in args else None
    count = 50 if quick else 200
    root = tempfile.mkdtemp(prefix="secitem-peers.")
    results = []
    try:
        results += bench_secret_service(100 if quick else 1000, count)
        results += bench_cryptfile(1000, max(10, count // 10), root)
        results += bench_alt_encrypted(1000, count, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report = {"machine": machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2, sort_keys=True)
    if swift_path:
        compare(swift_path, results)


if __name__ == "__main__":
    main()

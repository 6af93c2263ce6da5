#!/usr/bin/python3
"""Per-call time of git credential helpers, as git runs them: one process per call.

    scripts/with-secret-service /usr/bin/python3 Benchmarks/git-credential.py [--quick]

Builds git-credential-secitem in release mode with the Swift runtime linked
statically (as docs/git-credential.md installs it: a process starts in about a
third of the time) and git's own git-credential-libsecret
(scripts/git-credential-libsecret), then times `get` (a stored credential),
`store` (replacing it) and `erase`+`store` for:

- git-credential-secitem on the encrypted file backend (--backend=file);
- git-credential-store (git's plaintext file helper: `git credential-store --file F`);
- git-credential-secitem on the Secret Service (the private gnome-keyring);
- git-credential-libsecret on the same gnome-keyring;
- /bin/true fed the same input: the cost of starting a process at all, the floor
  no helper can go under.

Each figure is the median (and 90th percentile) of N calls' wall time, measured
around the whole process with time.perf_counter; ratios are against
git-credential-store for the file helpers and against git-credential-libsecret
for the Secret Service ones. Passwords are random test values, never printed.
"""
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
quick = "--quick" in sys.argv
N = 20 if quick else 100


def build():
    flags = ["-c", "release", "--static-swift-stdlib"]
    subprocess.run(["swift", "build", *flags, "--product", "git-credential-secitem"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    bindir = subprocess.run(["swift", "build", *flags, "--show-bin-path"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    libsecret = subprocess.run([os.path.join(ROOT, "scripts", "git-credential-libsecret")], check=True,
                               capture_output=True, text=True).stdout.strip()
    return os.path.join(bindir, "git-credential-secitem"), libsecret


def timed(command, action, text, env):
    start = time.perf_counter()
    result = subprocess.run(command + [action], input=text.encode(), env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command[0]} {action} failed: {result.stderr.decode()}")
    return elapsed, result.stdout.decode()


def measure(name, command, env):
    password = secrets.token_hex(16)
    host = "bench-" + secrets.token_hex(4) + ".example"
    credential = f"protocol=https\nhost={host}\nusername=bench\npassword={password}\n"
    query = f"protocol=https\nhost={host}\n"
    timed(command, "store", credential, env)
    _, answer = timed(command, "get", query, env)
    if command[0] != "/bin/true" and f"password={password}" not in answer:
        raise SystemExit(f"{name}: get did not return the stored password")
    for _ in range(3):  # warm-up
        timed(command, "get", query, env)
    rows = {}
    rows["get"] = [timed(command, "get", query, env)[0] for _ in range(N)]
    rows["store"] = [timed(command, "store", credential, env)[0] for _ in range(N)]
    erase_store = []
    for _ in range(N):
        a = timed(command, "erase", credential, env)[0]
        b = timed(command, "store", credential, env)[0]
        erase_store.append(a + b)
    rows["erase+store"] = erase_store
    timed(command, "erase", credential, env)
    return {op: (statistics.median(v), sorted(v)[int(len(v) * 0.9) - 1]) for op, v in rows.items()}


def main():
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        raise SystemExit("no session bus: run under scripts/with-secret-service")
    helper, libsecret = build()
    work = tempfile.mkdtemp(prefix="secitem-git-bench-")
    try:
        key = os.path.join(work, "keychain.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32))
        base = {k: v for k, v in os.environ.items() if not k.startswith("SECITEM_")}
        file_env = dict(base, SECITEM_FILE=os.path.join(work, "keychain.db"), SECITEM_KEY_FILE=key)
        ss_env = dict(base, SECITEM_SECRET_SERVICE_NAMESPACE="bench-" + secrets.token_hex(4))
        git = shutil.which("git")
        subjects = [
            ("process start (/bin/true)", ["/bin/true"], base, None),
            ("git-credential-store (plaintext)", [git, "credential-store", "--file", os.path.join(work, "store")], base, None),
            ("git-credential-secitem --backend=file", [helper, "--backend=file"], file_env, "git-credential-store (plaintext)"),
            ("git-credential-libsecret (gnome-keyring)", [libsecret], base, None),
            ("git-credential-secitem --backend=secret-service", [helper, "--backend=secret-service"], ss_env,
             "git-credential-libsecret (gnome-keyring)"),
        ]
        results = {}
        print(f"git credential helpers, one process per call, median (p90) of {N} calls, ms")
        print(f"{'helper':50} {'get':>16} {'store':>16} {'erase+store':>16}")
        for name, command, env, against in subjects:
            results[name] = measure(name, command, env)
            cells = []
            for op in ["get", "store", "erase+store"]:
                median, p90 = results[name][op]
                cells.append(f"{median * 1000:7.2f} ({p90 * 1000:6.2f})")
            line = f"{name:50} " + " ".join(f"{c:>16}" for c in cells)
            if against:
                ratios = [results[name][op][0] / results[against][op][0] for op in ["get", "store", "erase+store"]]
                line += "   x" + "/".join(f"{r:.2f}" for r in ratios) + f" of {against.split(' ')[0]}"
            print(line, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()

#!/usr/bin/env python3
"""Whole-process start-up of `secitem find-generic-password -w`, paired with its floor.

    scripts/with-secret-service python3 Benchmarks/cli_startup.py [--runs 15] [--items 1000] [--secitem PATH]

Times whole processes (fork/exec to exit, as a shell script calling `secitem` sees them)
and reads each process's CPU time (user + system) and peak memory (ru_utime, ru_stime and
ru_maxrss from wait4). Subject and baseline alternate run by run, so drift hits both. The
ratio that decides a target is the CPU time's: on a loaded machine wall time stretches
with the queue for a core while CPU time stays the work the program did (the wall-time
ratio is printed beside it, and the load average with the table):

- file:           `secitem find-generic-password -a … -s … -w` on a key-file-protected
                  file keychain of --items items  vs  Benchmarks/CLIStartup/find_baseline.c,
                  a C program doing the same SQLite + OpenSSL work on a file of the same
                  size (built here with cc -O2).
- secret-service: the same `find -w` on the session bus's daemon  vs  `secret-tool lookup`
                  of the very same item (run under scripts/with-secret-service; skipped,
                  loudly, without a bus).
- floors:         `/bin/true` (process creation alone); on the Secret Service also
                  Benchmarks/CLIStartup/secret_service_floor.c, the same lookup with GDBus,
                  libcrypto and libgcrypt alone (OpenSession, SearchItems, GetSecrets), paired with
                  `find -w` (no target: the least any program does).
- conversation:   each Secret Service program run once more under `dbus-monitor`: its
                  connections, method calls (to the bus daemon, to the provider) and round
                  trips (calls sent while none of its earlier calls, bar AddMatch/RemoveMatch
                  which GDBus does not wait for, awaited a reply).

Targets (issue 24, item 4): Secret Service ≤ 1.0× secret-tool; file ≤ 1.5× the C program;
peak memory of `find -w` ≤ 16 MiB. (secret-tool's CPU time does not include the daemon's:
gnome-keyring answers both programs, so the daemon's work is the same on both sides.) Needs: cc, libsqlite3-dev, libssl-dev, libsecret-tools
(secret-tool), dbus (dbus-monitor). Secrets are random test values and are never printed.
"""
import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SPAWN = None  # the compiled spawn_measure


def run_once(argv, env):
    """Runs argv through spawn_measure; returns (wall ns, peak RSS in KiB, stdout bytes, status, CPU µs)."""
    report = SPAWN + ".report"
    proc = subprocess.run([SPAWN, report, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL)
    with open(report) as f:
        fields = f.read().split()
    os.unlink(report)
    if proc.returncode != 0 or len(fields) != 5:
        sys.exit(f"spawn_measure failed for {argv[0]}")
    return int(fields[0]), int(fields[1]), proc.stdout, int(fields[2]), int(fields[3]) + int(fields[4])


def paired(subject, baseline, runs, warmup=3):
    """Alternates subject and baseline; returns their samples."""
    samples = {"subject": [], "baseline": []}
    for i in range(warmup + runs):
        for name, (argv, env, expected) in (("subject", subject), ("baseline", baseline)):
            ns, rss, out, status, cpu = run_once(argv, env)
            if status != 0 or (expected is not None and out != expected):
                sys.exit(f"{name} {argv[0]} failed (status {status})")
            if i >= warmup:
                samples[name].append((ns, rss, cpu))
    return samples


def describe(samples):
    """samples: (wall ns, peak RSS KiB, CPU µs) per run → medians (and wall p90), the largest peak."""
    times = sorted(ns for ns, _, _ in samples)
    return {
        "median_ms": statistics.median(times) / 1e6,
        "p90_ms": times[int(len(times) * 0.9) - 1] / 1e6 if len(times) >= 10 else max(times) / 1e6,
        "cpu_ms": statistics.median(cpu for _, _, cpu in samples) / 1e3,
        "peak_rss_mib": max(rss for _, rss, _ in samples) / 1024,
    }


def run_alone(argv, env):
    ns, rss, _, status, cpu = run_once(argv, env)
    if status != 0:
        sys.exit(f"{argv[0]} failed (status {status})")
    return ns, rss, cpu


def _parse(text):
    """dbus-monitor's text output → list of dicts (kind, time, sender, destination, serial, reply_serial, member, args)."""
    msgs = []
    for line in text.splitlines():
        if line.startswith((" ", "\t")):
            m = re.match(r'\s+string "(.*)"$', line)
            if m and msgs:
                msgs[-1]["args"].append(m.group(1))
            continue
        kind = next((k for k in ("method call", "method return", "error", "signal") if line.startswith(k + " ")), None)
        if not kind:
            continue
        msg = {"kind": kind, "args": []}
        for key in ("time", "sender", "destination", "serial", "reply_serial", "member"):
            m = re.search(r"\b%s=([^ ;]+)" % key, line)
            msg[key] = m.group(1) if m else None
        msgs.append(msg)
    return msgs


def conversation(argv, env, timeout=20):
    """Runs argv once while dbus-monitor records the session bus; returns the program's
    conversation: its connections, method calls (to the bus daemon, to the provider) and
    sequential exchanges (calls sent while none of its earlier calls, bar AddMatch/RemoveMatch,
    awaited a reply: each is one round trip the program waited for)."""
    fd, log = tempfile.mkstemp(prefix="secitem-conversation-")
    with os.fdopen(fd, "w") as f:
        mon = subprocess.Popen(["dbus-monitor", "--session"], stdout=f, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + timeout
        while not any(m["member"] == "NameLost" for m in _parse(open(log).read())):
            if time.time() > deadline or mon.poll() is not None:
                raise RuntimeError("dbus-monitor did not start")
            time.sleep(0.01)
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        while True:
            msgs = _parse(open(log).read())
            opened = {m["sender"] for m in msgs if m["kind"] == "method call" and m["member"] == "Hello"}
            closed = {m["args"][0] for m in msgs if m["member"] == "NameOwnerChanged" and len(m["args"]) == 3 and m["args"][2] == ""}
            if opened and opened <= closed:
                break
            if time.time() > deadline:
                raise RuntimeError("the program's connections did not close")
            time.sleep(0.01)
    finally:
        mon.kill()
        mon.wait()
        os.unlink(log)
    calls = [m for m in msgs if m["kind"] == "method call" and m["sender"] in opened]
    pending = {}
    exchanges = 0
    for m in msgs:
        if m["kind"] == "method call" and m["sender"] in opened:
            unmatched = m["member"] not in ("AddMatch", "RemoveMatch")  # GDBus does not wait for these
            waited = {s for s, member in pending.items() if member not in ("AddMatch", "RemoveMatch")}
            if unmatched and not waited:
                exchanges += 1
            pending[(m["sender"], m["serial"])] = m["member"]
        elif m["kind"] in ("method return", "error") and m["destination"] in opened:
            pending.pop((m["destination"], m["reply_serial"]), None)
    to_bus = [c for c in calls if c["destination"] == "org.freedesktop.DBus"]
    return {
        "connections": len(opened),
        "calls": len(calls),
        "busCalls": len(to_bus),
        "providerCalls": len(calls) - len(to_bus),
        "exchanges": exchanges,
        "sequence": [c["member"] for c in calls],
    }


def plaintext_export(count, service, seed):
    items = []
    for i in range(count):
        items.append({
            "class": "genp", "id": str(uuid.uuid4()).upper(),
            "data": __import__("base64").b64encode(f"secret-{seed}-{i}".encode()).decode(),
            "attributes": {"acct": {"string": f"account-{i}"}, "svce": {"string": service},
                           "agrp": {"string": "default"}, "sync": {"number": 0}, "pdmn": {"string": "ak"},
                           "cdat": {"date": 0}, "mdat": {"date": 0}},
        })
    manifest = {"format": "secitem-export", "version": 1, "count": count, "accessGroups": ["default"], "created": 0}
    return json.dumps({"manifest": manifest, "items": items}).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--secitem", help="a built secitem (default: swift build -c release --product secitem)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--floor", action="append", default=[],
                        help="also time this program alone (e.g. a Swift hello-world), repeatable")
    args = parser.parse_args()

    secitem = args.secitem
    if not secitem:
        subprocess.run(["swift", "build", "-c", "release", "--product", "secitem"], cwd=ROOT, check=True)
        bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.strip()
        secitem = os.path.join(bin_path, "secitem")
    work = tempfile.mkdtemp(prefix="secitem-cli-bench-")
    try:
        global SPAWN
        SPAWN = os.path.join(work, "spawn_measure")
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", SPAWN,
                        os.path.join(ROOT, "Benchmarks/CLIStartup/spawn_measure.c")], check=True)
        ss_floor = os.path.join(work, "secret_service_floor")
        gio = subprocess.run(["pkg-config", "--cflags", "--libs", "gio-2.0"], capture_output=True, text=True)
        if gio.returncode != 0 or subprocess.run(
                ["cc", "-O2", "-Wall", "-Wextra", "-o", ss_floor,
                 os.path.join(ROOT, "Benchmarks/CLIStartup/secret_service_floor.c"), *gio.stdout.split(), "-lcrypto", "-lgcrypt"]).returncode:
            ss_floor = None
            print("cli_startup: cannot build secret_service_floor.c (libglib2.0-dev, libssl-dev, libgcrypt20-dev): its row is skipped")
        baseline = os.path.join(work, "find_baseline")
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", baseline,
                        os.path.join(ROOT, "Benchmarks/CLIStartup/find_baseline.c"), "-lsqlite3", "-lcrypto"], check=True)
        key = os.path.join(work, "key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(secrets.token_hex(32))
        seed = secrets.randbelow(10**9)
        print(f"cli_startup: {args.runs} paired runs, {args.items} items, seed {seed}")
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("SECITEM_")}
        base_env.update({"SECITEM_CONFIG": "none", "XDG_DATA_HOME": work, "XDG_CONFIG_HOME": work})
        results = []
        conversations = []
        middle = args.items // 2
        expected = f"secret-{seed}-{middle}\n".encode()

        # File backend vs the C program.
        file_env = dict(base_env, SECITEM_BACKEND="file", SECITEM_FILE=os.path.join(work, "keychain.db"),
                        SECITEM_KEY_FILE=key)
        export = os.path.join(work, "items.json")
        with open(export, "wb") as f:
            f.write(plaintext_export(args.items, "bulk", seed))
        subprocess.run([secitem, "import", "--plaintext", "--input", export], env=file_env, check=True,
                       stderr=subprocess.DEVNULL)
        subprocess.run([baseline, "create", os.path.join(work, "baseline.db"), key, str(args.items)], check=True)
        find = [secitem, "find-generic-password", "-a", f"account-{middle}", "-s", "bulk", "-w"]
        samples = paired((find, file_env, expected),
                         ([baseline, "lookup", os.path.join(work, "baseline.db"), key, f"account-{middle}"], base_env,
                          f"secret-{middle}\n".encode()), args.runs)
        results.append(("find -w", "file", "sqlite3+libcrypto C", samples, 1.5))

        # Secret Service vs secret-tool on the same daemon and item.
        if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            tool = shutil.which("secret-tool")
            if not tool:
                sys.exit("secret-tool is missing: apt-get install libsecret-tools")
            service = f"bench-{uuid.uuid4()}"
            ss_env = dict(base_env, SECITEM_BACKEND="secret-service")
            count = min(args.items, 100)
            with open(export, "wb") as f:
                f.write(plaintext_export(count, service, seed))
            subprocess.run([secitem, "import", "--plaintext", "--input", export], env=ss_env, check=True,
                           stderr=subprocess.DEVNULL)
            ss_middle = count // 2
            ss_expected = f"secret-{seed}-{ss_middle}".encode()
            find = [secitem, "find-generic-password", "-a", f"account-{ss_middle}", "-s", service, "-w"]
            lookup = [tool, "lookup", "service", service, "account", f"account-{ss_middle}"]
            samples = paired((find, ss_env, ss_expected + b"\n"), (lookup, base_env, ss_expected), args.runs)
            results.append(("find -w", "secret-service", "secret-tool lookup", samples, 1.0))
            if ss_floor:
                # The floor: the same lookup with nothing but GDBus and libcrypto (no target).
                samples = paired((find, ss_env, ss_expected + b"\n"),
                                 ([ss_floor, service, f"account-{ss_middle}"], base_env, ss_expected), args.runs)
                results.append(("find -w", "secret-service", "GDBus+crypto C floor", samples, None))
            # What each says on the bus, once (dbus-monitor): connections, calls, round trips.
            for name, argv, env in (("secitem find -w", find, ss_env), ("secret-tool lookup", lookup, base_env),
                                    ("secitem find -w (automatic choice)", find,
                                     {k: v for k, v in ss_env.items() if k != "SECITEM_BACKEND"})):
                talk = conversation(argv, env)
                conversations.append((name, talk))
            subprocess.run([tool, "clear", "service", service], env=base_env)
        else:
            print("cli_startup: NO SESSION BUS: the Secret Service pair is skipped (run under scripts/with-secret-service)")

        floor = describe([run_alone(["/bin/true"], base_env) for _ in range(args.runs)])

        load = os.getloadavg()
        print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; CPU = user + system time of the process, "
              "the ratio that decides; wall = fork to exit")
        print(f"process floor (/bin/true): CPU {floor['cpu_ms']:.2f} ms, wall {floor['median_ms']:.2f} ms, "
              f"peak {floor['peak_rss_mib']:.1f} MiB")
        for program in args.floor:
            extra = describe([run_alone([program], base_env) for _ in range(args.runs)])
            print(f"floor {program}: CPU {extra['cpu_ms']:.2f} ms, wall {extra['median_ms']:.2f} ms, "
                  f"peak {extra['peak_rss_mib']:.1f} MiB")
        header = (f"{'operation':10} {'backend':15} {'CPU':>8} {'wall':>8} {'p90':>8} {'peak RSS':>9}   {'baseline':22} "
                  f"{'CPU':>8} {'wall':>8} {'peak RSS':>9} {'CPU ratio':>9} {'wall ratio':>10} {'target':>7}")
        print(header)
        print("-" * len(header))
        out = []
        for op, backend, base_name, samples, target in results:
            s, b = describe(samples["subject"]), describe(samples["baseline"])
            ratio = s["cpu_ms"] / b["cpu_ms"]
            wall_ratio = s["median_ms"] / b["median_ms"]
            print(f"{op:10} {backend:15} {s['cpu_ms']:6.2f}ms {s['median_ms']:6.2f}ms {s['p90_ms']:6.2f}ms "
                  f"{s['peak_rss_mib']:6.1f}MiB   {base_name:22} {b['cpu_ms']:6.2f}ms {b['median_ms']:6.2f}ms "
                  f"{b['peak_rss_mib']:6.1f}MiB {ratio:8.2f}× {wall_ratio:9.2f}× "
                  f"{('≤' + str(target) + '×') if target else 'floor':>7}{'' if not target or ratio <= target else '  MISSED'}")
            out.append({"operation": op, "backend": backend, "baseline": base_name, "subject": s, "baselineResult": b,
                        "ratio": ratio, "wallRatio": wall_ratio, "target": target})
        for name, talk in conversations:
            print(f"{name}: {talk['connections']} connection(s), {talk['calls']} method calls "
                  f"({talk['busCalls']} to the bus, {talk['providerCalls']} to the provider), "
                  f"{talk['exchanges']} round trips: {' '.join(talk['sequence'])}")
        for entry in (e for e in out if e["target"]):
            mem = entry["subject"]["peak_rss_mib"]
            print(f"peak memory of find -w on {entry['backend']}: {mem:.1f} MiB (target ≤ 16 MiB){'' if mem <= 16 else '  MISSED'}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"floor": floor, "results": out, "runs": args.runs, "items": args.items, "loadAverage": load,
                           "conversations": dict(conversations)}, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

import CSecItemTSS2
import Foundation
import Glibc
import SecItem
import SecItemCore
import SecItemSealedStore
import SecItemSQLite

/// Opening a file store whose key is sealed to a TPM (group `file/open-tpm2`), against
/// its floor measured in the same run: one TPM unseal alone through tpm2-tss (connect,
/// re-create the storage primary key, load the sealed object, unseal, disconnect), the
/// TPM work every open does. The TPM is a private swtpm on free local ports, started
/// and stopped here; without swtpm the group says so and is skipped.
enum TPM2Benchmarks {
    static func group(_ options: Options, _ results: inout [Measurement], _ extra: inout [[String: Any]]) {
        guard options.wants("file/open-tpm2") else { return }
        announce("file/open-tpm2")
        guard let swtpm = ["/usr/bin/swtpm", "/usr/local/bin/swtpm"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            print("file/open-tpm2: skipped (swtpm is not installed; scripts/install-deps installs it)")
            return
        }
        do {
            results += try run(swtpm: swtpm, samples: options.quick ? 10 : 30)
        } catch {
            fail("file/open-tpm2", error)
        }
    }

    static func run(swtpm: String, samples: Int) throws -> [Measurement] {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = Int.random(in: 40_000...59_000)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: swtpm)
        daemon.arguments = [
            "socket", "--tpm2", "--server", "type=tcp,bindaddr=127.0.0.1,port=\(port)", "--ctrl",
            "type=tcp,bindaddr=127.0.0.1,port=\(port + 1)", "--tpmstate", "dir=\(dir)", "--flags", "not-need-init,startup-clear",
        ]
        try daemon.run()
        defer {
            kill(daemon.processIdentifier, SIGKILL)
            daemon.waitUntilExit()
        }
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        // The first connection waits for swtpm to listen.
        var error = csecitem_tpm2_error()
        var tpm: OpaquePointer?
        let deadline = Date().addingTimeInterval(10)
        while csecitem_tpm2_connect(tcti, &tpm, &error) != 1 {
            guard daemon.isRunning, Date() < deadline else { throw BenchmarkError("swtpm did not start: \(message(error))") }
            usleep(10_000)
        }
        var secret = try randomBytes(32)
        var blob = [UInt8](repeating: 0, count: Int(CSECITEM_TPM2_BLOB_MAX))
        var blobSize = 0
        let sealed = csecitem_tpm2_seal(tpm, secret, secret.count, 0, 0, &blob, blob.count, &blobSize, &error)
        wipeBytes(&secret)
        csecitem_tpm2_disconnect(tpm)
        guard sealed == 1 else { throw BenchmarkError("sealing failed: \(message(error))") }

        let configuration = SQLiteBackend.Configuration(path: dir + "/tpm2.db", keySource: try .tpm2(tcti: tcti))
        let backend = try SQLiteBackend(configuration: configuration)
        try SecItemClient(backend: backend, accessGroups: AccessGroups(["bench"])).addItem(Workload.addQuery(0, items: 1))
        backend.close()

        let open = try sample(count: samples, warmup: 2) { _ in
            let backend = try SQLiteBackend(configuration: configuration)
            backend.close()
            return 1
        }
        let floor = try sample(count: samples, warmup: 2) { _ in
            var error = csecitem_tpm2_error()
            var tpm: OpaquePointer?
            guard csecitem_tpm2_connect(tcti, &tpm, &error) == 1 else { throw BenchmarkError("connect: \(message(error))") }
            defer { csecitem_tpm2_disconnect(tpm) }
            var out = [UInt8](repeating: 0, count: Int(CSECITEM_TPM2_SECRET_MAX))
            var size = 0
            guard csecitem_tpm2_unseal(tpm, blob, blobSize, 0, 0, &out, out.count, &size, &error) == 1 else {
                throw BenchmarkError("unseal: \(message(error))")
            }
            wipeBytes(&out)
            return size
        }
        return [
            Measurement(backend: "file", op: "open-tpm2", items: 1, samples: open, baseline: "one TPM unseal alone (swtpm)", baselineSamples: floor)
        ]
    }

    private static func message(_ error: csecitem_tpm2_error) -> String {
        withUnsafeBytes(of: error.message) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }
}

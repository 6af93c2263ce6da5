// The fuzzing program (docs/fuzzing.md): one libFuzzer entry point for every parser of
// outside bytes, chosen with `--target=NAME` (or SECITEM_FUZZ_TARGET).
//
// Built by scripts/fuzz with `-sanitize=fuzzer,address -DSECITEM_FUZZING`, libFuzzer
// supplies `main` and calls `LLVMFuzzerTestOneInput` for every input. Built plainly (as
// `swift build` does), the same targets run as a replay program:
//
//     SecItemFuzz --list
//     SecItemFuzz --target=NAME FILE_OR_DIRECTORY…     run each input once
//     SecItemFuzz --target=NAME --write-seeds DIRECTORY  write the target's seed corpus
//
// A target is a function of the input bytes that must return: a crash, a Swift runtime
// trap, a sanitizer report or a broken invariant (`FuzzCheck.fail`) is a finding.
import Foundation

/// One fuzz target: a parser of outside bytes and the invariants its result must keep.
struct FuzzTarget: Sendable {
    let name: String
    /// What it feeds and to which parser.
    let summary: String
    /// Runs one input.
    let run: @Sendable (UnsafeBufferPointer<UInt8>) -> Void
    /// The seed corpus: file names and contents (valid inputs written by the real encoders).
    let seeds: @Sendable () throws -> [(name: String, bytes: [UInt8])]
}

enum FuzzTargets {
    static let all: [FuzzTarget] = [
        QueryDictionaryTarget.target,
        FileHeaderTarget.target,
        FileStateTarget.target,
        FileRowTarget.target,
        ExportArchiveTarget.target,
        GitCredentialTarget.target,
        ConfigFileTarget.target,
        LegacyFileTarget.target,
        SecretServiceItemTarget.target,
        CertificateTarget.target,
        KeyDataTarget.target,
        PKCS12Target.target,
        RollbackMarkTarget.target,
        TPM2SealedBlobTarget.target,
        SessionKeyCacheTarget.target,
        PortalSecretTarget.target,
        TPM2NVRecordTarget.target,
        KeyringMarkTarget.target,
        SecretServiceSessionTarget.target,
    ]

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// A broken invariant: a crash with the target's message, which libFuzzer records as a finding.
enum FuzzCheck {
    static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("invariant broken: \(message)", file: file, line: line)
    }

    static func expect(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        if !condition { fail(message(), file: file, line: line) }
    }
}

// MARK: libFuzzer's entry points

/// The target libFuzzer runs: chosen once, before the first input (libFuzzer runs one
/// input at a time on one thread, so this is written once and then only read).
nonisolated(unsafe) private var selected: FuzzTarget?

private func selectTarget(arguments: [String]) -> FuzzTarget {
    let name = arguments.lazy.compactMap { $0.hasPrefix("--target=") ? String($0.dropFirst(9)) : nil }.first
        ?? ProcessInfo.processInfo.environment["SECITEM_FUZZ_TARGET"]
    guard let name, let target = FuzzTargets.named(name) else {
        let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(Data("SecItemFuzz: give --target=NAME (one of: \(names))\n".utf8))
        exit(2)
    }
    return target
}

@_cdecl("LLVMFuzzerInitialize")
func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    var arguments: [String] = []
    if let vector = argv.pointee {
        for i in 0..<Int(argc.pointee) { if let p = vector[i] { arguments.append(String(cString: p)) } }
    }
    if arguments.contains("--list") {
        for target in FuzzTargets.all { print("\(target.name)\t\(target.summary)") }
        exit(0)
    }
    selected = selectTarget(arguments: arguments)
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let target = selected ?? selectTarget(arguments: CommandLine.arguments)
    selected = target
    target.run(UnsafeBufferPointer(start: size == 0 ? nil : data, count: size))
    return 0
}

// MARK: The replay program (a plain build)

#if !SECITEM_FUZZING
@main
struct SecItemFuzzReplay {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--list") {
            for target in FuzzTargets.all { print("\(target.name)\t\(target.summary)") }
            return
        }
        let target = selectTarget(arguments: arguments)
        let paths = arguments.filter { !$0.hasPrefix("--") }
        if arguments.contains("--write-seeds") {
            guard let directory = paths.first else {
                FileHandle.standardError.write(Data("SecItemFuzz: --write-seeds needs a directory\n".utf8))
                exit(2)
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for seed in try target.seeds() {
                try Data(seed.bytes).write(to: URL(fileURLWithPath: directory + "/" + seed.name))
            }
            return
        }
        var count = 0
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("SecItemFuzz: no such file \(path)\n".utf8))
                exit(2)
            }
            let files = isDirectory.boolValue
                ? try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { path + "/" + $0 } : [path]
            for file in files {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
                bytes.withUnsafeBufferPointer { target.run($0) }
                count += 1
            }
        }
        print("\(target.name): \(count) inputs ran")
    }
}
#endif

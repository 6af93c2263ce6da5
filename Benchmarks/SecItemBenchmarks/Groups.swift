/// Further benchmark groups (file, Secret Service, PostgreSQL), each appending its results.
typealias BenchmarkGroup = (Options, inout [Measurement], inout [[String: Any]]) -> Void

@MainActor let extraGroups: [BenchmarkGroup] = [
    FileBenchmarks.group, TPM2Benchmarks.group, SecretServiceBenchmarks.group, PostgreSQLBenchmarks.group, KeySourceBenchmarks.group,
    RollbackBenchmarks.group, ScalingBenchmarks.group, PostgreSQLScaling.group, ProfileBenchmarks.group, FleetBenchmarks.group,
    CLIStartupBenchmarks.group,
]

// swift-tools-version:6.2
// The libFuzzer build of the fuzz targets (Docs/Fuzzing.md). Built by scripts/fuzz.sh with
// `swift build --sanitize fuzzer --sanitize address` into its own scratch path, apart from
// the main build: every module, dependencies included, is instrumented.
import PackageDescription

let package = Package(
    name: "securitykey-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "securitykey", path: ".."),
    ],
    targets: [
        // One executable for every target: FUZZ_TARGET=name picks one (scripts/fuzz.sh lists them).
        .executableTarget(
            name: "securitykey-fuzz",
            dependencies: [.product(name: "_FuzzTargets", package: "securitykey")],
            swiftSettings: [.treatAllWarnings(as: .error)]),
    ]
)

// swift-tools-version:6.2
// The layering is described in Docs/Architecture.md and checked by the build:
// `make build` passes `--explicit-target-dependency-import-check error`, so a module
// that imports something it does not declare below fails to compile.
import PackageDescription

let strict: [SwiftSetting] = [
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "securitykey",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SecurityKeys", targets: ["SecurityKeys"]),
        .library(name: "Authenticators", targets: ["Authenticators"]),
        .library(name: "CTAP2", targets: ["CTAP2"]),
        .library(name: "Transport", targets: ["Transport"]),
        .library(name: "HIDTransport", targets: ["HIDTransport"]),
        .library(name: "NFCTransport", targets: ["NFCTransport"]),
        .library(name: "CBOR", targets: ["CBOR"]),
        .library(name: "CTAPHID", targets: ["CTAPHID"]),
        .library(name: "ISO7816", targets: ["ISO7816"]),
        .library(name: "WebAuthnVerification", targets: ["WebAuthnVerification"]),
        .library(name: "Secp256k1", targets: ["Secp256k1"]),
        .library(name: "VirtualAuthenticator", targets: ["VirtualAuthenticator"]),
        .library(name: "Fleet", targets: ["Fleet"]),
        .library(name: "SecurityKeyDaemonClient", targets: ["SecurityKeyDaemonClient"]),
        .library(name: "SSHSecurityKeyProvider", targets: ["SSHSecurityKeyProvider"]),
        // OpenSSH's security-key provider (SecurityKeyProvider=, ssh-keygen -w, ssh-add -S).
        .library(name: "securitykey-sk", type: .dynamic, targets: ["SecurityKeySK"]),
        .library(name: "PAMSecurityKey", targets: ["PAMSecurityKey"]),
        // The PAM module (pam_securitykey.so, `make pam-module`): login, sudo and screen lockers.
        .library(name: "pam_securitykey", type: .dynamic, targets: ["SecurityKeyPAM"]),
        .executable(name: "securitykey", targets: ["securitykey"]),
        .executable(name: "securitykey-bench", targets: ["securitykey-bench"]),
        // Not an API: exported only so the libFuzzer package in Fuzz/ can link the fuzz targets.
        .library(name: "_FuzzTargets", targets: ["FuzzTargets"]),
        .executable(name: "securitykeyd", targets: ["securitykeyd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
    ],
    targets: [
        // MARK: C libraries (each imported by exactly one transport)
        .systemLibrary(name: "CHIDAPI", path: "Sources/CHIDAPI", pkgConfig: "hidapi-hidraw",
                       providers: [.apt(["libhidapi-dev"])]),
        // Hotplug (device arrival and removal) for the HID transport.
        .systemLibrary(name: "CUDev", path: "Sources/CUDev", pkgConfig: "libudev",
                       providers: [.apt(["libudev-dev"])]),
        .systemLibrary(name: "CPCSCLite", path: "Sources/CPCSCLite", pkgConfig: "libpcsclite",
                       providers: [.apt(["libpcsclite-dev"])]),
        // Raw DEFLATE (RFC 1951) of large-blob entries; imported by CTAP2 only.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        // D-Bus (sd-bus) for the daemon, imported by SDBus only.
        .systemLibrary(name: "CSDBus", path: "Sources/CSDBus", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        // OpenSSL's libcrypto for secp256k1 (ES256K), which BoringSSL lacks; imported by Secp256k1 only:
        // its headers, and libcrypto.so.3 loaded with dlopen when a secp256k1 key is first used, so
        // not linked (shim.h says why).
        .systemLibrary(name: "CLibCrypto", path: "Sources/CLibCrypto", providers: [.apt(["libssl-dev"])]),
        // HTTP(S) downloads (the MDS BLOB) for WebAuthnVerification only: curl.h's types, and
        // libcurl loaded with dlopen when a download starts (shim.h says why), so not linked.
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // MARK: Internal helpers (not a product, not an API): the one base64, hex and random source
        .target(name: "_SecurityKeyInternals", dependencies: ["CSystemExtensions"], swiftSettings: strict),

        // MARK: Pure values, no I/O
        .target(name: "CBOR", dependencies: ["_SecurityKeyInternals"], swiftSettings: strict),
        .target(name: "CTAPHID", dependencies: ["_SecurityKeyInternals"], swiftSettings: strict),
        .target(name: "ISO7816", dependencies: ["_SecurityKeyInternals"], swiftSettings: strict),

        // MARK: The seam between protocol and wire
        .target(name: "Transport", dependencies: ["_SecurityKeyInternals"], swiftSettings: strict),

        // MARK: ECDSA on secp256k1 (ES256K) through libcrypto
        .target(name: "Secp256k1", dependencies: ["CLibCrypto"], swiftSettings: strict),

        // MARK: Protocol
        .target(
            name: "CTAP2",
            dependencies: [
                "_SecurityKeyInternals", "CBOR", "Transport", "CZlib", "Secp256k1",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: Relying-party verification (WebAuthn §7) over CTAP2's parsed values
        .target(
            name: "WebAuthnVerification",
            dependencies: [
                "_SecurityKeyInternals", "CBOR", "CTAP2", "Secp256k1", "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict),

        // MARK: Transports
        .target(
            name: "HIDTransport",
            dependencies: [
                "_SecurityKeyInternals", "CTAPHID", "Transport", "CHIDAPI", "CUDev",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "NFCTransport",
            dependencies: [
                "_SecurityKeyInternals", "ISO7816", "Transport", "CPCSCLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: The virtual authenticator (a product feature)
        .target(
            name: "VirtualAuthenticator",
            dependencies: [
                "_SecurityKeyInternals", "CBOR", "CTAPHID", "ISO7816", "Transport", "Secp256k1",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: The device layer (directory, hotplug, authenticator handle, PIN/UV tokens, touch)
        .target(
            name: "Authenticators",
            dependencies: [
                "_SecurityKeyInternals", "CBOR", "CTAP2", "Transport", "HIDTransport", "NFCTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: Provider API
        .target(
            name: "SecurityKeys",
            dependencies: [
                "_SecurityKeyInternals", "Authenticators", "CBOR", "CTAP2", "CTAPHID", "Transport", "HIDTransport", "NFCTransport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: Fleet inventory rows, policy and attestation verdicts over the device layer
        .target(
            name: "Fleet",
            dependencies: ["_SecurityKeyInternals", "Authenticators", "CBOR", "CTAP2", "Transport", "WebAuthnVerification"],
            swiftSettings: strict),

        // MARK: OpenSSH's security-key middleware over the device layer
        // The C header of OpenSSH's middleware API (sk-api.h), for the entry points only.
        .systemLibrary(name: "CSSHSecurityKeyAPI", path: "Sources/CSSHSecurityKeyAPI"),
        .target(
            name: "SSHSecurityKeyProvider",
            dependencies: [
                "Authenticators", "CBOR", "CTAP2", "Transport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The C entry points (sk_api_version, sk_enroll, sk_sign, sk_load_resident_keys) of
        // libsecuritykey-sk.so; exports.map keeps every other symbol local (make ssh-provider).
        .target(
            name: "SecurityKeySK",
            dependencies: [
                "_SecurityKeyInternals", "SSHSecurityKeyProvider", "CSSHSecurityKeyAPI",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["exports.map"],
            swiftSettings: strict),

        // MARK: The PAM module over the device layer: pam-u2f's files and options
        // Linux-PAM's module header (libpam0g-dev), imported by the module's entry points only.
        .systemLibrary(name: "CPAM", path: "Sources/CPAM", pkgConfig: "pam", providers: [.apt(["libpam0g-dev"])]),
        // glibc's GNU extensions (setfsuid, secure_getenv, dladdr) the C library module hides.
        .systemLibrary(name: "CSystemExtensions", path: "Sources/CSystemExtensions"),
        .target(
            name: "PAMSecurityKey",
            dependencies: [
                "_SecurityKeyInternals", "Authenticators", "CBOR", "CTAP2", "Transport", "WebAuthnVerification",
                "CSystemExtensions",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The C entry points (pam_sm_authenticate, pam_sm_setcred) of pam_securitykey.so;
        // exports.map keeps every other symbol local (make pam-module).
        .target(
            name: "SecurityKeyPAM",
            dependencies: [
                "_SecurityKeyInternals", "PAMSecurityKey", "CPAM",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["exports.map"],
            swiftSettings: strict),

        // MARK: D-Bus connection (sd-bus on a dedicated thread), for the daemon and its clients
        .target(name: "SDBus", dependencies: ["_SecurityKeyInternals", "CSDBus"], swiftSettings: strict),

        // MARK: The client of securitykeyd, and the daemon's D-Bus names both sides share
        .target(
            name: "SecurityKeyDaemonClient",
            dependencies: [
                "_SecurityKeyInternals", "SDBus", "SecurityKeys", "CTAP2", "CBOR", "Transport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),

        // MARK: Executables
        .executableTarget(
            name: "securitykeyd",
            dependencies: [
                "_SecurityKeyInternals", "SDBus", "SecurityKeyDaemonClient", "SecurityKeys", "Authenticators", "CTAP2", "Transport",
                "HIDTransport", "NFCTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "securitykey",
            dependencies: [
                "_SecurityKeyInternals", "Authenticators", "SecurityKeys", "CTAP2", "CBOR", "CTAPHID", "Transport",
                "VirtualAuthenticator", "NFCTransport", "HIDTransport", "WebAuthnVerification", "Fleet",
                "SecurityKeyDaemonClient", "PAMSecurityKey",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "securitykey-bench",
            dependencies: [
                "Authenticators", "CBOR", "CTAPHID", "CTAP2", "Transport", "HIDTransport", "NFCTransport",
                // The in-process soak (LoadSoak.swift): a virtual key behind the provider API.
                "VirtualAuthenticator", "SecurityKeys",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Benchmarks",
            swiftSettings: strict),

        // MARK: Fuzzing (Docs/Fuzzing.md)
        // One "fuzz one input" function per parser of untrusted bytes, shared by the libFuzzer
        // executable (Fuzz/Package.swift) and the regression replay tests.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "_SecurityKeyInternals", "CBOR", "CTAPHID", "ISO7816", "CTAP2", "WebAuthnVerification",
                "VirtualAuthenticator", "SecurityKeys", "SecurityKeyDaemonClient", "PAMSecurityKey",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),

        // MARK: Tests (one target per module)
        // Vector-file reading shared by the test targets (not a product).
        .target(name: "VectorFiles", path: "Tests/VectorFiles", swiftSettings: strict),
        // Running child processes (the CLI, python-fido2, busctl) with both outputs read and a
        // time limit, shared by the test targets (not a product).
        .target(name: "TestProcesses", path: "Tests/TestProcesses", swiftSettings: strict),
        .testTarget(name: "SecurityKeyInternalsTests", dependencies: ["_SecurityKeyInternals", "TestProcesses"], swiftSettings: strict),
        .testTarget(name: "CBORTests", dependencies: ["CBOR"],
                    exclude: ["PythonFido2"],
                    resources: [.copy("Regressions")], swiftSettings: strict),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets"],
                    resources: [.copy("Regressions")], swiftSettings: strict),
        .testTarget(name: "CTAPHIDTests", dependencies: ["CTAPHID"], swiftSettings: strict),
        .testTarget(name: "HIDTransportTests", dependencies: ["HIDTransport", "CTAPHID", "Transport"],
                    swiftSettings: strict),
        .testTarget(name: "ISO7816Tests", dependencies: ["ISO7816"], swiftSettings: strict),
        .testTarget(name: "NFCTransportTests", dependencies: ["NFCTransport", "ISO7816", "Transport"],
                    swiftSettings: strict),
        .testTarget(name: "CTAP2Tests", dependencies: [
            "VectorFiles", "TestProcesses", "_SecurityKeyInternals",
            "CTAP2", "CBOR", "Transport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "WebAuthnVerificationTests", dependencies: [
            "VectorFiles", "_SecurityKeyInternals", "TestProcesses",
            "WebAuthnVerification", "CTAP2", "CBOR",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ], swiftSettings: strict),
        .testTarget(name: "VirtualAuthenticatorTests", dependencies: [
            "TestProcesses", "VirtualAuthenticator", "Authenticators", "CTAP2", "CBOR", "Transport", "CTAPHID", "ISO7816", "NFCTransport", "HIDTransport",
            "WebAuthnVerification", "Secp256k1",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ], swiftSettings: strict),
        .testTarget(name: "IntegrationTests", dependencies: [
            "_SecurityKeyInternals", "Authenticators", "CTAP2", "CBOR", "Transport", "VirtualAuthenticator", "SecurityKeys",
            "NFCTransport", "HIDTransport", "WebAuthnVerification",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
        ], swiftSettings: strict),
        // Runs the built `securitykey` binary as a subprocess (it must be built first:
        // `swift build --build-tests` builds it).
        .testTarget(name: "CLITests", dependencies: ["securitykey", "TestProcesses"], exclude: ["Python"], swiftSettings: strict),
        // Runs the built `securitykey-bench` and `securitykey` binaries as subprocesses.
        .testTarget(name: "BenchmarkTests", dependencies: ["securitykey-bench", "securitykey", "TestProcesses"], swiftSettings: strict),
        .testTarget(name: "AuthenticatorsTests", dependencies: [
            "Authenticators", "CTAP2", "Transport", "VirtualAuthenticator", "TestProcesses",
        ], swiftSettings: strict),
        .testTarget(name: "FleetTests", dependencies: ["Fleet", "Authenticators", "Transport"], swiftSettings: strict),
        // Runs the built `securitykeyd` and `securitykey` binaries against a private dbus-daemon.
        .testTarget(name: "DaemonTests", dependencies: ["securitykeyd", "securitykey", "TestProcesses"], exclude: ["Python"],
                    swiftSettings: strict),
        // Docs/Architecture.md's module table against the targets above.
        .testTarget(name: "ArchitectureTests", dependencies: ["TestProcesses"], swiftSettings: strict),
        // Debian's OpenSSH (ssh-keygen, ssh, sshd, ssh-agent) with libsecuritykey-sk.so against
        // virtual keys served by the built `securitykey` over UDP and vpcd.
        .testTarget(name: "SSHSecurityKeyProviderTests", dependencies: [
            "_SecurityKeyInternals", "SSHSecurityKeyProvider", "SecurityKeySK", "CSSHSecurityKeyAPI", "securitykey",
            "TestProcesses",
            "WebAuthnVerification", "Authenticators", "CTAP2", "CBOR",
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
        // Parsing of pam-u2f's files and options, and pamtester with pam_securitykey.so against
        // virtual keys served by the built `securitykey` over UDP and vpcd.
        .testTarget(name: "PAMSecurityKeyTests", dependencies: [
            "_SecurityKeyInternals", "PAMSecurityKey", "SecurityKeyPAM", "securitykey", "TestProcesses",
            "CTAP2", "CBOR",
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
        .testTarget(name: "SecurityKeysTests", dependencies: [
            "_SecurityKeyInternals", "SecurityKeys", "TestProcesses",
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: strict),
    ]
)

// DocC (`make docs`) needs swift-docc-plugin, but only there: a package that depends on this
// one resolves and fetches every dependency this manifest declares, and a documentation plugin
// its build never runs should not be one of them. `make docs` sets SECURITYKEY_DOCC=1.
if Context.environment["SECURITYKEY_DOCC"] == "1" {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// swift-tools-version:6.0
// A package that depends on securitykey the way a user's would (by path here, by URL in
// theirs) and uses only its products: built and run by scripts/test-packaging.sh.
import PackageDescription

let package = Package(
    name: "Consumer",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "securitykey", path: "../..")],
    targets: [
        .executableTarget(
            name: "Consumer",
            dependencies: [
                .product(name: "SecurityKeys", package: "securitykey"),
                .product(name: "VirtualAuthenticator", package: "securitykey"),
                .product(name: "WebAuthnVerification", package: "securitykey"),
                .product(name: "CTAP2", package: "securitykey"),
            ])
    ]
)

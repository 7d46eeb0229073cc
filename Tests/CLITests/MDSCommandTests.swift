import Foundation
import TestProcesses
import Testing

/// The shared MDS3 data (../shared/vectors/mds3, described in its README.md).
private let mdsVectors: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/vectors")

func temporaryCache() -> (URL, [String: String]) {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mds-cli-\(UUID())")
    return (dir, ["XDG_CACHE_HOME": dir.path])
}

func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
        of: "/", with: "_"
    )
    .replacingOccurrences(of: "=", with: "")
}

@Suite("securitykey mds", .serialized)
struct MDSCommandTests {
    @Test func updateFromLoopbackThenShow() throws {
        let server = try LoopbackHTTPServer(directory: mdsVectors.appendingPathComponent("mds3"))
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }

        // Today the real BLOB's signing certificates are expired (README): refused, nothing cached.
        let today = try CLIRunner.run(
            ["mds", "update", "--url", server.url("mds3-blob-no122.jwt"), "--json"], environment: env)
        #expect(today.status == 2)
        #expect(
            (try today.object()["error"] as? [String: Any])?["code"] as? String
                == "metadata-certificate-expired")
        #expect(
            !FileManager.default.fileExists(
                atPath: dir.appendingPathComponent("securitykey/mds3-blob.jwt").path))

        let update = try CLIRunner.run(
            [
                "mds", "update", "--url", server.url("mds3-blob-no122.jwt"), "--verify-time", "2024-12-16",
                "--json",
            ],
            environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let result = try update.object()
        #expect(result["no"] as? Int == 122)
        #expect(result["nextUpdate"] as? String == "2025-01-01")
        #expect(result["entries"] as? Int == 281)
        #expect(result["stale"] as? Bool == false)
        #expect(result["trustAnchor"] as? String == "CN=GlobalSign,O=GlobalSign,OU=GlobalSign Root CA - R3")

        let show = try CLIRunner.run(
            ["mds", "show", "cb69481e-8ff7-4039-93ec-0a2729a154a8", "--json"], environment: env)
        #expect(show.status == 0, "\(show.stderr)")
        let entry = try show.object()
        #expect(entry["model"] as? String == "YubiKey 5 Series")
        #expect(entry["authenticatorVersion"] as? Int == 50100)
        let certification = entry["certification"] as? [String: Any]
        #expect(certification?["status"] as? String == "FIDO_CERTIFIED_L1")
        #expect(certification?["certificationDescriptor"] as? String == "YubiKey 5A")
        #expect(certification?["effectiveDate"] as? String == "2020-05-12")
        #expect((entry["statusHistory"] as? [Any])?.count == 2)
        #expect((entry["attestationRoots"] as? [[String: Any]])?.count == 1)

        let hypr = try CLIRunner.run(
            ["mds", "show", "0076631b-d4a0-427f-5773-0ec71c9e0279"], environment: env)
        #expect(hypr.stdout.contains("Model: HYPR FIDO2 Authenticator"))
        let absent = try CLIRunner.run(
            ["mds", "show", "244eb29e-e090-4e49-81fe-1f20f8d3b8f4", "--json"], environment: env)
        #expect(absent.status == 1)

        // Rollback: the conformance BLOB (no 42, valid under its FAKE root) is older than 122.
        let older = try CLIRunner.run(
            [
                "mds", "update", "--url", server.url("test/conformance-mds3-blob-no42-GOOD.jwt"), "--anchor",
                mdsVectors.appendingPathComponent("mds3/test/conformance-mds3-root-FAKE.pem").path, "--json",
            ], environment: env)
        #expect(older.status == 2)
        #expect((try older.object()["error"] as? [String: Any])?["code"] as? String == "metadata-rollback")
        let still = try CLIRunner.run(
            ["mds", "show", "cb69481e-8ff7-4039-93ec-0a2729a154a8", "--json"], environment: env)
        #expect((try still.object()["blob"] as? [String: Any])?["no"] as? Int == 122)
    }

    @Test func staleNextUpdateIsWarned() throws {
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try CLIRunner.run(
            [
                "mds", "update", "--file", mdsVectors.appendingPathComponent("mds3/mds3-blob-no122.jwt").path,
                "--verify-time", "2025-02-01T00:00:00Z", "--json",
            ], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try run.object()["stale"] as? Bool == true)
        #expect(run.stderr.contains("nextUpdate (2025-01-01) has passed"))
    }

    @Test func badBLOBsAreRefusedWithTheirCodes() throws {
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        let test = mdsVectors.appendingPathComponent("mds3/test")
        let cases: [([String], String)] = [
            (
                [
                    "--file", test.appendingPathComponent("BAD-SIGNATURE-tampered-real-no257.jwt").path,
                    "--verify-time", "2026-05-31",
                ],
                "metadata-signature-invalid"
            ),
            (
                [
                    "--file", test.appendingPathComponent("BAD-CHAIN-mds2-conformance-toc.jwt").path,
                    "--anchor", test.appendingPathComponent("mds2-conformance-root-FAKE.pem").path,
                ], "metadata-chain-invalid"
            ),
            (
                [
                    "--file", test.appendingPathComponent("BAD-REVOKED-SIGNER-mds2-conformance-toc.jwt").path,
                    "--anchor", test.appendingPathComponent("mds2-conformance-root-FAKE.pem").path,
                    "--crl", test.appendingPathComponent("mds2-conformance-CA-1-FAKE.crl.pem").path,
                ], "metadata-signer-revoked"
            ),
        ]
        for (arguments, code) in cases {
            let run = try CLIRunner.run(["mds", "update"] + arguments + ["--json"], environment: env)
            #expect(run.status == 2, "\(arguments)")
            #expect((try run.object()["error"] as? [String: Any])?["code"] as? String == code)
        }
    }

    /// A real YubiKey registration (py_webauthn's test vector) checked against the cached MDS.
    @Test func verifyRegistrationAgainstMDS() throws {
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        guard
            let data = FileManager.default.contents(
                atPath: mdsVectors.appendingPathComponent("third-party/py_webauthn.json").path),
            let list = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { throw CLITestError("missing py_webauthn.json") }
        func bytes(_ name: String) throws -> [UInt8] {
            let id =
                "py_webauthn/tests/test_verify_registration_response_packed.py/test_verify_attestation_from_yubikey_firefox/"
                + name
            guard let hex = list.first(where: { $0["id"] as? String == id })?["hex"] as? String else {
                throw CLITestError("missing \(id)")
            }
            var out: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
                let byte = UInt8(hex[index..<next], radix: 16)
            {
                out.append(byte)
                index = next
            }
            return out
        }
        let registration: [String: Any] = [
            "id": base64URL(try bytes("rawId")), "rawId": base64URL(try bytes("rawId")), "type": "public-key",
            "response": [
                "clientDataJSON": base64URL(try bytes("clientDataJSON")),
                "attestationObject": base64URL(try bytes("attestationObject")),
            ],
        ]
        let file = dir.appendingPathComponent("registration.json")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: registration).write(to: file)

        let none = try CLIRunner.run(
            ["verify", "--registration", file.path, "--rp", "localhost", "--mds"], environment: env)
        #expect(none.status == 1)
        #expect(none.stderr.contains("mds update"))

        let update = try CLIRunner.run(
            [
                "mds", "update", "--file", mdsVectors.appendingPathComponent("mds3/mds3-blob-no122.jwt").path,
                "--verify-time", "2024-12-16",
            ], environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let run = try CLIRunner.run(
            ["verify", "--registration", file.path, "--rp", "localhost", "--mds", "--json"], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        let verified = try run.object()["registration"] as? [String: Any]
        #expect(verified?["model"] as? String == "Security Key by Yubico with NFC")
        #expect(verified?["certification"] as? String == "FIDO_CERTIFIED_L1")
        #expect(verified?["trustAnchor"] as? String == "CN=Yubico U2F Root CA Serial 457200631")
        // The cached BLOB's nextUpdate (2025-01-01, README) has passed: said on standard error and
        // in the document, never a silent pass.
        let metadata = try run.object()["metadata"] as? [String: Any]
        #expect(metadata?["no"] as? Int == 122)
        #expect(metadata?["nextUpdate"] as? String == "2025-01-01")
        #expect(metadata?["stale"] as? Bool == true)
        #expect(run.stderr.contains("past its nextUpdate (2025-01-01)"))
        // Without --mds the cache still names the model and gives its age.
        let plain = try CLIRunner.run(["verify", "--registration", file.path, "--rp", "localhost"], environment: env)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.contains("the model is Security Key by Yubico with NFC in the FIDO metadata"))
        #expect(plain.stdout.contains("Metadata: BLOB no 122, cached "))
        #expect(plain.stderr.contains("past its nextUpdate (2025-01-01)"))
    }

    @Test func infoAndListNameTheModelFromTheCache() throws {
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        let update = try CLIRunner.run(
            [
                "mds", "update", "--file", mdsVectors.appendingPathComponent("mds3/mds3-blob-no122.jwt").path,
                "--verify-time", "2024-12-16",
            ], environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)"
        // The MDS3 vectors' README states this AAGUID is "HYPR FIDO2 Authenticator" in BLOB no 122.
        _ = try CLIRunner.withVirtualKey(
            ["--udp", "127.0.0.1:\(port)", "--aaguid", "0076631b-d4a0-427f-5773-0ec71c9e0279"]
        ) {
            var info: [String: Any] = [:]
            for _ in 0..<50 {
                if let object = try? CLIRunner.run(["info", "--device", device, "--json"], environment: env).object(),
                    object["aaguid"] != nil
                {
                    info = object
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(info["model"] as? String == "HYPR FIDO2 Authenticator")
            let list = try CLIRunner.run(["list", "--json", "--udp", "127.0.0.1:\(port)"], environment: env)
            let keys = try #require(try list.json() as? [[String: Any]])
            #expect(keys.first { $0["uri"] as? String == device }?["model"] as? String == "HYPR FIDO2 Authenticator")
            // fleet reads the same cache: the table ends with its age, and its nextUpdate
            // (2025-01-01) having passed is a warning.
            let fleet = try CLIRunner.run(["fleet", "--udp", "127.0.0.1:\(port)"], environment: env)
            #expect(fleet.stdout.contains("HYPR FIDO2 Authenticator"), "\(fleet.stdout)")
            #expect(fleet.stdout.contains("Metadata: BLOB no 122, cached "), "\(fleet.stdout)")
            #expect(fleet.stderr.contains("past its nextUpdate (2025-01-01)"), "\(fleet.stderr)")
            // Without a cache there is no model, and nothing fails.
            let bare = try CLIRunner.run(
                ["info", "--device", device, "--json"], environment: ["XDG_CACHE_HOME": dir.path + "-none"])
            #expect(bare.status == 0)
            #expect(try bare.object()["model"] is NSNull)
        }
    }
}

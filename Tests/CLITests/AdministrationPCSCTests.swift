import Foundation
import Testing

/// Fingerprints and large blobs over PC/SC: a CTAP 2.1 virtual card with a scripted sensor on a
/// reader of a private bed; the CLI's `--json` is checked against the script, and the large blob
/// written through the WebAuthn extension is the one `largeblob get` reads.
@Suite(.serialized) struct AdministrationPCSCTests {
    static let pin = "1234"

    @Test func bioEnrollmentAndLargeBlobsOverPCSC() throws {
        let work = try ChoiceCommandTests.scratch("admin-pcsc")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            let vpcd = try #require(bed.environment["SECURITYKEY_VPCD_PORT"].flatMap(Int.init))
            let readers = (bed.environment["SECURITYKEY_VPCD_READERS"] ?? "").split(separator: "|").map(String.init)
            let device = "pcsc:\(try #require(readers.first))"
            let script = ["too-low", "good", "poor-quality", "good"]
            let card = try ChoiceCommandTests.ServedKey(
                [
                    "--pcsc", "127.0.0.1:\(vpcd)", "--profile", "ctap21", "--pin", Self.pin,
                    "--bio-samples", script.joined(separator: ","), "--bio-samples-required", "2",
                ], environment: bed.environment, log: work.appendingPathComponent("card.log"))
            func run(_ arguments: [String]) throws -> CLIRunner.Result {
                try bed.run(arguments + ["--device", device, "--pin-stdin", "--json"], input: Self.pin + "\n")
            }
            var ready = false
            for _ in 0..<100 where !ready {
                ready = (try? bed.run(["info", "--device", device]).status) == 0
                if !ready { Thread.sleep(forTimeInterval: 0.1) }
            }
            try #require(ready, "the card did not come up")

            // Each scripted sample's status, in order, and what remains after it.
            let enroll = try run(["bio", "enroll", "--name", "thumb"])
            try #require(enroll.status == 0, "\(enroll.stderr)")
            let samples = try enroll.object()["samples"] as? [[String: Any]] ?? []
            #expect(samples.map { $0["status"] as? String } == script)
            #expect(samples.map { $0["remaining"] as? Int } == [2, 1, 1, 0])
            let listed = try run(["bio", "list"]).json() as? [[String: Any]]
            #expect(listed?.compactMap { $0["name"] as? String } == ["thumb"])

            // A large blob through the WebAuthn extension, read back by `largeblob get`.
            let made = try run(["register", "--rp", "blob.example", "--user", "erin", "--resident", "--large-blob", "required"])
            try #require(made.status == 0, "\(made.stderr)")
            let id = try #require(try made.object()["id"] as? String)
            let data = Array("stored over NFC".utf8)
            let write = try run([
                "authenticate", "--rp", "blob.example", "--credential", id, "--large-blob-write",
                Data(data).base64EncodedString(),
            ])
            try #require(write.status == 0, "\(write.stderr)")
            let written = try write.object()["clientExtensionResults"] as? [String: Any]
            #expect((written?["largeBlob"] as? [String: Any])?["written"] as? Bool == true)
            let got = try run(["largeblob", "get", "--credential", id])
            try #require(got.status == 0, "\(got.stderr)")
            let expected = Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(try got.object()["data"] as? String == expected)
            _ = card
        }
    }
}

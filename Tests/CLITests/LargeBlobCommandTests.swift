import Foundation
import Testing

/// `securitykey largeblob` against `virtual serve --profile ctap21 --udp`, checked against
/// python-fido2's `fido2.ctap2.blob.LargeBlobs` on the same key: each side reads what the other
/// wrote, decrypting with the largeBlobKey credential management gives.
@Suite(.serialized) struct LargeBlobCommandTests {
    static let pin = "1234"

    /// Runs large_blobs.py ACTION ARGS against the key on `port`.
    static func python(_ python: String, _ port: Int, _ action: String, _ arguments: [String] = [])
        throws -> [String: Any]
    {
        try PythonFido2.runScript(
            python, "large_blobs.py", [String(port), action] + arguments, input: pin + "\n")
    }

    static func cli(_ arguments: [String]) throws -> CLIRunner.Result {
        try CLIRunner.run(arguments + ["--pin-stdin", "--json"], input: pin + "\n")
    }

    static func waitUntilServed(_ device: String) {
        CLIRunner.waitUntilServed(device)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func pythonAndCLIReadWhatTheOtherWrote() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("largeblob-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21", "--pin", Self.pin]) {
            Self.waitUntilServed(device)
            try Self.exchange(python: python, port: port, device: device, directory: directory)
        }
    }

    /// The WebAuthn largeBlob extension through the provider (`register --large-blob`,
    /// `authenticate --large-blob-write/--large-blob-read`): python-fido2 reads what a sign-in
    /// wrote, and a sign-in reads what python-fido2 wrote.
    @Test func theLargeBlobExtensionWritesAndReadsWhatPythonSees() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21", "--pin", Self.pin]) {
            Self.waitUntilServed(device)
            let made = try Self.cli([
                "register", "--device", device, "--rp", "blob.example", "--user", "carol", "--resident",
                "--large-blob", "required",
            ])
            try #require(made.status == 0, "\(made.stderr)")
            let registration = try made.object()
            let credentialID = try #require(registration["id"] as? String)
            let results = registration["clientExtensionResults"] as? [String: Any]
            #expect((results?["largeBlob"] as? [String: Any])?["supported"] as? Bool == true)

            let data = Array("a certificate, an SSH key, anything".utf8)
            let write = try Self.cli([
                "authenticate", "--device", device, "--rp", "blob.example", "--credential", credentialID,
                "--large-blob-write", base64url(data),
            ])
            try #require(write.status == 0, "\(write.stderr)")
            let written = try write.object()["clientExtensionResults"] as? [String: Any]
            #expect((written?["largeBlob"] as? [String: Any])?["written"] as? Bool == true)
            #expect(try Self.python(python, port, "get", [credentialID])["data"] as? String == Self.hex(data))

            let replaced = Array("replaced by python-fido2".utf8)
            _ = try Self.python(python, port, "put", [credentialID, Self.hex(replaced)])
            let read = try Self.cli([
                "authenticate", "--device", device, "--rp", "blob.example", "--credential", credentialID,
                "--large-blob-read",
            ])
            try #require(read.status == 0, "\(read.stderr)")
            let readResults = try read.object()["clientExtensionResults"] as? [String: Any]
            #expect((readResults?["largeBlob"] as? [String: Any])?["blob"] as? String == base64url(replaced))

            // A non-discoverable credential cannot hold one: `required` fails before creating.
            let refused = try Self.cli([
                "register", "--device", device, "--rp", "blob.example", "--user", "dave", "--large-blob", "required",
            ])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("discoverable"), "\(refused.stderr)")
        }
    }

    static func exchange(python: String, port: Int, device: String, directory: URL) throws {
        let alice = try Self.python(python, port, "make", ["a.example", "alice"])
        let bob = try Self.python(python, port, "make", ["b.example", "bob"])
        let aliceID = try #require(alice["credentialId"] as? String)
        let bobID = try #require(bob["credentialId"] as? String)
        // The key makeCredential returned is the one credential management lists.
        let keys = try Self.python(python, port, "keys")
        #expect(keys[aliceID] as? String == alice["largeBlobKey"] as? String)

        // python-fido2 writes, the CLI reads.
        let fromPython = Array("written by python-fido2 ".utf8) + (0..<200).map { UInt8($0 % 7) }
        _ = try Self.python(python, port, "put", [aliceID, hex(fromPython)])
        let got = try cli(["largeblob", "get", "--device", device, "--credential", aliceID])
        try #require(got.status == 0, "\(got.stderr)")
        let gotObject = try got.object()
        #expect(gotObject["data"] as? String == base64url(fromPython))
        #expect(gotObject["rpId"] as? String == "a.example")
        #expect(gotObject["corrupted"] is NSNull)

        // The CLI writes, python-fido2 reads; alice's entry is kept.
        let fromCLI = Array("written by securitykey".utf8)
        let file = directory.appendingPathComponent("blob.bin")
        try Data(fromCLI).write(to: file)
        let set = try cli(["largeblob", "set", "--device", device, "--credential", bobID, file.path])
        try #require(set.status == 0, "\(set.stderr)")
        #expect(try Self.python(python, port, "get", [bobID])["data"] as? String == hex(fromCLI))
        #expect(try Self.python(python, port, "get", [aliceID])["data"] as? String == hex(fromPython))

        // list names the credential each entry decrypts for.
        let list = try cli(["largeblob", "list", "--device", device]).object()
        let entries = try #require(list["entries"] as? [[String: Any]])
        #expect(Set(entries.compactMap { $0["credentialId"] as? String }) == [aliceID, bobID])
        #expect(entries.first { $0["credentialId"] as? String == bobID }?["origSize"] as? Int == fromCLI.count)
        #expect(list["corrupted"] is NSNull)

        // Too large for maxSerializedLargeBlobArray (1024): refused, nothing changed.
        var incompressible = SystemRandomNumberGenerator()
        let big = (0..<1500).map { _ in UInt8.random(in: 0...255, using: &incompressible) }
        try Data(big).write(to: file)
        let refused = try cli(["largeblob", "set", "--device", device, "--credential", bobID, file.path])
        #expect(refused.status == 1)
        #expect(try refused.errorCode() == "large-blob-storage-full")
        #expect(try Self.python(python, port, "get", [bobID])["data"] as? String == hex(fromCLI))

        // delete removes only alice's entry.
        let deleted = try cli(["largeblob", "delete", "--device", device, "--credential", aliceID, "--yes"])
        try #require(deleted.status == 0, "\(deleted.stderr)")
        #expect(try deleted.object()["removed"] as? Int == 1)
        #expect(try Self.python(python, port, "get", [aliceID])["data"] is NSNull)
        #expect(try Self.python(python, port, "get", [bobID])["data"] as? String == hex(fromCLI))

        // A corrupted array (its hash matches, but it holds a CBOR map, not an array), written
        // raw by python: reported, and not overwritten without --force.
        let serialized = try PythonFido2.runJSON(
            python,
            "import hashlib, json; d = b'\\xa0'; print(json.dumps({'s': (d + hashlib.sha256(d).digest()[:16]).hex()}))",
            [])
        let corrupt = try #require(serialized["s"] as? String)
        _ = try Self.python(python, port, "raw", [corrupt])
        let reported = try cli(["largeblob", "list", "--device", device]).object()
        #expect((reported["corrupted"] as? [String: Any])?["code"] as? String == "not-an-array")
        #expect((reported["entries"] as? [Any])?.isEmpty == true)
        try Data(fromCLI).write(to: file)
        let kept = try cli(["largeblob", "set", "--device", device, "--credential", bobID, file.path])
        #expect(kept.status == 1)
        #expect(try kept.errorCode() == "large-blob-corrupted")
        #expect(try Self.python(python, port, "serialized")["serialized"] as? String == corrupt)
        let forced = try cli(["largeblob", "set", "--device", device, "--credential", bobID, "--force", file.path])
        try #require(forced.status == 0, "\(forced.stderr)")
        #expect(try Self.python(python, port, "get", [bobID])["data"] as? String == hex(fromCLI))
    }

    @Test func maxLargeBlobRaisesTheLimit() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("largeblob-\(UUID()).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try CLIRunner.withVirtualKey([
            "--udp", "127.0.0.1:\(port)", "--profile", "ctap21", "--pin", Self.pin, "--max-large-blob", "4096",
        ]) {
            Self.waitUntilServed(device)
            let info = try CLIRunner.run(["info", "--device", device, "--json"])
            #expect(info.stdout.contains("4096"), "\(info.stdout)")
            let made = try Self.python(python, port, "make", ["c.example", "carol"])
            let id = try #require(made["credentialId"] as? String)
            var random = SystemRandomNumberGenerator()
            // Several fragments (maxMsgSize 1200 gives 1136-byte fragments), each way.
            let big = (0..<3000).map { _ in UInt8.random(in: 0...255, using: &random) }
            try Data(big).write(to: file)
            let set = try Self.cli(["largeblob", "set", "--device", device, "--credential", id, file.path])
            try #require(set.status == 0, "\(set.stderr)")
            #expect(try Self.python(python, port, "get", [id])["data"] as? String == Self.hex(big))
        }
    }
}

/// base64url without padding, as the CLI prints bytes.
private func base64url(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// The code of the JSON error object a failed command printed.
extension CLIRunner.Result {
    func errorCode() throws -> String? {
        (try object()["error"] as? [String: Any])?["code"] as? String
    }
}

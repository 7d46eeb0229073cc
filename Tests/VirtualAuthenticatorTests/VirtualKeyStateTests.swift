import CBOR
import Foundation
import Testing
import VirtualAuthenticator

@Suite("VirtualKey persistent state")
struct VirtualKeyStateTests {
    /// A fresh directory removed after the test.
    static func withDirectory(_ body: (String) async throws -> Void) async throws {
        let path = NSTemporaryDirectory() + "virtualkey-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await body(path)
    }

    @Test func stateRoundTripsThroughTheFile() async throws {
        try await Self.withDirectory { directory in
            let path = directory + "/key.state"
            // The first key is released before the second opens the file: a state file has one
            // holder at a time.
            let (nonDiscoverable, discoverable, firstIdentity) = try await {
                let first = try VirtualKey(stateFile: path)
                return (
                    try await register(first), try await register(first, userID: [5, 5], rk: true),
                    [first.aaguid, first.attestationRootCertificateDER, first.attestationCertificateDER]
                )
            }()
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            // No temporary files are left behind; the lock file stays.
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
                    == ["key.state", "key.state.lock"])

            let second = try VirtualKey(stateFile: path)
            #expect(
                [second.aaguid, second.attestationRootCertificateDER, second.attestationCertificateDER]
                    == firstIdentity)
            let clientDataHash = randomClientDataHash()
            let reply = try await send(
                second, Spec.getAssertion,
                getAssertionRequest(clientDataHash: clientDataHash, allowList: [nonDiscoverable.id]))
            #expect(reply.status == Spec.ok)
            let authData = try #require(reply.body?[2]?.bytesValue)
            #expect(
                try verify(
                    signature: try #require(reply.body?[3]?.bytesValue), data: authData + clientDataHash,
                    coseKey: nonDiscoverable.publicKey))
            // The counter continued from the first run (2 registrations before).
            #expect(try ParsedAuthData(authData).signCount == 3)
            let found = try await send(second, Spec.getAssertion, getAssertionRequest())
            #expect(found.body?[1]?.mapValue?["id"] == .byteString(discoverable.id))
            #expect(found.body?[4] == .map(["id": .byteString([5, 5])]))
        }
    }

    @Test func aaguidMismatchIsRefused() async throws {
        try await Self.withDirectory { directory in
            let path = directory + "/key.state"
            _ = try VirtualKey(configuration: .init(aaguid: Array(repeating: 1, count: 16)), stateFile: path)
            #expect(throws: VirtualKeyError.self) {
                try VirtualKey(configuration: .init(aaguid: Array(repeating: 2, count: 16)), stateFile: path)
            }
            let reloaded = try VirtualKey(stateFile: path)
            #expect(reloaded.aaguid == Array(repeating: 1, count: 16))
        }
    }

    @Test(arguments: [
        ("foreign text", Array("{\"hello\": 1}".utf8), "state-file-foreign"),
        ("empty", [], "state-file-foreign"),
        (
            "foreign CBOR map", CBOREncoder.encode(.map(["magic": "something else", "version": 1])),
            "state-file-foreign"
        ),
        (
            "newer version",
            CBOREncoder.encode(.map(["magic": "securitykey virtual authenticator state", "version": 99])),
            "state-file-version"
        ),
        (
            "missing fields",
            CBOREncoder.encode(.map(["magic": "securitykey virtual authenticator state", "version": 1])),
            "state-file-corrupt"
        ),
    ])
    func badFilesAreRefusedAndLeftUntouched(_ name: String, _ content: [UInt8], _ code: String) async throws {
        try await Self.withDirectory { directory in
            let path = directory + "/key.state"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
            do {
                _ = try VirtualKey(stateFile: path)
                Issue.record("A \(name) state file was accepted.")
            } catch let error as VirtualKeyError {
                #expect(error.code.rawValue == code, "\(name): \(error)")
            }
            #expect(FileManager.default.contents(atPath: path) == Data(content))
        }
    }

    @Test func truncatedStateIsRefusedAndLeftUntouched() async throws {
        try await Self.withDirectory { directory in
            let path = directory + "/key.state"
            let good = try await {
                let key = try VirtualKey(stateFile: path)
                _ = try await register(key, rk: true)
                return try #require(FileManager.default.contents(atPath: path))
            }()
            let damaged = good.prefix(good.count - 10)
            #expect(FileManager.default.createFile(atPath: path, contents: damaged))
            let refusal = #expect(throws: VirtualKeyError.self) { try VirtualKey(stateFile: path) }
            #expect(refusal.map { $0.code != .stateFileInUse } == true, "refused as damaged, not as held")
            #expect(FileManager.default.contents(atPath: path) == damaged)
        }
    }

    @Test func aSecondKeyOnTheSameFileIsRefusedWhileTheFirstLives() async throws {
        try await Self.withDirectory { directory in
            let path = directory + "/key.state"
            let before = try await {
                let first = try VirtualKey(stateFile: path)
                _ = try await register(first, rk: true)
                let contents = FileManager.default.contents(atPath: path)
                let refusal = #expect(throws: VirtualKeyError.self) { try VirtualKey(stateFile: path) }
                #expect(refusal?.code == .stateFileInUse)
                #expect(refusal?.message.contains(path) == true)
                // A read-only fixture load takes no lock: it never writes.
                _ = try VirtualKey(stateFile: path, stateFileAccess: .readOnly)
                #expect(await first.discoverableCredentialCount == 1)
                return contents
            }()
            #expect(FileManager.default.contents(atPath: path) == before)
            // Once the first is gone the file opens again. "Gone" is when its last reference
            // is: a task of its own (a keepalive or presence timer of the finished request) may
            // hold it a moment after the call returned, so the reopening waits up to 5 s.
            let deadline = ContinuousClock.now + .seconds(5)
            var reopened: VirtualKey?
            while reopened == nil {
                do {
                    reopened = try VirtualKey(stateFile: path)
                } catch let error as VirtualKeyError where error.code == .stateFileInUse && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(await reopened?.discoverableCredentialCount == 1)
        }
    }

    @Test func missingDirectoryIsAnIOError() throws {
        do {
            _ = try VirtualKey(stateFile: "/nonexistent-\(UUID().uuidString)/key.state")
            Issue.record("A state file in a missing directory was accepted.")
        } catch {
            #expect(error.code == .stateFileIO)
        }
    }
}

@Suite("VirtualKey read-only state fixtures")
struct VirtualKeyReadOnlyStateTests {
    @Test func readOnlyStateIsNeverWritten() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/fixture.state"
            let original = try VirtualKey(stateFile: path)
            let fixtureCredential = try await register(original, userID: [1], rk: true)
            let fixture = try #require(FileManager.default.contents(atPath: path))

            let readOnly = try VirtualKey(stateFile: path, stateFileAccess: .readOnly)
            #expect(readOnly.aaguid == original.aaguid)
            _ = try await register(readOnly, userID: [2], rk: true)
            #expect(await readOnly.discoverableCredentials.count == 2)
            let reply = try await send(
                readOnly, Spec.getAssertion, getAssertionRequest(allowList: [fixtureCredential.id]))
            #expect(reply.status == Spec.ok)
            #expect(FileManager.default.contents(atPath: path) == fixture)

            let again = try VirtualKey(stateFile: path, stateFileAccess: .readOnly)
            #expect(await again.discoverableCredentials.map(\.userID) == [[1]])
        }
    }

    @Test func readOnlyStateMustExist() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/missing.state"
            #expect(throws: VirtualKeyError.self) {
                try VirtualKey(stateFile: path, stateFileAccess: .readOnly)
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}

import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
@testable import VirtualAuthenticator

/// authenticatorLargeBlobs (CTAP 2.1 §6.10.2) and the largeBlobKey extension (§12.3) on the
/// virtual key, with the statuses the spec names for each check.
@Suite struct VirtualKeyLargeBlobTests {
    static let largeBlobs: UInt8 = 0x0C
    /// CTAP 2.1 §6.10.2: the initial serialized large-blob array.
    static let initial: [UInt8] = [
        0x80, 0x76, 0xbe, 0x8b, 0x52, 0x8d, 0x00, 0x75, 0xf7, 0xaa, 0xe9, 0x8d, 0x6f, 0xa5, 0x7a, 0x6d, 0x3c,
    ]

    static func write(_ platform: Platform, _ fragment: [UInt8], offset: UInt32, length: Int?, token: [UInt8]?)
        async throws -> UInt8
    {
        var request: CBORMap = [2: .byteString(fragment), 3: .unsigned(UInt64(offset))]
        if let length { request[4] = .int(length) }
        if let token {
            let message =
                [UInt8](repeating: 0xFF, count: 32) + [0x0C, 0x00] + withUnsafeBytes(of: offset.littleEndian, Array.init)
                + Array(SHA256.hash(data: fragment))
            request[5] = .byteString(platform.pinProtocol.authenticate(key: token, message))
            request[6] = .int(platform.version)
        }
        return try await send(platform.key, largeBlobs, request).status
    }

    @Test func fragmentedWritesAreCheckedAndKept() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("lb-\(UUID()).state").path
        defer {
            try? FileManager.default.removeItem(atPath: state)
            try? FileManager.default.removeItem(atPath: state + ".lock")
        }
        let key = try VirtualKey(configuration: .ctap21(), stateFile: state)
        let info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["largeBlobs"] == true)
        #expect(info[0x0B]?.intValue == 1024)
        #expect(info[2]?.arrayValue?.contains("largeBlobKey") == true)
        // The initial array, read whole.
        let first = try await send(key, Self.largeBlobs, [1: 1136, 3: 0])
        #expect(first.body?[1]?.bytesValue == Self.initial)
        #expect(try await send(key, Self.largeBlobs, [1: 1137, 3: 0]).status == Spec.invalidLength)
        #expect(try await send(key, Self.largeBlobs, [1: 10, 3: 18]).status == Spec.invalidParameter)

        let platform = Platform(key: key, version: 2)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        // 1500 bytes: a CBOR byte string in an array, and its hash; two fragments.
        let cbor = CBOREncoder.encode(.array([.byteString([UInt8](repeating: 7, count: 1470))]))
        let array = cbor + Array(SHA256.hash(data: cbor).prefix(16))
        let head = Array(array.prefix(1136)), tail = Array(array.dropFirst(1136))
        let smallCBOR = CBOREncoder.encode(.array([1]))
        let small = smallCBOR + Array(SHA256.hash(data: smallCBOR).prefix(16))
        #expect(try await Self.write(platform, small, offset: 0, length: small.count, token: nil) == PINSpec.puatRequired)
        let mcOnly = try await platform.token(PINSpec.mc | PINSpec.ga)
        #expect(try await Self.write(platform, small, offset: 0, length: small.count, token: mcOnly) == PINSpec.pinAuthInvalid)
        let lbw = try await platform.token(PINSpec.lbw)
        // Too large for maxSerializedLargeBlobArray (1024 by default): LARGE_BLOB_STORAGE_FULL,
        // checked before the token (§6.10.2 step order).
        #expect(try await Self.write(platform, head, offset: 0, length: array.count, token: lbw) == 0x18)
        let roomy = try VirtualKey(
            configuration: { var c = VirtualKey.Configuration.ctap21(pin: "1234"); c.maxSerializedLargeBlobArray = 2048; return c }())
        let p2 = Platform(key: roomy, version: 2)
        let token = try await p2.token(PINSpec.lbw)
        #expect(try await Self.write(p2, head, offset: 0, length: nil, token: token) == Spec.invalidParameter)
        #expect(try await Self.write(p2, head, offset: 0, length: 16, token: token) == Spec.invalidParameter)
        #expect(try await Self.write(p2, head, offset: 0, length: array.count, token: token) == Spec.ok)
        #expect(try await Self.write(p2, tail, offset: 1135, length: nil, token: token) == 0x04)  // INVALID_SEQ
        #expect(try await Self.write(p2, tail, offset: 1136, length: 5, token: token) == Spec.invalidParameter)
        var damaged = tail
        damaged[damaged.count - 1] ^= 1
        #expect(try await Self.write(p2, damaged, offset: 1136, length: nil, token: token) == 0x3D)  // INTEGRITY_FAILURE
        #expect(await roomy.serializedLargeBlobArray == Self.initial)
        #expect(try await Self.write(p2, head, offset: 0, length: array.count, token: token) == Spec.ok)
        #expect(try await Self.write(p2, tail, offset: 1136, length: nil, token: token) == Spec.ok)
        #expect(await roomy.serializedLargeBlobArray == array)

        // A small array on the state-file key survives a restart.
        #expect(try await Self.write(platform, small, offset: 0, length: small.count, token: lbw) == Spec.ok)
        // Read-only: the first key still holds the file's lock.
        let reloaded = try VirtualKey(configuration: .ctap21(), stateFile: state, stateFileAccess: .readOnly)
        #expect(await reloaded.serializedLargeBlobArray == small)
    }

    @Test func largeBlobKeysAreMadeForDiscoverableCredentialsOnly() async throws {
        let key = try VirtualKey(configuration: .ctap21())
        var request = makeCredentialRequest(rpID: "example.com", options: ["rk": false])
        request[6] = .map(["largeBlobKey": true])
        #expect(try await send(key, Spec.makeCredential, request).status == 0x2C)  // INVALID_OPTION
        request[7] = .map(["rk": true])
        request[6] = .map(["largeBlobKey": false])
        #expect(try await send(key, Spec.makeCredential, request).status == 0x2C)
        request[6] = .map(["largeBlobKey": true])
        let made = try await send(key, Spec.makeCredential, request)
        #expect(made.status == Spec.ok)
        let blobKey = try #require(made.body?[5]?.bytesValue)
        #expect(blobKey.count == 32)
        // getAssertion returns it when asked, and only then.
        let assertion: CBORMap = [1: "example.com", 2: .byteString(randomClientDataHash())]
        #expect(try await send(key, Spec.getAssertion, assertion).body?[7] == nil)
        var asking = assertion
        asking[4] = .map(["largeBlobKey": true])
        #expect(try await send(key, Spec.getAssertion, asking).body?[7]?.bytesValue == blobKey)
        // Credential management lists it (member 0x0B).
        let platform = Platform(key: key, version: 2)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        let cm = try await platform.token(PINSpec.cm)
        let listed = try await platform.credentialManagement(
            CTAP21Spec.enumerateCredentialsBegin, [1: .byteString(sha256("example.com"))], token: cm)
        #expect(listed.body?[0x0B]?.bytesValue == blobKey)
    }
}

import CBOR
import Crypto
import Testing
import Transport
@testable import VirtualAuthenticator

@Suite("VirtualKey getAssertion and getNextAssertion")
struct VirtualKeyGetAssertionTests {
    @Test(arguments: Spec.allAlgorithms)
    func assertionWithAllowListVerifies(_ algorithm: Int) async throws {
        let key = try makeKey(.init(algorithms: COSEAlgorithm.implemented))
        let (id, publicKey) = try await register(key, algorithm: algorithm)
        let clientDataHash = randomClientDataHash()
        let reply = try await send(
            key, Spec.getAssertion,
            getAssertionRequest(clientDataHash: clientDataHash, allowList: [[1, 2, 3], id]))
        #expect(reply.status == Spec.ok)
        let body = try #require(reply.body)
        #expect(body[1] == .map(["id": .byteString(id), "type": "public-key"]))
        let authDataBytes = try #require(body[2]?.bytesValue)
        #expect(authDataBytes.count == 37)
        let authData = try ParsedAuthData(authDataBytes)
        #expect(authData.rpIDHash == sha256("example.org"))
        #expect(authData.userPresent)
        let signature = try #require(body[3]?.bytesValue)
        #expect(try verify(signature: signature, data: authDataBytes + clientDataHash, coseKey: publicKey))
        #expect(body[4] == nil, "A non-discoverable credential has no user.")
        #expect(body[5] == nil)
    }

    @Test func tamperedForgedAndForeignIDsAreRejected() async throws {
        let key = try makeKey()
        let (id, _) = try await register(key)
        // Each byte flipped in turn: version, nonce, ciphertext and tag are all authenticated.
        for index in id.indices {
            var tampered = id
            tampered[index] ^= 0x01
            #expect(
                try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [tampered])).status
                    == Spec.noCredentials)
        }
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [Array(id.dropLast())]))
                .status
                == Spec.noCredentials)
        #expect(
            try await send(
                key, Spec.getAssertion,
                getAssertionRequest(allowList: [[UInt8](repeating: 0, count: id.count)])
            )
            .status == Spec.noCredentials)
        // Another relying party: the rpIdHash is the associated data.
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(rpID: "evil.example", allowList: [id]))
                .status
                == Spec.noCredentials)
        // Another key (another wrapping key) does not know it.
        let other = try makeKey()
        #expect(
            try await send(other, Spec.getAssertion, getAssertionRequest(allowList: [id])).status
                == Spec.noCredentials)
        // The genuine ID still works.
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [id])).status == Spec.ok)
    }

    @Test func noCredentialsWithoutAllowListOrStoredCredential() async throws {
        let key = try makeKey()
        _ = try await register(key)
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.noCredentials)
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [])).status
                == Spec.noCredentials)
    }

    @Test func silentAssertionSkipsPresence() async throws {
        let key = try makeKey(userPresence: .deny)
        await key.setUserPresence(.approve)
        let (id, _) = try await register(key)
        await key.setUserPresence(.never)
        let reply = try await send(
            key, Spec.getAssertion, getAssertionRequest(allowList: [id], options: ["up": false]))
        #expect(reply.status == Spec.ok)
        let authData = try ParsedAuthData(try #require(reply.body?[2]?.bytesValue))
        #expect(!authData.userPresent)
    }

    @Test func discoverableCredentialsAndGetNextAssertion() async throws {
        let key = try makeKey()
        let first = try await register(key, userID: [0xA1], rk: true)
        let second = try await register(key, userID: [0xB2], algorithm: Spec.edDSA, rk: true)
        _ = try await register(key, rpID: "other.example", userID: [0xC3], rk: true)
        let clientDataHash = randomClientDataHash()
        let reply = try await send(
            key, Spec.getAssertion, getAssertionRequest(clientDataHash: clientDataHash))
        #expect(reply.status == Spec.ok)
        let body = try #require(reply.body)
        #expect(body[5] == 2)
        // Most recent first.
        #expect(body[1]?.mapValue?["id"] == .byteString(second.id))
        #expect(body[4] == .map(["id": .byteString([0xB2])]), "No names without user verification.")
        let authData1 = try #require(body[2]?.bytesValue)
        #expect(
            try verify(
                signature: try #require(body[3]?.bytesValue), data: authData1 + clientDataHash,
                coseKey: second.publicKey))

        let next = try await send(key, Spec.getNextAssertion)
        #expect(next.status == Spec.ok)
        let nextBody = try #require(next.body)
        #expect(nextBody[1]?.mapValue?["id"] == .byteString(first.id))
        #expect(nextBody[4] == .map(["id": .byteString([0xA1])]))
        #expect(nextBody[5] == nil)
        let authData2 = try #require(nextBody[2]?.bytesValue)
        #expect(
            try verify(
                signature: try #require(nextBody[3]?.bytesValue), data: authData2 + clientDataHash,
                coseKey: first.publicKey))
        #expect(try ParsedAuthData(authData2).signCount > ParsedAuthData(authData1).signCount)

        // The list is exhausted.
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.notAllowed)
    }

    @Test func getNextAssertionNeedsAPendingListInItsWindow() async throws {
        let key = try makeKey()
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.notAllowed)
        _ = try await register(key, userID: [1], rk: true)
        _ = try await register(key, userID: [2], rk: true)
        _ = try await register(key, userID: [3], rk: true)

        // Another command in between discards the list.
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.ok)
        #expect(try await send(key, Spec.getInfo).status == Spec.ok)
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.notAllowed)

        // The 30 s window, measured from the previous assertion.
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.ok)
        await key.advanceClock(by: .seconds(29))
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.ok)
        await key.advanceClock(by: .seconds(31))
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.notAllowed)

        // A power cycle loses the list too.
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.ok)
        await key.powerCycle()
        #expect(try await send(key, Spec.getNextAssertion).status == Spec.notAllowed)
    }

    @Test func perCredentialCounters() async throws {
        let key = try makeKey(.init(signatureCounter: .perCredential))
        let a = try await register(key, userID: [1])
        let b = try await register(key, userID: [2])
        func count(_ id: [UInt8]) async throws -> UInt32 {
            let reply = try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [id]))
            return try ParsedAuthData(try #require(reply.body?[2]?.bytesValue)).signCount
        }
        #expect(try await count(a.id) == 1)
        #expect(try await count(a.id) == 2)
        #expect(try await count(a.id) == 3)
        #expect(try await count(b.id) == 1)
    }

    @Test func userNamesAfterBuiltInVerification() async throws {
        let key = try makeKey(.init(options: ["rk": true, "up": true, "uv": true]))
        // Built-in UV protects the key, so making a discoverable credential needs it too.
        let made = try await send(
            key, Spec.makeCredential, makeCredentialRequest(userID: [7], options: ["rk": true, "uv": true]))
        #expect(made.status == Spec.ok)
        let reply = try await send(key, Spec.getAssertion, getAssertionRequest(options: ["uv": true]))
        #expect(reply.status == Spec.ok)
        #expect(reply.body?[4] == .map(["id": .byteString([7]), "name": "alice", "displayName": "Alice"]))
        #expect(try ParsedAuthData(try #require(reply.body?[2]?.bytesValue)).userVerified)
    }
}

import CBOR
import Crypto
import Foundation
import Testing
import VirtualAuthenticator
import X509

@Suite("VirtualKey makeCredential and attestation")
struct VirtualKeyMakeCredentialTests {
    @Test(arguments: Spec.allAlgorithms)
    func packedAttestationVerifies(_ algorithm: Int) async throws {
        let aaguid: [UInt8] = [
            0xF8, 0xA0, 0x11, 0xF3, 0x8C, 0x0A, 0x4D, 0x15, 0x80, 0x06, 0x17, 0x11, 0x1F, 0x9E, 0xDC, 0x7D,
        ]
        let key = try makeKey(.init(aaguid: aaguid, algorithms: COSEAlgorithm.implemented))
        let clientDataHash = randomClientDataHash()
        let reply = try await send(
            key, Spec.makeCredential,
            makeCredentialRequest(clientDataHash: clientDataHash, algorithms: [algorithm]))
        #expect(reply.status == Spec.ok)
        let body = try #require(reply.body)
        #expect(body[1] == "packed")
        let authDataBytes = try #require(body[2]?.bytesValue)
        let authData = try ParsedAuthData(authDataBytes)
        #expect(authData.rpIDHash == sha256("example.org"))
        #expect(authData.userPresent)
        #expect(!authData.userVerified)
        #expect(authData.flags & 0x40 != 0)
        #expect(authData.aaguid == aaguid)
        #expect(authData.credentialID?.count ?? 0 <= 64)
        #expect(authData.publicKey?[3] == .int(algorithm))

        let statement = try #require(body[3]?.mapValue)
        #expect(statement["alg"] == .int(Spec.es256))
        let signature = try #require(statement["sig"]?.bytesValue)
        let x5c = try #require(statement["x5c"]?.arrayValue)
        #expect(x5c.count == 1, "x5c holds the attestation certificate only, never the root.")
        let leafDER = try #require(x5c.first?.bytesValue)
        let leaf = try Certificate(derEncoded: leafDER)

        // The signature is over authData || clientDataHash with the certificate's key.
        let publicKey = try #require(P256.Signing.PublicKey(leaf.publicKey))
        let ecdsa = try P256.Signing.ECDSASignature(derRepresentation: signature)
        #expect(publicKey.isValidSignature(ecdsa, for: authDataBytes + clientDataHash))
        #expect(!publicKey.isValidSignature(ecdsa, for: authDataBytes + randomClientDataHash()))

        // WebAuthn §8.2.1 certificate requirements.
        #expect(leaf.version == .v3)
        let attributes = leaf.subject.flatMap { Array($0) }.map(\.description)
        #expect(attributes.contains { $0.hasPrefix("C=") && $0.count == 4 }, "Subject-C is an ISO 3166 code.")
        #expect(attributes.contains { $0.hasPrefix("O=") && $0.count > 2 })
        #expect(attributes.contains("OU=Authenticator Attestation"))
        #expect(attributes.contains { $0.hasPrefix("CN=") && $0.count > 3 })
        // X.520 upper bounds (ub-common-name, ub-organization-name, ...): 64 characters.
        #expect(
            attributes.allSatisfy { ($0.split(separator: "=", maxSplits: 1).last?.count ?? 0) <= 64 },
            "\(attributes)")
        let basicConstraints = try #require(try leaf.extensions.basicConstraints)
        #expect(basicConstraints == .notCertificateAuthority)
        let aaguidExtension = try #require(
            leaf.extensions.first { $0.oid == [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4] })
        #expect(!aaguidExtension.critical)
        // An OCTET STRING (tag 0x04, length 16) holding the AAGUID.
        #expect(Array(aaguidExtension.value) == [0x04, 0x10] + aaguid)

        // The leaf is issued by the exposed root, which is a CA and not in x5c.
        let root = try Certificate(derEncoded: key.attestationRootCertificateDER)
        #expect(root.subject == leaf.issuer)
        #expect(root.publicKey.isValidSignature(leaf.signature, for: leaf))
        #expect(try root.extensions.basicConstraints != .notCertificateAuthority)
        #expect(leafDER != key.attestationRootCertificateDER)
        let pem = try Certificate(pemEncoded: key.attestationRootCertificatePEM)
        #expect(pem == root)
    }

    @Test(arguments: Spec.allAlgorithms)
    func selfAttestationIsSignedByTheCredentialKey(_ algorithm: Int) async throws {
        let key = try makeKey(.init(algorithms: COSEAlgorithm.implemented, attestation: .selfAttestation))
        let clientDataHash = randomClientDataHash()
        let reply = try await send(
            key, Spec.makeCredential,
            makeCredentialRequest(clientDataHash: clientDataHash, algorithms: [algorithm]))
        #expect(reply.status == Spec.ok)
        let body = try #require(reply.body)
        #expect(body[1] == "packed")
        let authDataBytes = try #require(body[2]?.bytesValue)
        let statement = try #require(body[3]?.mapValue)
        #expect(statement["alg"] == .int(algorithm))
        #expect(statement["x5c"] == nil)
        let coseKey = try #require(try ParsedAuthData(authDataBytes).publicKey)
        let signature = try #require(statement["sig"]?.bytesValue)
        #expect(try verify(signature: signature, data: authDataBytes + clientDataHash, coseKey: coseKey))
    }

    @Test func noneAttestation() async throws {
        let key = try makeKey(.init(attestation: .none))
        let reply = try await send(key, Spec.makeCredential, makeCredentialRequest())
        #expect(reply.status == Spec.ok)
        #expect(reply.body?[1] == "none")
        #expect(reply.body?[3] == .map([:]))
    }

    @Test func excludedCredentialNeedsPresenceThenFails() async throws {
        let key = try makeKey()
        let (id, _) = try await register(key)
        let request = makeCredentialRequest(excludeList: [[9, 9, 9], id])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.credentialExcluded)
        // Presence is collected before the answer: a denying user sees "denied", not "excluded".
        await key.setUserPresence(.deny)
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.operationDenied)
        await key.setUserPresence(.approve)
        // The same ID excludes nothing for another relying party.
        #expect(
            try await send(
                key, Spec.makeCredential, makeCredentialRequest(rpID: "other.example", excludeList: [id])
            )
            .status == Spec.ok)
    }

    @Test func discoverableCredentialsReplacePerUserAndFill() async throws {
        let key = try makeKey(.init(maxDiscoverableCredentials: 2))
        _ = try await register(key, userID: [1], rk: true)
        _ = try await register(key, userID: [1], rk: true)
        #expect(await key.discoverableCredentialCount == 1)
        _ = try await register(key, userID: [2], rk: true)
        #expect(await key.discoverableCredentialCount == 2)
        let full = try await send(
            key, Spec.makeCredential, makeCredentialRequest(userID: [3], options: ["rk": true]))
        #expect(full.status == Spec.keyStoreFull)
        // Replacing an existing user still works when full.
        let replaced = try await register(key, userID: [2], algorithm: Spec.edDSA, rk: true)
        let stored = await key.discoverableCredentials
        #expect(stored.map(\.userID) == [[1], [2]])
        #expect(stored.last?.id == replaced.id)
        #expect(stored.last?.algorithm == .edDSA)
        #expect(stored.allSatisfy { $0.rpID == "example.org" && $0.userName == "alice" })
        let reply = try await send(key, Spec.getAssertion, getAssertionRequest())
        #expect(reply.body?[5] == 2)
    }

    @Test func globalCounterIncreases() async throws {
        let key = try makeKey()
        var last: UInt32 = 0
        for _ in 0..<3 {
            let reply = try await send(key, Spec.makeCredential, makeCredentialRequest())
            let count = try ParsedAuthData(try #require(reply.body?[2]?.bytesValue)).signCount
            #expect(count > last)
            last = count
        }
    }
}

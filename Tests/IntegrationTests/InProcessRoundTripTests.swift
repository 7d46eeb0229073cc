import CBOR
import Foundation
import CTAP2
import Crypto
import Testing
import Transport
import VirtualAuthenticator
import WebAuthnVerification
import X509

/// The host layer (CTAP2) against the virtual authenticator through the connection seam:
/// two independent implementations of CTAP 2.1 that must agree.
struct InProcessRoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var algorithm: CTAP2.COSEAlgorithm
        var discoverable: Bool
        var testDescription: String { "\(algorithm) \(discoverable ? "discoverable" : "non-discoverable")" }
    }

    static let cases = [CTAP2.COSEAlgorithm.es256, .edDSA].flatMap { alg in
        [true, false].map { Case(algorithm: alg, discoverable: $0) }
    }

    private func hash(_ text: String) -> [UInt8] { Array(SHA256.hash(data: Array(text.utf8))) }

    @Test(arguments: cases)
    func registerAndSignIn(_ c: Case) async throws {
        let key = try VirtualKey()
        let session = CTAP2Session(connection: InProcessConnection(handler: key))
        let info = try await session.getInfo()
        #expect(info.versions.contains(.fido2_0))
        #expect(info.aaguid.bytes == key.aaguid)

        let userID: [UInt8] = Array("user-\(c.algorithm.rawValue)".utf8)
        let registrationHash = hash("registration challenge")
        let registration = try await session.makeCredential(
            MakeCredentialRequest(
                clientDataHash: registrationHash, rp: RelyingPartyEntity(id: "example.org", name: "Example"),
                user: UserEntity(id: userID, name: "anne", displayName: "Anne"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: c.algorithm)],
                options: CommandOptions(residentKey: c.discoverable)))

        // The attestation statement verifies, and its certificate chains to the key's root.
        let attestation = registration.attestationObject
        let verdict = try attestation.verify(clientDataHash: registrationHash)
        let leaf = try #require(verdict.trustPath.first)
        let root = try Certificate(derEncoded: key.attestationRootCertificateDER)
        #expect(leaf.issuer == root.subject)
        #expect(throws: WebAuthnVerificationError.self) { try attestation.verify(clientDataHash: hash("another challenge")) }

        let authData = registration.authData
        #expect(authData.rpIDHash == hash("example.org"))
        #expect(authData.flags.contains(.userPresent))
        let credential = try #require(authData.attestedCredentialData)
        #expect(credential.credentialPublicKey.algorithm == c.algorithm)

        let assertionHash = hash("assertion challenge")
        let allowList = c.discoverable ? nil : [PublicKeyCredentialDescriptor(id: credential.credentialID)]
        let assertion = try await session.getAssertion(
            GetAssertionRequest(rpID: "example.org", clientDataHash: assertionHash, allowList: allowList))
        try assertion.verify(clientDataHash: assertionHash, publicKey: credential.credentialPublicKey)
        #expect(throws: WebAuthnVerificationError.self) {
            try assertion.verify(clientDataHash: registrationHash, publicKey: credential.credentialPublicKey)
        }
        #expect(assertion.authData.signCount > authData.signCount)
        if c.discoverable {
            #expect(assertion.user?.id == userID)
            #expect(assertion.credential?.id == credential.credentialID)
        }

        // Another RP sees nothing.
        let error = await #expect(throws: CTAP2Error.self) {
            _ = try await session.getAssertion(
                GetAssertionRequest(
                    rpID: "other.example", clientDataHash: assertionHash, allowList: allowList))
        }
        #expect(error?.status == .noCredentials)
    }

    @Test func threeAccountsComeBackThroughGetNextAssertion() async throws {
        let key = try VirtualKey()
        let session = CTAP2Session(connection: InProcessConnection(handler: key))
        var publicKeys: [[UInt8]: COSEKey] = [:]
        for name in ["anne", "bob", "carol"] {
            let response = try await session.makeCredential(
                MakeCredentialRequest(
                    clientDataHash: hash(name), rp: RelyingPartyEntity(id: "example.org"),
                    user: UserEntity(id: Array(name.utf8), name: name),
                    pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)],
                    options: CommandOptions(residentKey: true)))
            let credential = try #require(response.authData.attestedCredentialData)
            publicKeys[Array(name.utf8)] = credential.credentialPublicKey
        }
        let challenge = hash("sign in")
        let first = try await session.getAssertion(
            GetAssertionRequest(rpID: "example.org", clientDataHash: challenge))
        #expect(first.numberOfCredentials == 3)
        var users = [first]
        for _ in 1..<3 { users.append(try await session.getNextAssertion()) }
        for assertion in users {
            let userID = try #require(assertion.user?.id)
            try assertion.verify(clientDataHash: challenge, publicKey: try #require(publicKeys[userID]))
        }
        #expect(Set(users.compactMap { $0.user?.id }) == Set(publicKeys.keys))
        await #expect(throws: CTAP2Error.self) { _ = try await session.getNextAssertion() }
    }

    @Test func excludedCredentialIsRefusedAfterPresence() async throws {
        let key = try VirtualKey()
        let session = CTAP2Session(connection: InProcessConnection(handler: key))
        let request = MakeCredentialRequest(
            clientDataHash: hash("x"), rp: RelyingPartyEntity(id: "example.org"),
            user: UserEntity(id: [1, 2, 3], name: "anne"),
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
        let first = try await session.makeCredential(request)
        var again = request
        again.excludeList = [
            PublicKeyCredentialDescriptor(
                id: try #require(first.authData.attestedCredentialData).credentialID)
        ]
        let error = await #expect(throws: CTAP2Error.self) { _ = try await session.makeCredential(again) }
        #expect(error?.status == .credentialExcluded)
    }

    @Test func delayedPresenceReportsKeepalives() async throws {
        let key = try VirtualKey(userPresence: .approveAfter(.milliseconds(400)))
        let session = CTAP2Session(connection: InProcessConnection(handler: key))
        let statuses = Statuses()
        _ = try await session.makeCredential(
            MakeCredentialRequest(
                clientDataHash: hash("x"), rp: RelyingPartyEntity(id: "example.org"),
                user: UserEntity(id: [1], name: "anne"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)]),
            keepalive: { statuses.append($0) })
        #expect(statuses.values.contains(.userPresenceNeeded))
    }

    @Test func deniedPresenceIsOperationDenied() async throws {
        let key = try VirtualKey(userPresence: .deny)
        let session = CTAP2Session(connection: InProcessConnection(handler: key))
        let error = await #expect(throws: CTAP2Error.self) {
            _ = try await session.makeCredential(
                MakeCredentialRequest(
                    clientDataHash: self.hash("x"), rp: RelyingPartyEntity(id: "example.org"),
                    user: UserEntity(id: [1], name: "anne"),
                    pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)]))
        }
        #expect(error?.status == .operationDenied)
    }
}

/// Collects keepalive statuses from any thread.
final class Statuses: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [KeepaliveStatus] = []
    func append(_ status: KeepaliveStatus) { lock.withLock { storage.append(status) } }
    var values: [KeepaliveStatus] { lock.withLock { storage } }
}

import CTAP2
import Crypto
import Foundation
import Testing
import X509

@testable import WebAuthnVerification

/// What a relying party holding only a response applies to it (`securitykey verify`'s checks
/// as library calls), over the W3C WebAuthn Level 3 test vectors (RP ID example.org, origin
/// https://example.org, the challenges they state) and FIDO MDS3 BLOB no 122.
@Suite struct ResponseCheckTests {
    static let packed = "sctn-test-vectors-packed-es256"

    /// The vector's credential key as a PEM SubjectPublicKeyInfo, the form `--public-key` reads.
    static func pemPublicKey(_ c: CeremonyTests.Ceremony) throws -> Certificate.PublicKey {
        let cose = try #require(c.registration.attestationObject.authData.attestedCredentialData?.credentialPublicKey)
        return try Certificate.PublicKey(pemEncoded: try cose.publicKey().pemRepresentation)
    }

    /// With clientDataJSON the expected challenge and origin are checked; with only its hash
    /// they are left out, and the same expectations do not fail the assertion.
    @Test func policyFollowsTheClientData() throws {
        let c = try CeremonyTests.ceremony(Self.packed)
        let key = try #require(c.registration.attestationObject.authData.attestedCredentialData?.credentialPublicKey)
        let record = CredentialRecord(id: c.credentialID, publicKey: .cose(key), signCount: 0)
        func verify(_ response: AssertionResponse, challenge: [UInt8]) throws {
            _ = try AssertionVerifier(
                policy: RelyingPartyPolicy(
                    relyingPartyID: CeremonyTests.rpID, origin: CeremonyTests.origin, challenge: challenge,
                    for: response.clientData)
            ).verify(response, credential: record)
        }
        try verify(c.assertion, challenge: c.assertionChallenge)
        let error = #expect(throws: WebAuthnVerificationError.self) {
            try verify(c.assertion, challenge: flipped(c.assertionChallenge))
        }
        #expect(error?.code == .challengeMismatch)
        var hashed = c.assertion
        hashed.clientData = .hash(Array(SHA256.hash(data: c.assertionClientData.bytes)))
        try verify(hashed, challenge: flipped(c.assertionChallenge))
        let policy = RelyingPartyPolicy(
            relyingPartyID: "example.org", origin: "https://example.org", challenge: [1], for: hashed.clientData)
        #expect(policy.origins == nil && policy.challenge == nil && policy.relyingPartyID == "example.org")
        #expect(policy.crossOrigin == .unchecked)
    }

    /// A bare public key (PEM) verifies the vector's assertion with its kind's algorithm, and
    /// keeps the ID and counter it is given.
    @Test func recordFromAPublicKey() throws {
        let c = try CeremonyTests.ceremony(Self.packed)
        let record = try #require(
            CredentialRecord(publicKey: try Self.pemPublicKey(c), id: c.credentialID, signCount: 0))
        #expect(record.id == c.credentialID && record.signCount == 0)
        guard case .key(_, let algorithm) = record.publicKey else {
            Issue.record("not a bare key")
            return
        }
        #expect(algorithm.rawValue == -7)  // ES256, IANA COSE Algorithms
        let verified = try AssertionVerifier(
            policy: CeremonyTests.policy(c.assertionChallenge, c.assertionClientData)
        ).verify(c.assertion, credential: record)
        #expect(verified.signCount == c.assertionAuthData.signCount)
    }

    /// Metadata first, then anchors, then no trust at all; each with the validation time and
    /// the revocation rule asked for.
    @Test func trustPolicyChoice() async throws {
        let time = Date(timeIntervalSince1970: 1_734_307_200)  // 2024-12-16T00:00:00Z
        #expect(RegistrationVerifier.trustPolicy(metadata: nil, anchors: nil) is UnanchoredAttestationTrust)
        let anchors = AttestationTrustAnchors([])
        let path = try #require(
            RegistrationVerifier.trustPolicy(
                metadata: nil, anchors: anchors, validationTime: time, requiresRevocation: true)
                as? CertificatePathAttestationTrust)
        #expect(path.validationTime == time && path.requiresRevocation && path.revocation != nil)
        let payload = try await MDSLookupTests.payload122()
        let metadata = try #require(
            RegistrationVerifier.trustPolicy(metadata: payload, anchors: anchors, validationTime: time)
                as? MetadataAttestationTrust)
        #expect(metadata.metadata.no == 122 && metadata.verifyTime == time && !metadata.requiresRevocation)
    }

    /// The sentence for a `none` attestation names only the format and the type; a packed
    /// one names the certificate that signed it.
    @Test func registrationSummary() async throws {
        let none = try CeremonyTests.ceremony("sctn-test-vectors-none-es256")
        let verifiedNone = try await RegistrationVerifier(
            policy: CeremonyTests.policy(none.registrationChallenge, none.registrationClientData)
        ).verify(none.registration)
        #expect(verifiedNone.summary(model: nil) == "Registration: none attestation (none) verifies.")
        let c = try CeremonyTests.ceremony(Self.packed)
        let verified = try await RegistrationVerifier(
            policy: CeremonyTests.policy(c.registrationChallenge, c.registrationClientData)
        ).verify(c.registration)
        let leaf = try #require(verified.attestation.trustPath.first)
        #expect(
            verified.summary(model: nil)
                == "Registration: packed attestation (\(verified.attestation.type)) verifies; signed by \(leaf.nameForMessages).")
    }
}

import _SecurityKeyInternals
import CTAP2
import Crypto
import Foundation
import Testing
import X509

@testable import WebAuthnVerification

/// Whole registration and authentication ceremonies (WebAuthn §7.1, §7.2) over the W3C
/// WebAuthn Level 3 test vectors: every vector was made for RP ID example.org at origin
/// https://example.org, with the challenge, client data and flags the vector states.
@Suite struct CeremonyTests {
    static let rpID = "example.org"
    static let origin = "https://example.org"
    static let verifiable: Set<String> = [
        "none", "packed", "fido-u2f", "tpm", "android-key", "android-safetynet", "apple",
    ]

    /// The W3C groups whose attestation statements this module verifies.
    static var verifiableGroups: [String] {
        Vectors.w3cGroups.filter { group in
            guard let bytes = Vectors.w3c(group, "registration/attestationObject")?.bytes,
                let object = try? AttestationObject(cbor: bytes)
            else { return false }
            return verifiable.contains(object.format.rawValue)
        }
    }

    struct Ceremony {
        var registration: RegistrationResponse
        var registrationChallenge: [UInt8]
        var registrationAuthData: Vector
        var registrationClientData: Vector
        var assertion: AssertionResponse
        var assertionChallenge: [UInt8]
        var assertionAuthData: Vector
        var assertionClientData: Vector
        var credentialID: [UInt8]
        var aaguid: [UInt8]
    }

    static func ceremony(_ group: String) throws -> Ceremony {
        func vector(_ name: String) throws -> Vector { try #require(Vectors.w3c(group, name)) }
        let objectVector = try vector("registration/attestationObject")
        let object = try AttestationObject(cbor: objectVector.bytes)
        let authDataVector = try vector("authentication/authenticatorData")
        return Ceremony(
            registration: RegistrationResponse(
                id: nil, clientData: .json(try vector("registration/clientDataJSON").bytes),
                attestationObject: object),
            registrationChallenge: try vector("registration/challenge").bytes,
            registrationAuthData: objectVector,
            registrationClientData: try vector("registration/clientDataJSON"),
            assertion: AssertionResponse(
                id: nil, clientData: .json(try vector("authentication/clientDataJSON").bytes),
                authenticatorData: try AuthenticatorData(bytes: authDataVector.bytes),
                signature: try vector("authentication/signature").bytes),
            assertionChallenge: try vector("authentication/challenge").bytes,
            assertionAuthData: authDataVector,
            assertionClientData: try vector("authentication/clientDataJSON"),
            credentialID: try vector("registration/credential_id").bytes,
            aaguid: try vector("registration/aaguid").bytes)
    }

    /// The policy the vectors were made for, with the cross-origin iframe they state allowed.
    static func policy(_ challenge: [UInt8], _ clientData: Vector) -> RelyingPartyPolicy {
        let crossOrigin: CrossOriginPolicy =
            clientData.crossOrigin == true || clientData.topOrigin != nil
            ? .allowed(topOrigins: clientData.topOrigin.map { [$0] }) : .sameOriginOnly
        return RelyingPartyPolicy(
            relyingPartyID: rpID, origins: [origin], challenge: challenge, crossOrigin: crossOrigin)
    }

    static func registrationError(
        _ c: Ceremony, _ edit: (inout RelyingPartyPolicy) -> Void
    ) async -> WebAuthnVerificationError? {
        var policy = policy(c.registrationChallenge, c.registrationClientData)
        edit(&policy)
        do {
            _ = try await RegistrationVerifier(policy: policy).verify(c.registration)
            return nil
        } catch {
            return error
        }
    }

    static func assertionError(
        _ c: Ceremony, _ response: AssertionResponse? = nil, signCount: UInt32 = 0,
        _ edit: (inout RelyingPartyPolicy) -> Void = { _ in }
    ) throws -> WebAuthnVerificationError? {
        var policy = policy(c.assertionChallenge, c.assertionClientData)
        edit(&policy)
        let key = try #require(c.registration.attestationObject.authData.attestedCredentialData)
        let record = CredentialRecord(
            id: c.credentialID, publicKey: .cose(key.credentialPublicKey), signCount: signCount)
        do {
            _ = try AssertionVerifier(policy: policy).verify(response ?? c.assertion, credential: record)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Registration (§7.1)

    @Test(arguments: Vectors.w3cGroups)
    func registrationVerifies(_ group: String) async throws {
        let c = try Self.ceremony(group)
        let verifier = RegistrationVerifier(
            policy: Self.policy(c.registrationChallenge, c.registrationClientData))
        guard Self.verifiable.contains(c.registration.attestationObject.format.rawValue) else {
            let error = await #expect(throws: WebAuthnVerificationError.self) {
                try await verifier.verify(c.registration)
            }
            #expect(error?.code == .unsupportedAttestationFormat)
            return
        }
        let verified = try await verifier.verify(c.registration)
        #expect(verified.credentialID == c.credentialID)
        #expect(verified.aaguid.bytes == c.aaguid)
        #expect(verified.signCount == c.registrationAuthData.signCount)
        #expect(verified.flags.contains(.userPresent) == c.registrationAuthData.userPresent)
        #expect(verified.flags.contains(.userVerified) == c.registrationAuthData.userVerified)
        #expect(verified.attestationFormat == c.registration.attestationObject.format)
        #expect(verified.attestation.trustAnchor == nil)
        let x5c = c.registration.attestationObject.attestationStatement["x5c"]?.arrayValue?.count ?? 0
        #expect(verified.attestation.trustPath.count == x5c)
    }

    @Test(arguments: verifiableGroups)
    func registrationClientDataChecks(_ group: String) async throws {
        let c = try Self.ceremony(group)
        #expect(
            await Self.registrationError(c) { $0.challenge = flipped(c.registrationChallenge) }?.code
                == .challengeMismatch)
        #expect(
            await Self.registrationError(c) { $0.origins = ["https://example.com"] }?.code == .originMismatch)
        #expect(
            await Self.registrationError(c) { $0.relyingPartyID = "example.com" }?.code == .rpIDHashMismatch)
        // An assertion's client data is not a registration's (§7.1 step 7).
        var swapped = c.registration
        swapped.clientData = .json(c.assertionClientData.bytes)
        let wrongType = await #expect(throws: WebAuthnVerificationError.self) {
            try await RegistrationVerifier(
                policy: RelyingPartyPolicy(relyingPartyID: Self.rpID, crossOrigin: .unchecked)
            )
            .verify(swapped)
        }
        #expect(wrongType?.code == .clientDataTypeMismatch)
        // The credential ID the client reports must be the attested one, padded or not.
        var named = c.registration
        named.id = Base64URL.encode(c.credentialID) + "="
        _ = try await RegistrationVerifier(
            policy: Self.policy(c.registrationChallenge, c.registrationClientData)
        )
        .verify(named)
        named.id = Base64URL.encode(flipped(c.credentialID))
        let wrongID = await #expect(throws: WebAuthnVerificationError.self) {
            try await RegistrationVerifier(
                policy: Self.policy(c.registrationChallenge, c.registrationClientData)
            )
            .verify(named)
        }
        #expect(wrongID?.code == .credentialIDMismatch)
    }

    @Test(arguments: verifiableGroups)
    func registrationUserVerificationRequirement(_ group: String) async throws {
        let c = try Self.ceremony(group)
        let error = await Self.registrationError(c) { $0.requiresUserVerification = true }
        #expect(
            (error == nil) == (c.registrationAuthData.userVerified == true), "\(String(describing: error))")
        if let error { #expect(error.code == .userVerificationMissing) }
    }

    @Test(arguments: verifiableGroups)
    func registrationAllowedAlgorithms(_ group: String) async throws {
        let c = try Self.ceremony(group)
        let algorithm = try #require(
            c.registration.attestationObject.authData.attestedCredentialData?.credentialPublicKey.algorithm)
        #expect(await Self.registrationError(c) { $0.allowedAlgorithms = [algorithm] } == nil)
        let others = Set([COSEAlgorithm.es256, .rs256, .edDSA].filter { $0 != algorithm })
        #expect(
            await Self.registrationError(c) { $0.allowedAlgorithms = others }?.code == .algorithmNotAllowed)
    }

    @Test func crossOriginVectors() async throws {
        for group in ["sctn-test-vectors-none-es256-crossOrigin", "sctn-test-vectors-none-es256-topOrigin"] {
            let c = try Self.ceremony(group)
            #expect(c.registrationClientData.crossOrigin == true)
            #expect(
                await Self.registrationError(c) { $0.crossOrigin = .sameOriginOnly }?.code
                    == .crossOriginNotAllowed)
            #expect(await Self.registrationError(c) { $0.crossOrigin = .allowed(topOrigins: nil) } == nil)
            #expect(await Self.registrationError(c) { $0.crossOrigin = .unchecked } == nil)
            #expect(
                try Self.assertionError(c) { $0.crossOrigin = .sameOriginOnly }?.code
                    == .crossOriginNotAllowed)
        }
        let top = try Self.ceremony("sctn-test-vectors-none-es256-topOrigin")
        let topOrigin = try #require(top.registrationClientData.topOrigin)
        #expect(
            await Self.registrationError(top) { $0.crossOrigin = .allowed(topOrigins: [topOrigin]) } == nil)
        #expect(
            await Self.registrationError(top) {
                $0.crossOrigin = .allowed(topOrigins: ["https://other.example"])
            }?
            .code == .crossOriginNotAllowed)
        // A same-origin ceremony passes every cross-origin policy.
        let same = try Self.ceremony("sctn-test-vectors-packed-es256")
        #expect(same.registrationClientData.crossOrigin == false)
        #expect(await Self.registrationError(same) { $0.crossOrigin = .sameOriginOnly } == nil)
    }

    @Test func directIssuerTrust() async throws {
        let root = try Certificate(
            derEncoded: try #require(
                Vectors.w3c("sctn-test-vectors-attestation-root-cert", "common/attestation_ca_cert")
            ).bytes)
        let packed = try Self.ceremony("sctn-test-vectors-packed-es256")
        let policy = Self.policy(packed.registrationChallenge, packed.registrationClientData)
        let trusted = try await RegistrationVerifier(
            policy: policy, trustPolicy: CertificatePathAttestationTrust(anchors: AttestationTrustAnchors([root]), validationTime: root.notValidBefore.addingTimeInterval(86_400))
        ).verify(packed.registration)
        #expect(trusted.attestation.trustAnchor == root)
        #expect(trusted.attestation.type == .basic)
        // python-fido2's attestation certificate did not issue the W3C one.
        let other = try Certificate(
            derEncoded: try #require(
                Vectors.python("test_attestation/TestAttestationObject.test_packed_attestation/key:'x5c'")
            ).bytes)
        let untrusted = await #expect(throws: WebAuthnVerificationError.self) {
            try await RegistrationVerifier(
                policy: policy, trustPolicy: CertificatePathAttestationTrust(anchors: AttestationTrustAnchors([other]), validationTime: root.notValidBefore.addingTimeInterval(86_400))
            )
            .verify(packed.registration)
        }
        #expect(untrusted?.code == .untrustedAttestation)
        let none = try Self.ceremony("sctn-test-vectors-none-es256")
        let missing = await #expect(throws: WebAuthnVerificationError.self) {
            try await RegistrationVerifier(
                policy: Self.policy(none.registrationChallenge, none.registrationClientData),
                trustPolicy: CertificatePathAttestationTrust(anchors: AttestationTrustAnchors([root]), validationTime: root.notValidBefore.addingTimeInterval(86_400))
            ).verify(none.registration)
        }
        #expect(missing?.code == .attestationCertificateMissing)
    }

    // MARK: Authentication (§7.2)

    @Test(arguments: Vectors.w3cGroups)
    func assertionVerifies(_ group: String) throws {
        let c = try Self.ceremony(group)
        let key = try #require(
            c.registration.attestationObject.authData.attestedCredentialData?.credentialPublicKey)
        let error = try Self.assertionError(c)
        if key.algorithm == .ed448 {
            // swift-crypto has no Ed448: the key must be refused, not silently accepted.
            #expect(error?.code == .unsupportedAlgorithm)
            return
        }
        #expect(error == nil, "\(String(describing: error))")
        let verified = try AssertionVerifier(policy: Self.policy(c.assertionChallenge, c.assertionClientData))
            .verify(
                c.assertion,
                credential: CredentialRecord(id: c.credentialID, publicKey: .cose(key), signCount: 0))
        #expect(verified.signCount == c.assertionAuthData.signCount)
        #expect(verified.flags.contains(.userVerified) == c.assertionAuthData.userVerified)
        // Every W3C vector counts 0: an authenticator without a counter (§6.1.1).
        #expect(verified.signCountCheck == (c.assertionAuthData.signCount == 0 ? .notSupported : .increased))
    }

    @Test(arguments: verifiableGroups.filter { $0 != "sctn-test-vectors-packed-ed448" })
    func assertionChecks(_ group: String) throws {
        let c = try Self.ceremony(group)
        #expect(
            try Self.assertionError(c) { $0.challenge = flipped(c.assertionChallenge) }?.code
                == .challengeMismatch)
        #expect(try Self.assertionError(c) { $0.origins = ["https://example.com"] }?.code == .originMismatch)
        #expect(try Self.assertionError(c) { $0.relyingPartyID = "example.com" }?.code == .rpIDHashMismatch)
        let uv = try Self.assertionError(c) { $0.requiresUserVerification = true }
        #expect((uv == nil) == (c.assertionAuthData.userVerified == true))
        if let uv { #expect(uv.code == .userVerificationMissing) }
        // The registration's client data is not an assertion's (§7.2 step 11).
        var swapped = c.assertion
        swapped.clientData = .json(c.registrationClientData.bytes)
        #expect(try Self.assertionError(c, swapped) { $0.challenge = nil }?.code == .clientDataTypeMismatch)
        // Clearing UP (flags byte 32) is refused before the signature is looked at (§7.2 step 16).
        var bytes = c.assertionAuthData.bytes
        bytes[32] &= ~0x01
        var noPresence = c.assertion
        noPresence.authenticatorData = try AuthenticatorData(bytes: bytes)
        #expect(try Self.assertionError(c, noPresence)?.code == .userPresenceMissing)
        // Another credential's ID, or a tampered signature.
        var otherID = c.assertion
        otherID.id = Base64URL.encode(flipped(c.credentialID))
        #expect(try Self.assertionError(c, otherID)?.code == .credentialIDMismatch)
        var badSignature = c.assertion
        badSignature.signature = flipped(c.assertion.signature, at: c.assertion.signature.count - 1)
        #expect(try Self.assertionError(c, badSignature)?.code == .verificationFailed)
    }

    @Test(arguments: verifiableGroups.filter { $0 != "sctn-test-vectors-packed-ed448" })
    func signCounterMustGrow(_ group: String) throws {
        let c = try Self.ceremony(group)
        let received = try #require(c.assertionAuthData.signCount)
        // A stored count at or above the received one is the cloning signal (§7.2 step 22).
        let error = try Self.assertionError(c, signCount: received + 1)
        #expect(error?.code == .signCountNotIncreased)
        #expect(try Self.assertionError(c, signCount: received + 1) { $0.signCount = .report } == nil)
        let key = try #require(
            c.registration.attestationObject.authData.attestedCredentialData?.credentialPublicKey)
        var policy = Self.policy(c.assertionChallenge, c.assertionClientData)
        policy.signCount = .report
        let reported = try AssertionVerifier(policy: policy).verify(
            c.assertion, credential: CredentialRecord(id: nil, publicKey: .cose(key), signCount: received + 1)
        )
        #expect(reported.signCountCheck == .didNotIncrease)
    }

    @Test func signCountRules() throws {
        // python-fido2's _AUTH_DATA_GA counts 29.
        let count = try #require(Vectors.python("test_ctap2/module/_AUTH_DATA_GA")?.signCount)
        #expect(AssertionVerifier.signCountCheck(stored: 0, received: count) == .increased)
        #expect(AssertionVerifier.signCountCheck(stored: count, received: count) == .didNotIncrease)
        #expect(AssertionVerifier.signCountCheck(stored: count + 1, received: count) == .didNotIncrease)
        #expect(AssertionVerifier.signCountCheck(stored: 0, received: 0) == .notSupported)
    }

    @Test func clientDataHashOnly() throws {
        let c = try Self.ceremony("sctn-test-vectors-packed-es256")
        var hashed = c.assertion
        hashed.clientData = .hash(Array(SHA256.hash(data: c.assertionClientData.bytes)))
        // With only the hash nothing in the client data can be checked, so a policy that asks is refused.
        #expect(try Self.assertionError(c, hashed)?.code == .malformedClientData)
        #expect(
            try Self.assertionError(c, hashed) {
                $0.challenge = nil; $0.origins = nil
            } == nil)
        hashed.clientData = .hash([1, 2, 3])
        #expect(
            try Self.assertionError(c, hashed) {
                $0.challenge = nil; $0.origins = nil
            }?.code == .invalidClientDataHash)
        var junk = c.assertion
        junk.clientData = .json(Array("[1, 2]".utf8))
        #expect(try Self.assertionError(c, junk)?.code == .malformedClientData)
    }

    @Test func errorsCompareByCode() {
        let a = WebAuthnVerificationError(.challengeMismatch, "one")
        let b = WebAuthnVerificationError(.challengeMismatch, "two")
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a != WebAuthnVerificationError(.originMismatch, "one"))
        #expect(a.code.rawValue == "challenge-mismatch")
    }
}

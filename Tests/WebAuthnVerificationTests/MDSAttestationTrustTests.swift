import CTAP2
import Crypto
import Foundation
import VectorFiles
import Testing
import WebAuthnVerification
import X509

/// Registrations from real YubiKeys (../shared/vectors/third-party/py_webauthn.json, from
/// duo-labs/py_webauthn's tests), judged against the real MDS BLOB 122.
enum YubiKeyVectors {
    static let file = MDSVectors.directory.deletingLastPathComponent().appendingPathComponent(
        "third-party/py_webauthn.json")

    static func hex(_ id: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file.path),
            let list = try JSONSerialization.jsonObject(with: data) as? [[String: Any]],
            let text = list.first(where: { ($0["id"] as? String) == id })?["hex"] as? String,
            let bytes = hexBytes(text)
        else { throw MDSTestError("missing vector \(id)") }
        return bytes
    }

    /// The evidence a verified registration from `test` shows the trust policy.
    static func evidence(_ test: String) throws -> AttestationEvidence {
        let prefix = "py_webauthn/tests/\(test)/test_verify_attestation_from_yubikey_firefox/"
        let object = try AttestationObject(cbor: hex(prefix + "attestationObject"))
        let clientDataHash = Array(SHA256.hash(data: try hex(prefix + "clientDataJSON")))
        let statement = try object.verify(clientDataHash: clientDataHash)
        let aaguid = try #require(object.authData.attestedCredentialData?.aaguid)
        return AttestationEvidence(format: object.format, aaguid: aaguid, statement: statement)
    }

    static let packed = "test_verify_registration_response_packed.py"
    static let u2f = "test_verify_registration_response_fido_u2f.py"
}

@Suite("MDS3 attestation trust")
struct MDSAttestationTrustTests {
    /// Both registrations are from the same key, "Yubico U2F EE Serial 719807075": the packed one
    /// is found by AAGUID, the U2F one (zero AAGUID) by its certificate's key identifier.
    @Test(arguments: [YubiKeyVectors.packed, YubiKeyVectors.u2f])
    func yubiKeyIsNamedAndChainedToItsMDSRoot(test: String) async throws {
        let payload = try await MDSLookupTests.payload122()
        let evidence = try YubiKeyVectors.evidence(test)
        let policy = MetadataAttestationTrust(metadata: payload)
        let found = policy.entry(for: evidence)
        let entry = try #require(found)
        #expect(entry.description == "Security Key by Yubico with NFC")
        let trust = try await policy.evaluate(evidence)
        #expect(trust.type == .basic)
        let anchor = try #require(trust.trustAnchor)
        #expect(anchor.subject.description == "CN=Yubico U2F Root CA Serial 457200631")
        #expect(entry.attestationRoots.contains(anchor))
        if test == YubiKeyVectors.u2f {
            #expect(evidence.aaguid == .zero)
            let leaf = try #require(evidence.statement.trustPath.first)
            #expect(MetadataKeyIdentifier.of(leaf) == "43c0f809b1d75616aa152c3cba57d73465057f21")
        }
    }

    @Test func refusedStatusIsRefused() async throws {
        let payload = try await MDSLookupTests.payload122()
        let evidence = try YubiKeyVectors.evidence(YubiKeyVectors.packed)
        let policy = MetadataAttestationTrust(metadata: payload, refusedStatuses: [.fidoCertifiedL1])
        await expectCode(.authenticatorStatusRefused) { try await policy.evaluate(evidence) }
    }

    @Test func anotherModelsRootsDoNotVouch() async throws {
        var payload = try await MDSLookupTests.payload122()
        let evidence = try YubiKeyVectors.evidence(YubiKeyVectors.packed)
        // Give the YubiKey's entry the HYPR authenticator's roots.
        let hyprAAGUID = try #require(AAGUID(uuidString: "0076631b-d4a0-427f-5773-0ec71c9e0279"))
        let hypr = try #require(payload.entry(aaguid: hyprAAGUID))
        let index = try #require(
            payload.entries.firstIndex { $0.aaguid == "6d44ba9b-f6ec-2e49-b930-0c8fe920cb73" })
        payload.entries[index].metadataStatement?.attestationRootCertificates =
            hypr.metadataStatement?.attestationRootCertificates
        await expectCode(.untrustedAttestation) {
            try await MetadataAttestationTrust(metadata: payload).evaluate(evidence)
        }
    }

    @Test func unlistedModelIsRefused() async throws {
        let fake = try MDSVectors.certificate("test/conformance-mds3-root-FAKE.der")
        let conformance = try await MetadataBLOBVerifier(anchors: [fake]).verify(
            MDSVectors.bytes("test/conformance-mds3-blob-no42-GOOD.jwt"))
        let evidence = try YubiKeyVectors.evidence(YubiKeyVectors.packed)
        await expectCode(.authenticatorNotInMetadata) {
            try await MetadataAttestationTrust(metadata: conformance.payload).evaluate(evidence)
        }
    }

    @Test func worksAsARegistrationVerifiersTrustPolicy() async throws {
        let payload = try await MDSLookupTests.payload122()
        let prefix =
            "py_webauthn/tests/\(YubiKeyVectors.packed)/test_verify_attestation_from_yubikey_firefox/"
        let response = RegistrationResponse(
            id: nil, clientData: .json(try YubiKeyVectors.hex(prefix + "clientDataJSON")),
            attestationObject: try AttestationObject(cbor: YubiKeyVectors.hex(prefix + "attestationObject")))
        let verifier = RegistrationVerifier(
            policy: RelyingPartyPolicy(
                relyingPartyID: "localhost", origins: nil, challenge: nil, crossOrigin: .unchecked),
            trustPolicy: MetadataAttestationTrust(metadata: payload))
        let verified = try await verifier.verify(response)
        #expect(
            verified.attestation.trustAnchor?.subject.description == "CN=Yubico U2F Root CA Serial 457200631")
    }
}

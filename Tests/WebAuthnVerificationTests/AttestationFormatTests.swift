import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import X509

@testable import WebAuthnVerification

/// Every attestation statement format (WebAuthn §8) over real attestation objects from other
/// implementations' test suites (../shared/vectors/third-party), and certificate paths built to
/// the roots the FIDO Metadata Service publishes for those models.
@Suite struct AttestationFormatTests {
    /// Source tests whose attestation object the source itself states is invalid (by the test's
    /// name and assertion), with the code this module refuses it with.
    static let statedInvalid: [String: WebAuthnVerificationError.Code?] = [
        "test_registration_packed_attestaion_fails_with_invalid_fido_aaguid_extension": .verificationFailed,
        "test_touchid_attest_apple_anonymous_fails_with_invalid_nonce_extension": .verificationFailed,
        // CTAP2 refuses these while parsing (nil: not a WebAuthnVerificationError).
        "test_firefox_98_hello_incorrectly_truncates_aaguid": nil,
        "test_solokey_v2_a_sealed_ed25519_invalid_cbor": nil,
        // The SoloKey v2 prototype's COSE key has a text kty, which COSE (RFC 9052 §7) does not allow.
        "test_solokey_v2_a_sealed_attestation": nil,
    ]

    static var valid: [ThirdPartyVector] {
        ThirdPartyVectors.attestationObjects.filter { statedInvalid[$0.function] == nil }
    }
    static var invalid: [ThirdPartyVector] {
        ThirdPartyVectors.attestationObjects.filter { statedInvalid[$0.function] != nil }
    }

    /// The attestation type WebAuthn §8 assigns to each format's statement.
    static func expectedType(_ object: AttestationObject) -> AttestationType {
        switch object.format {
        case .none: .none
        case .packed: object.attestationStatement["x5c"] == nil ? .selfAttestation : .basic
        case .tpm: .attCA
        case .apple: .anonCA
        default: .basic
        }
    }

    static func hash(_ vector: ThirdPartyVector) throws -> [UInt8] {
        Array(SHA256.hash(data: try #require(ThirdPartyVectors.clientData(for: vector)).bytes))
    }

    @Test func vectorsArePresent() {
        #expect(Self.valid.count >= 50)
        let formats = Set(Self.valid.compactMap { try? AttestationObject(cbor: $0.bytes).format.rawValue })
        #expect(formats == ["none", "packed", "fido-u2f", "tpm", "android-key", "android-safetynet", "apple"])
    }

    @Test(arguments: valid)
    func statedValidAttestationVerifies(_ vector: ThirdPartyVector) throws {
        let object = try AttestationObject(cbor: vector.bytes)
        let hash = try Self.hash(vector)
        let result = try object.verify(clientDataHash: hash)
        #expect(result.type == Self.expectedType(object))
        #expect(!result.isEnterprise)
        // The trust path is the statement's x5c as sent (SafetyNet's is in its JWS header).
        if let x5c = object.attestationStatement["x5c"]?.arrayValue {
            #expect(result.trustPath.map { $0.derBytes } == x5c.compactMap(\.bytesValue))
        } else if object.format != .androidSafetyNet {
            #expect(result.trustPath.isEmpty)
        }
        guard object.format != .none else { return }  // none signs nothing a flip could break
        // A flipped client data hash, a flipped authenticator data byte, a flipped signature.
        #expect(throws: WebAuthnVerificationError.self) { try object.verify(clientDataHash: flipped(hash, at: 0)) }
        for index in [0, object.authData.bytes.count - 1] {  // rpIdHash, credential key
            let authData = try? AuthenticatorData(bytes: flipped(object.authData.bytes, at: index))
            guard let authData else { continue }  // a flip that breaks the structure fails anyway
            let copy = AttestationObject(
                format: object.format, authData: authData, attestationStatement: object.attestationStatement)
            #expect(throws: WebAuthnVerificationError.self) { try copy.verify(clientDataHash: hash) }
        }
        for key in ["sig", "response", "certInfo", "pubArea"] {
            guard let bytes = object.attestationStatement[.textString(key)]?.bytesValue else { continue }
            var copy = object
            copy.attestationStatement[.textString(key)] = .byteString(flipped(bytes, at: bytes.count / 2))
            #expect(throws: WebAuthnVerificationError.self, "\(key)") { try copy.verify(clientDataHash: hash) }
        }
    }

    @Test(arguments: invalid)
    func statedInvalidAttestationIsRefused(_ vector: ThirdPartyVector) throws {
        guard let code = Self.statedInvalid[vector.function] ?? nil else {
            #expect(throws: (any Error).self) {
                try AttestationObject(cbor: vector.bytes).verify(clientDataHash: try Self.hash(vector))
            }
            return
        }
        let object = try AttestationObject(cbor: vector.bytes)
        let error = #expect(throws: WebAuthnVerificationError.self) {
            try object.verify(clientDataHash: try Self.hash(vector))
        }
        #expect(error?.code == code)
    }

    // MARK: Certificate paths to the FIDO Metadata Service roots

    /// Vectors whose attestation certificate was issued under a root the FIDO MDS publishes:
    /// Microsoft's TPM root (Windows Hello), Yubico's U2F root, Google's hardware attestation
    /// root (Android Authenticator) and the SafetyNet TLS chain.
    static var mdsAnchored: [ThirdPartyVector] {
        valid.filter { vector in
            guard let object = try? AttestationObject(cbor: vector.bytes),
                let result = try? object.verify(clientDataHash: hash(vector)), let leaf = result.trustPath.first
            else { return false }
            let issuer = leaf.issuer.description
            return object.format == .tpm || object.format == .androidSafetyNet
                || issuer.contains("Yubico U2F Root CA") || vector.function.contains("hardware_authority")
        }
    }

    @Test func mdsAnchoredVectorsCoverTheFormats() {
        #expect(AttestationTestSupport.mdsRoots.count > 100)
        #expect(Self.mdsAnchored.count >= 20)
    }

    @Test(arguments: mdsAnchored)
    func pathLeadsToMetadataRoot(_ vector: ThirdPartyVector) async throws {
        let object = try AttestationObject(cbor: vector.bytes)
        let statement = try object.verify(clientDataHash: Self.hash(vector))
        let evidence = AttestationEvidence(
            format: object.format, aaguid: try #require(object.authData.attestedCredentialData?.aaguid),
            statement: statement)
        let time = AttestationTestSupport.momentInside(statement.trustPath)
        let policy = CertificatePathAttestationTrust(
            anchors: AttestationTrustAnchors(AttestationTestSupport.mdsRoots), validationTime: time)
        let trust = try await policy.evaluate(evidence)
        let anchor = try #require(trust.trustAnchor)
        #expect(AttestationTestSupport.mdsRoots.contains(anchor))
        #expect(trust.certificatePath.first == statement.trustPath.first)
        #expect(trust.certificatePath.last == anchor)
        #expect(trust.type == statement.type)
        if object.format == .tpm {
            #expect(anchor.subject.description.contains("Microsoft TPM Root Certificate Authority 2014"))
        }
        // After the attestation certificate expired, the same path is refused.
        let late = CertificatePathAttestationTrust(
            anchors: policy.anchors, validationTime: statement.trustPath[0].notValidAfter.addingTimeInterval(86_400))
        let expired = await #expect(throws: WebAuthnVerificationError.self) { try await late.evaluate(evidence) }
        #expect(expired?.code == .untrustedAttestation)
        // ... and the refusal says the dates are the problem, naming the certificate.
        #expect(expired?.message.contains("validity period") == true)
        let leaf = statement.trustPath[0]
        let name = leaf.subject.isEmpty ? "serial \(leaf.serialNumber)" : "\(leaf.subject)"
        #expect(expired?.message.contains(name) == true, "\(expired?.message ?? "")")
        // Taking away the anchors of every path found (a chain may reach several roots, as
        // SafetyNet's does through cross-signed Google roots) leaves none within a few rounds.
        var remaining = AttestationTestSupport.mdsRoots
        var refusal: WebAuthnVerificationError?
        for _ in 0..<5 {
            do {
                let found = try await CertificatePathAttestationTrust(
                    anchors: AttestationTrustAnchors(remaining), validationTime: time
                ).evaluate(evidence)
                let keys = found.certificatePath.map(\.publicKey)
                remaining.removeAll { keys.contains($0.publicKey) }
            } catch {
                refusal = error
                break
            }
        }
        #expect(refusal?.code == .untrustedAttestation)
    }

    // MARK: W3C vectors: every format with a certificate chains to the W3C test root

    @Test(arguments: Vectors.w3cGroups)
    func w3cPathLeadsToTestRoot(_ group: String) async throws {
        let root = try Certificate(
            derEncoded: try #require(Vectors.w3c("sctn-test-vectors-attestation-root-cert", "common/attestation_ca_cert"))
                .bytes)
        let object = try AttestationObject(
            cbor: try #require(Vectors.w3c(group, "registration/attestationObject")).bytes)
        let clientData = try #require(Vectors.w3c(group, "registration/clientDataJSON")).bytes
        guard let statement = try? object.verify(clientDataHash: Array(SHA256.hash(data: clientData))),
            !statement.trustPath.isEmpty
        else { return }
        let evidence = AttestationEvidence(
            format: object.format, aaguid: try #require(object.authData.attestedCredentialData?.aaguid),
            statement: statement)
        let trust = try await CertificatePathAttestationTrust(
            anchors: AttestationTrustAnchors([root]), validationTime: root.notValidBefore.addingTimeInterval(86_400)
        ).evaluate(evidence)
        #expect(trust.trustAnchor == root)
        #expect(trust.certificatePath.last == root)
    }

    // MARK: libfido2's Windows Hello TPM registration (regress/cred.c)

    @Test func libfido2TPMES256Verifies() throws {
        let file = "libfido2-wiredata.json"
        let authDataVector = try #require(ThirdPartyVectors.entry(file, "/authdata_tpm_es256"))
        #expect(authDataVector.expectedText["fido_cred_verify"] == "FIDO_OK")
        // libfido2 holds authData as a CBOR byte string and the statement as a CBOR map.
        let authData = try #require(try CBORDecoder(options: .lenient).decode(authDataVector.bytes).bytesValue)
        let statementVector = try #require(ThirdPartyVectors.entry(file, "/attstmt_tpm_es256"))
        let statement = try #require(try CBORDecoder(options: .lenient).decode(statementVector.bytes).mapValue)
        // libfido2's regress test sets cdh as client data, so the hash is its SHA-256.
        let cdh = try #require(ThirdPartyVectors.entry(file, "regress/cred.c/cdh")).bytes
        let hash = Array(SHA256.hash(data: cdh))
        let object = AttestationObject(
            format: .tpm, authData: try AuthenticatorData(bytes: authData), attestationStatement: statement)
        let result = try object.verify(clientDataHash: hash)
        #expect(result.type == .attCA)
        #expect(result.trustPath.first?.derBytes == statementVector.expectedHex["x5c[0]"])
        #expect(object.authData.attestedCredentialData?.aaguid.bytes == authDataVector.expectedHex["aaguid"])
        #expect(throws: WebAuthnVerificationError.self) { try object.verify(clientDataHash: flipped(hash)) }
        // Told by the authenticator (epAtt), the result says enterprise.
        #expect(try object.verify(clientDataHash: hash, enterpriseAttestation: true).isEnterprise)
    }

    @Test func subjectlessCertificateIsNamedBySANAndIssuer() throws {
        // The Windows Hello AIK certificate has an empty subject; openssl x509 -ext
        // subjectAltName shows DirName:/2.23.133.2.1=id:53544D20/2.23.133.2.2=ST33HTPHAHB4/...
        // and the issuer CN = EUS-STM-KEYID-1ADB994AB58BE57A0CC9B900E7851E1A43C08660.
        let vector = try #require(
            ThirdPartyVectors.entry("libfido2-wiredata.json", "/attstmt_tpm_es256")?.expectedHex["x5c[0]"])
        let certificate = try Certificate(derEncoded: vector)
        #expect(certificate.subject.isEmpty)
        let name = certificate.nameForMessages
        #expect(name.contains("ST33HTPHAHB4"), "\(name)")
        #expect(name.contains("id:53544D20"), "\(name)")
        #expect(name.contains("EUS-STM-KEYID-1ADB994AB58BE57A0CC9B900E7851E1A43C08660"), "\(name)")
    }

    // MARK: Hostile input: truncated and garbage structures fail with typed errors

    @Test func truncatedTPMStructuresAreRefused() throws {
        let prefix = "test_attestation/TestAttestationObject.test_tpm_windows_hello_attestation/"
        let certInfo = try #require(Vectors.python(prefix + "key:'certInfo'")).bytes
        let pubArea = try #require(Vectors.python(prefix + "key:'pubArea'")).bytes
        _ = try TPMSAttest(bytes: certInfo)
        _ = try TPMTPublic(bytes: pubArea)
        for length in 0..<certInfo.count {
            #expect(throws: WebAuthnVerificationError.self) { try TPMSAttest(bytes: Array(certInfo.prefix(length))) }
        }
        for length in 0..<pubArea.count {
            #expect(throws: WebAuthnVerificationError.self) { try TPMTPublic(bytes: Array(pubArea.prefix(length))) }
        }
        #expect(throws: WebAuthnVerificationError.self) { try TPMSAttest(bytes: certInfo + [0]) }
        #expect(throws: WebAuthnVerificationError.self) { try TPMTPublic(bytes: pubArea + [0]) }
        // python-fido2's "too short" TPM structure.
        let short = try #require(
            Vectors.python("test_tpm/TestTpmObject.test_parse_too_short_of_a_tpm/data")).bytes
        #expect(throws: WebAuthnVerificationError.self) { try TPMSAttest(bytes: short) }
        #expect(throws: WebAuthnVerificationError.self) { try TPMTPublic(bytes: [UInt8](repeating: 0xFF, count: 64)) }
    }

    @Test func truncatedAndroidAppleAndSafetyNetInputsAreRefused() throws {
        for vector in Self.valid {
            guard let object = try? AttestationObject(cbor: vector.bytes) else { continue }
            switch object.format {
            case .androidKey:
                let leaf = try #require(try AttestationCertificates.parse(object.attestationStatement)?.first)
                let ext = Array(try #require(leaf.extensions[oid: AndroidKeyDescription.extensionOID]).value)
                let description = try AndroidKeyDescription(derEncoded: ext)
                #expect(description.attestationChallenge == (try Self.hash(vector)))
                for length in stride(from: 0, to: ext.count, by: 7) {
                    #expect(throws: WebAuthnVerificationError.self) {
                        try AndroidKeyDescription(derEncoded: Array(ext.prefix(length)))
                    }
                }
            case .apple:
                let leaf = try #require(try AttestationCertificates.parse(object.attestationStatement)?.first)
                let ext = Array(try #require(leaf.extensions[oid: AppleAttestation.nonceExtension]).value)
                for length in 0..<ext.count {
                    #expect(throws: WebAuthnVerificationError.self) {
                        try AppleAttestation.nonceValue(Array(ext.prefix(length)))
                    }
                }
            case .androidSafetyNet:
                let jws = try #require(object.attestationStatement["response"]?.bytesValue)
                for length in stride(from: 0, to: jws.count, by: 97) {
                    #expect(throws: WebAuthnVerificationError.self) {
                        try SafetyNetResponse(jws: Array(jws.prefix(length))).verifySignature()
                    }
                }
                #expect(throws: WebAuthnVerificationError.self) {
                    try SafetyNetResponse(jws: [UInt8](repeating: UInt8(ascii: "."), count: 5))
                }
            default:
                continue
            }
        }
    }

    // MARK: Trust anchor stores

    @Test func anchorsLoadFromBundlesDERAndDirectories() throws {
        let roots = Array(AttestationTestSupport.mdsRoots.prefix(3))
        try #require(roots.count == 3)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("webauthn-anchors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = try roots.map { try $0.serializeAsPEM().pemString }.joined(separator: "\n")
        try Data(bundle.utf8).write(to: directory.appendingPathComponent("bundle.pem"))
        try Data(roots[0].derBytes).write(to: directory.appendingPathComponent("one.der"))
        try Data("not a certificate".utf8).write(to: directory.appendingPathComponent("README.txt"))
        let fromBundle = try AttestationTrustAnchors(contentsOf: directory.appendingPathComponent("bundle.pem").path)
        #expect(fromBundle.certificates == roots)
        let fromDER = try AttestationTrustAnchors(contentsOf: directory.appendingPathComponent("one.der").path)
        #expect(fromDER.certificates == [roots[0]])
        let fromDirectory = try AttestationTrustAnchors(contentsOf: directory.path)
        #expect(fromDirectory.certificates == roots + [roots[0]])
        // Several paths (fleet --trust-root, repeated): their anchors in order.
        let fromPaths = try AttestationTrustAnchors(
            contentsOf: [directory.appendingPathComponent("one.der").path, directory.appendingPathComponent("bundle.pem").path])
        #expect(fromPaths.certificates == [roots[0]] + roots)
        #expect(throws: WebAuthnVerificationError.self) {
            try AttestationTrustAnchors(contentsOf: [directory.appendingPathComponent("one.der").path, directory.appendingPathComponent("README.txt").path])
        }
        let garbage = #expect(throws: WebAuthnVerificationError.self) {
            try AttestationTrustAnchors(contentsOf: directory.appendingPathComponent("README.txt").path)
        }
        #expect(garbage?.code == .invalidTrustAnchor)
        #expect(throws: WebAuthnVerificationError.self) {
            try AttestationTrustAnchors.parse(Array(roots[0].derBytes.prefix(100)))
        }
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    var derBytes: [UInt8] {
        (try? serializeAsPEM().derBytes) ?? []
    }
}

#if canImport(Glibc)
    import Glibc
#endif
import CBOR
import CTAP2
import Crypto
import FoundationEssentials
import WebAuthnVerification
import X509

extension FuzzTarget {
    /// Attestation objects through every statement verifier (packed, tpm, android-key,
    /// android-safetynet, fido-u2f, apple, none). The input is a 32-byte clientDataHash and then
    /// the attestation object, so real registrations get past their signature checks. What
    /// verifies reports a type that fits its format, with a trust path exactly when the type
    /// needs one, and verifies the same way twice.
    static let attestationObject = FuzzTarget(
        "attestation-object", "attestation objects and statement verifiers"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard bytes.count > 32, let object = try? AttestationObject(cbor: Array(bytes[32...])) else { return }
        try expect(
            (try? AttestationObject(cbor: object.cborEncoded)) == object,
            "an attestation object does not round trip")
        try expect(object.format.description == object.format.rawValue, "a format described by another name")
        try expect(
            AttestationObject(
                format: object.format, authData: object.authData,
                attestationStatement: object.attestationStatement)
                == object,
            "an attestation object differs from one built from its parts")
        let hash = Array(bytes[..<32])
        let result = try? object.verify(clientDataHash: hash)
        if let result {
            try expect(
                (result.type == .none) == (object.format == .none), "a none type for a format other than none"
            )
            try expect(!result.type.description.isEmpty, "an attestation type without a name")
            try expect(
                result.trustPath.isEmpty == (result.type == .none || result.type == .selfAttestation),
                "a trust path that does not fit the attestation type \(result.type)")
            try expect(
                (try? object.verify(clientDataHash: hash)) == result,
                "an attestation verifies differently twice")
            // What the authenticator said of enterprise attestation (epAtt) is reported, except
            // for self attestation and none, which identify no authenticator.
            let enterprise = try? object.verify(clientDataHash: hash, enterpriseAttestation: true)
            try expect(
                enterprise?.isEnterprise == (result.type != .selfAttestation && result.type != .none)
                    && !result.isEnterprise,
                "epAtt reported wrongly for \(result.type) attestation")
            try expect(
                (try? object.verify(clientDataHash: Array(hash.dropLast()))) == nil,
                "an attestation verified against a 31-byte client data hash")
        }
        // The same statement signed again by a key the harness holds (AttestationResigning), so
        // the checks after the signature run on fuzzed certificates and key descriptions.
        guard let resigned = AttestationResigning.resign(object, clientDataHash: hash) else { return }
        let again = try? resigned.verify(clientDataHash: hash)
        if let result, AttestationResigning.isUnedited(object), AttestationResigning.keepsDigest(object) {
            try expect(again?.type == result.type, "a verified statement fails when signed by another key")
        }
        if let again {
            let expected: AttestationType =
                switch resigned.format {
                case .tpm: .attCA
                case .apple: .anonCA
                default: .basic
                }
            try expect(
                again.type == expected, "a re-signed \(resigned.format) statement verified as \(again.type)")
            let leaf = resigned.attestationStatement["x5c"]?.arrayValue?.first?.bytesValue
                .flatMap { try? Certificate(derEncoded: $0) }
            try expect(
                leaf != nil && again.trustPath.first == leaf,
                "a re-signed statement verified without its certificate first in the trust path")
        }
    }

    /// TPM 2.0 structures of the tpm format (TPMS_ATTEST certInfo, TPMT_PUBLIC pubArea):
    /// bounded parsing, the same result twice.
    static let tpm = FuzzTarget("tpm", "TPMS_ATTEST and TPMT_PUBLIC parsing") {
        bytes throws(FuzzPropertyViolation) in
        if let attest = try? TPMSAttest(bytes: bytes) {
            try expect((try? TPMSAttest(bytes: bytes)) == attest, "TPMS_ATTEST parses differently twice")
        }
        if let area = try? TPMTPublic(bytes: bytes) {
            try expect((try? TPMTPublic(bytes: bytes)) == area, "TPMT_PUBLIC parses differently twice")
        }
    }

    /// The Android key attestation extension (KeyDescription, DER).
    static let androidKeyDescription = FuzzTarget("android-key", "Android key description (DER)") {
        bytes throws(FuzzPropertyViolation) in
        guard let description = try? AndroidKeyDescription(derEncoded: bytes) else { return }
        try expect(
            (try? AndroidKeyDescription(derEncoded: bytes)) == description,
            "a key description parses differently twice")
    }

    /// The android-safetynet JWS (compact serialization, x5c, payload JSON).
    ///
    /// The input is also read as clientDataHash (32) ‖ authData length (2, big-endian) ‖
    /// authData ‖ JWS and verified as an android-safetynet statement (WebAuthn §8.5), so real
    /// registrations (seeded from the vectors) get past the nonce and signature checks to the
    /// certificate and CTS checks: what verifies is basic attestation with the JWS's chain.
    static let safetyNet = FuzzTarget(
        "safetynet", "android-safetynet JWS response and statement verification"
    ) {
        bytes throws(FuzzPropertyViolation) in
        if let response = try? SafetyNetResponse(jws: bytes) {
            try expect(
                bytes.count <= SafetyNetResponse.maximumSize,
                "a SafetyNet response over the size limit parsed")
            try expect(!response.certificates.isEmpty, "a SafetyNet response without certificates parsed")
        }
        guard bytes.count > 34 else { return }
        let length = Int(bytes[32]) << 8 | Int(bytes[33])
        guard bytes.count >= 34 + length,
            let authData = try? AuthenticatorData(bytes: Array(bytes[34..<(34 + length)]))
        else { return }
        let jws = Array(bytes[(34 + length)...])
        // The low bit of the hash's first byte gives a ver that is not a string.
        let version: CBORValue = bytes[0] & 1 == 0 ? "fuzz" : .unsigned(14)
        let object = AttestationObject(
            format: .androidSafetyNet, authData: authData,
            attestationStatement: ["ver": version, "response": .byteString(jws)])
        guard let result = try? object.verify(clientDataHash: Array(bytes[..<32])) else { return }
        let chain = (try? SafetyNetResponse(jws: jws))?.certificates
        try expect(
            result.type == .basic && result.trustPath == chain,
            "a SafetyNet statement verified without its chain")
    }

    /// clientDataJSON as a relying party checks it (type, challenge, origin, crossOrigin,
    /// topOrigin) under each cross-origin policy; a forged assertion never verifies.
    static let clientData = FuzzTarget("client-data", "clientDataJSON checks") {
        bytes throws(FuzzPropertyViolation) in
        let rpID = "example.org"
        let hash = Array(SHA256.hash(data: Array(rpID.utf8)))
        guard let authData = try? AuthenticatorData(bytes: hash + [0x05, 0, 0, 0, 1]) else {
            throw FuzzPropertyViolation(description: "the fixed authenticatorData does not parse")
        }
        guard let key = fixedCredentialKey else {
            throw FuzzPropertyViolation(description: "the fixed credential key does not parse")
        }
        let policies =
            [
                CrossOriginPolicy.sameOriginOnly, .unchecked, .allowed(topOrigins: ["https://top.example"]),
                .allowed(topOrigins: nil),
            ]
            .map {
                RelyingPartyPolicy(relyingPartyID: rpID, origins: ["https://example.org"], crossOrigin: $0)
            }
            + [
                // The challenge the seeds carry (16 × 0x2A, "KioqKioqKioqKioqKioqKg"), and no checks at all.
                RelyingPartyPolicy(relyingPartyID: rpID, challenge: [UInt8](repeating: 0x2A, count: 16)),
                RelyingPartyPolicy(
                    relyingPartyID: rpID, origins: ["https://example.org", "https://b.example"]),
                RelyingPartyPolicy(relyingPartyID: rpID),
            ]
        // The input as clientDataJSON, and as a bare client data hash (what CTAP-level callers have).
        for clientData in [ClientDataInput.json(bytes), .hash(bytes)] {
            for policy in policies {
                let response = AssertionResponse(
                    id: nil, clientData: clientData, authenticatorData: authData, signature: [0x30, 0x00])
                let verified = try? AssertionVerifier(policy: policy).verify(
                    response, credential: CredentialRecord(id: nil, publicKey: .cose(key), signCount: 0))
                try expect(verified == nil, "an assertion with a forged signature verified")
            }
        }
    }

    /// MDS3 BLOBs (JWS compact, x5c, payload) through the whole verifier at a fixed time with
    /// the default anchor: what verifies is the BLOB that was given, with a signing chain.
    static let mdsBLOB = FuzzTarget("mds-blob", "MDS3 BLOB JWS verification and payload") {
        bytes throws(FuzzPropertyViolation) in
        let verifyTime = Date(timeIntervalSince1970: 1_725_148_800)
        let verifier = MetadataBLOBVerifier(verifyTime: verifyTime)
        let result = try runBlocking { () async -> MetadataBLOB? in try? await verifier.verify(bytes) }
        if let blob = result { try FuzzTarget.checkVerifiedBLOB(blob) }
        // Payload JSON (MetadataBLOBSigning): signed by the harness under its own root, it
        // verifies exactly when the payload parses, with the harness's certificate as the chain.
        guard bytes.first == UInt8(ascii: "{"), let chain = MetadataBLOBSigning.chain,
            let signed = MetadataBLOBSigning.signed(payload: bytes)
        else { return }
        let harness = MetadataBLOBVerifier(anchors: [chain.root], verifyTime: verifyTime)
        let verified = try runBlocking { () async -> MetadataBLOB? in try? await harness.verify(signed) }
        try expect(
            (verified != nil) == ((try? MetadataBLOBPayload(json: bytes)) != nil),
            "a harness-signed BLOB verifies differently from its payload's parse")
        guard let verified else { return }
        try expect(
            verified.signingChain == [chain.leaf] && verified.trustAnchor == chain.root
                && verified.verificationTime == verifyTime,
            "a harness-signed BLOB reports another chain, anchor or time")
        try expect(verified.sha256 == Array(SHA256.hash(data: signed)), "a harness-signed BLOB's digest is wrong")
        try FuzzTarget.checkVerifiedBLOB(verified)
    }

    /// What holds for every BLOB that verified: a signing chain, and staleness that does not
    /// depend on how it is asked.
    private static func checkVerifiedBLOB(_ blob: MetadataBLOB) throws(FuzzPropertyViolation) {
        try expect(!blob.signingChain.isEmpty, "a BLOB verified without a signing chain")
        try expect(
            blob.isStale == blob.isStale(at: blob.verificationTime), "staleness depends on how it is asked")
        try expect(
            blob.isStale(at: .distantPast) == (blob.payload.nextUpdateDate == nil),
            "a BLOB stale before its nextUpdate, or fresh without one")
        try expect(blob.isStale(at: .distantFuture), "a BLOB that is never stale")
    }

    /// The MDS3 BLOB payload (JSON metadata statements and status reports).
    ///
    /// What a relying party asks of a parsed payload runs too, over every entry (the first 64):
    /// the lookups by AAGUID, key identifier and attestation root find an entry that has what
    /// was looked up; the firmware-filtered status history is a subsequence of the whole one;
    /// the certification and latest status come from that history.
    static let mdsPayload = FuzzTarget("mds-payload", "MDS3 BLOB payload JSON and its queries") {
        bytes throws(FuzzPropertyViolation) in
        guard let payload = try? MetadataBLOBPayload(json: bytes) else { return }
        _ = payload.nextUpdateDate
        for entry in payload.entries.prefix(64) {
            _ = entry.description
            if let text = entry.aaguid, let aaguid = AAGUID(uuidString: text) {
                let found = payload.entry(aaguid: aaguid)
                try expect(
                    aaguid == .zero || found?.aaguid.flatMap(AAGUID.init(uuidString:)) == aaguid,
                    "an AAGUID lookup found another model")
            }
            for identifier in (entry.attestationCertificateKeyIdentifiers ?? []).prefix(4) {
                let found = payload.entry(attestationCertificateKeyIdentifier: identifier)
                try expect(found != nil, "a key identifier lookup found nothing")
            }
            for root in entry.attestationRoots.prefix(2) {
                _ = payload.entry(attestationCertificate: root)
            }
            let history = entry.statusHistory
            try expect(history.count == entry.statusReports.count, "the status history lost reports")
            for version in [nil, 0, 1, 2, 100, UInt64.max] as [UInt64?] {
                let filtered = entry.statusHistory(forFirmware: version)
                try expect(
                    filtered.count <= history.count, "a firmware's status history is longer than the whole")
                if let certification = entry.certification(forFirmware: version) {
                    try expect(
                        certification.status.isCertification && filtered.contains(certification),
                        "a certification from outside the history")
                }
                try expect(
                    entry.latestStatus(forFirmware: version) == filtered.last,
                    "a latest status that is not the last")
            }
            _ = entry.certification
            try expect(entry.latestStatus == history.last, "a latest status that is not the last")
            for report in entry.statusReports.prefix(8) {
                try expect(!report.status.description.isEmpty, "a status without a name")
            }
        }
    }

    /// Certificate revocation lists (DER or PEM) as MDS verification reads them.
    ///
    /// The input is also read as issuer length (2, big-endian) ‖ issuer certificate (DER) ‖ CRL,
    /// so that real lists with their real issuers (seeded from the MDS vectors) reach the
    /// signature check (and the certificate's CRL distribution points are read): a list is signed by a certificate only if it names that certificate's
    /// subject as its issuer, and the check answers the same twice.
    static let crl = FuzzTarget("crl", "certificate revocation lists (DER, PEM) and their signatures") {
        bytes throws(FuzzPropertyViolation) in
        if let list = try? CertificateRevocationList(bytes: bytes) {
            try expect(
                (try? CertificateRevocationList(bytes: bytes)) == list, "a CRL parses differently twice")
        }
        guard bytes.count > 2 else { return }
        let length = Int(bytes[0]) << 8 | Int(bytes[1])
        guard bytes.count >= 2 + length,
            let issuer = try? Certificate(derEncoded: Array(bytes[2..<(2 + length)]))
        else { return }
        // The distribution points a revocation check would fetch: http(s) only, at most eight.
        let urls = issuer.crlDistributionPointURLs
        try expect(
            urls.count <= 8 && urls.allSatisfy { $0.lowercased().hasPrefix("http") },
            "a certificate's CRL distribution points include a non-HTTP URL or too many")
        guard let list = try? CertificateRevocationList(bytes: Array(bytes[(2 + length)...])) else { return }
        let signed = list.isSigned(by: issuer)
        try expect(signed == list.isSigned(by: issuer), "a CRL's signature checks differently twice")
        try expect(!signed || issuer.subject == list.issuer, "a CRL signed by a certificate it does not name")
    }

    /// Trust anchor files (PEM bundles or DER) given to `verify --trust`.
    ///
    /// The same bytes are also read the way `verify --trust` reads them, from a file and from a
    /// directory holding that file (under this process's temporary directory), which must give
    /// the same certificates as parsing the bytes.
    static let trustAnchors = FuzzTarget(
        "trust-anchors", "trust anchor files (PEM bundles, DER), from bytes and files"
    ) {
        bytes throws(FuzzPropertyViolation) in
        let parsed = try? AttestationTrustAnchors.parse(bytes)
        if let parsed { try expect(!parsed.isEmpty, "a trust anchor file parsed to no certificate") }
        guard let directory = trustAnchorDirectory else {
            throw FuzzPropertyViolation(description: "no temporary directory for trust anchor files")
        }
        let file = directory + "/anchor.pem"
        guard FileManager.default.createFile(atPath: file, contents: Data(bytes)) else {
            throw FuzzPropertyViolation(description: "the trust anchor file cannot be written")
        }
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromFile = try? AttestationTrustAnchors(contentsOf: file)
        try expect(fromFile?.certificates == parsed, "a trust anchor file reads differently from its bytes")
        let fromDirectory = try? AttestationTrustAnchors(contentsOf: directory)
        try expect(
            fromDirectory?.certificates == parsed, "a trust anchor directory reads differently from its file")
        // Several paths, as `--trust-root` repeated gives them: each read in turn, in order.
        try expect(
            (try? AttestationTrustAnchors(contentsOf: [file, directory]))?.certificates == parsed.map { $0 + $0 },
            "a file and its directory read together differ from the file's certificates twice")
        try expect(
            (try? AttestationTrustAnchors(contentsOf: directory + "/missing")) == nil, "a missing file read")
        try expect(
            (try? AttestationTrustAnchors(contentsOf: directory + "/skipped.pem")) == nil,
            "a directory without certificate files read")
    }
}

/// An ES256 credential key the fuzzer does not hold the private key of (a fixed scalar).
private let fixedCredentialKey: COSEKey? = {
    guard let signer = try? P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 7, count: 32))
    else {
        return nil
    }
    let xy = Array(signer.publicKey.rawRepresentation)
    let map: CBORMap = [
        .unsigned(1): .unsigned(2), .unsigned(3): .negative(6), .negative(0): .unsigned(1),
        .negative(1): .byteString(Array(xy[..<32])), .negative(2): .byteString(Array(xy[32...])),
    ]
    return try? COSEKey(map: map)
}()

/// A directory for the trust-anchors target's files: made once per process, with a
/// subdirectory and a file of another extension that reading a directory must skip.
private let trustAnchorDirectory: String? = {
    let path = FileManager.default.temporaryDirectory.path + "/securitykey-fuzz-\(getpid())-anchors"
    let manager = FileManager.default
    guard
        (try? manager.createDirectory(atPath: path + "/skipped.pem", withIntermediateDirectories: true))
            != nil,
        manager.createFile(atPath: path + "/notes.txt", contents: Data("not an anchor".utf8))
    else { return nil }
    // Once per process (too slow per input): a file one byte over the limit is refused.
    let large = path + "/large.pem"
    guard
        manager.createFile(atPath: large, contents: Data(count: AttestationTrustAnchors.maximumFileSize + 1)),
        (try? AttestationTrustAnchors(contentsOf: large)) == nil
    else { return nil }
    try? manager.removeItem(atPath: large)
    return path
}()

import Crypto
import FoundationEssentials
import X509

/// Verifies metadata BLOBs (FIDO MDS3 §3.2): the JWS signature with the signing certificate,
/// that certificate's chain to a trust anchor at a chosen time, the CRLs given, and the serial
/// number against the last one trusted. Only then is the payload read.
public struct MetadataBLOBVerifier: Sendable {
    /// The anchors the signing chain must lead to; GlobalSign Root CA - R3 by default.
    public var anchors: [Certificate]
    /// CRLs to check the signing chain against. A CRL whose issuer is in the chain must be signed
    /// by it; its age is not judged (CRLs may be older than the BLOB in forensics).
    public var crls: [CertificateRevocationList]
    /// The moment certificates are checked at; nil means now.
    public var verifyTime: Date?
    /// The serial number of the BLOB trusted before; a lower `no` is refused as a rollback.
    public var minimumSerialNumber: Int?
    /// Fetches and checks the CRLs the signing chain names (FIDO MDS3 §3.2 step 4); nil
    /// fetches nothing (``crls`` are still checked).
    public var revocation: RevocationChecker?
    /// Whether a BLOB whose chain's revocation could not be checked is refused
    /// (``WebAuthnVerificationError/Code/revocationNotChecked``) rather than reported.
    public var requiresRevocation: Bool

    /// Creates a verifier; by default it trusts GlobalSign Root CA - R3 and checks as of now.
    public init(
        anchors: [Certificate]? = nil, crls: [CertificateRevocationList] = [], verifyTime: Date? = nil,
        minimumSerialNumber: Int? = nil, revocation: RevocationChecker? = nil, requiresRevocation: Bool = false
    ) {
        self.anchors = anchors ?? Self.globalSignRootR3.map { [$0] } ?? []
        self.crls = crls
        self.verifyTime = verifyTime
        self.minimumSerialNumber = minimumSerialNumber
        self.revocation = revocation
        self.requiresRevocation = requiresRevocation
    }

    /// Verifies a BLOB as received (JWS compact) and returns it with its payload.
    public func verify(_ bytes: [UInt8]) async throws(WebAuthnVerificationError) -> MetadataBLOB {
        let time = verifyTime ?? Date()
        let jws = try JWSCompact(bytes)
        try jws.verifySignature()
        let path = try await validatedPath(jws.x5c, at: time)
        var revocationCheck: RevocationCheck?
        if let revocation {
            do {
                revocationCheck = try await revocation.check(path, at: time, required: requiresRevocation)
            } catch where error.code == .certificateRevoked {
                throw WebAuthnVerificationError(
                    .metadataSignerRevoked, "The metadata BLOB's signing chain is revoked: \(error.message)")
            }
        }
        let payload = try MetadataBLOBPayload(json: jws.payload)
        if let minimumSerialNumber, payload.no < minimumSerialNumber {
            throw WebAuthnVerificationError(
                .metadataRollback,
                "The metadata BLOB is number \(payload.no), older than number \(minimumSerialNumber) already trusted."
            )
        }
        return MetadataBLOB(
            payload: payload, algorithm: jws.algorithm, signingChain: jws.x5c, trustAnchor: path.last,
            verificationTime: time, sha256: Array(SHA256.hash(data: bytes)), revocation: revocationCheck)
    }

    /// Verifies a signing chain (leaf first, as in x5c) to one of ``anchors`` at `time`, then
    /// against ``crls``; returns the anchor.
    public func verifySigningChain(_ chain: [Certificate], at time: Date? = nil)
        async throws(WebAuthnVerificationError)
        -> Certificate
    {
        let path = try await validatedPath(chain, at: time)
        guard let anchor = path.last else {
            throw WebAuthnVerificationError(
                .metadataChainInvalid, "The metadata BLOB's signing chain is empty.")
        }
        return anchor
    }

    /// The signing chain's validated path (leaf first, anchor last), checked against ``crls``.
    func validatedPath(_ chain: [Certificate], at time: Date? = nil) async throws(WebAuthnVerificationError)
        -> [Certificate]
    {
        guard let leaf = chain.first else {
            throw WebAuthnVerificationError(
                .metadataChainInvalid, "The metadata BLOB carries no signing certificate.")
        }
        let time = time ?? verifyTime ?? Date()
        let built = await CertificatePathBuilder.build(
            leaf: leaf, intermediates: Array(chain.dropFirst()), anchors: anchors, at: time)
        let path: [Certificate]
        switch built {
        case .valid(let validated):
            path = validated
        case .expired(let certificate):
            let formatter = Date.ISO8601FormatStyle()
            throw WebAuthnVerificationError(
                .metadataCertificateExpired,
                "The metadata BLOB's signing certificate \(certificate.subject) is valid only from "
                    + "\(formatter.format(certificate.notValidBefore)) to "
                    + "\(formatter.format(certificate.notValidAfter)), not at \(formatter.format(time)); "
                    + "give a verification time inside that period to check an old BLOB.")
        case .invalid(let reason):
            throw WebAuthnVerificationError(
                .metadataChainInvalid,
                "The metadata BLOB's signing certificates do not chain to a trusted root: \(reason).")
        }
        try checkRevocation(path)
        return path
    }

    /// Each certificate in the path against the CRLs its issuer (the next one) signed.
    private func checkRevocation(_ path: [Certificate]) throws(WebAuthnVerificationError) {
        for (certificate, issuer) in zip(path, path.dropFirst()) {
            for crl in crls where crl.issuer == issuer.subject {
                guard crl.isSigned(by: issuer) else {
                    throw WebAuthnVerificationError(
                        .metadataCRLInvalid,
                        "A CRL naming \(issuer.subject) as its issuer is not signed by it.")
                }
                if crl.revokedSerialNumbers.contains(certificate.serialNumber) {
                    throw WebAuthnVerificationError(
                        .metadataSignerRevoked,
                        "The metadata BLOB's signing certificate \(certificate.subject) (serial \(certificate.serialNumber)) is revoked."
                    )
                }
            }
        }
    }
}

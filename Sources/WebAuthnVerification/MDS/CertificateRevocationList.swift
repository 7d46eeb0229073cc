import FoundationEssentials
import SwiftASN1
import X509

/// An X.509 certificate revocation list (RFC 5280 §5), reduced to what checking a metadata
/// BLOB's signing chain needs: the issuer, the dates, the revoked serial numbers and the
/// signature. swift-certificates has no CRL type.
public struct CertificateRevocationList: Sendable, Hashable {
    /// The CA that issued the list.
    public var issuer: DistinguishedName
    /// When the list was issued.
    public var thisUpdate: Date
    /// When the next list is due, if stated.
    public var nextUpdate: Date?
    /// The serial numbers of the revoked certificates.
    public var revokedSerialNumbers: Set<Certificate.SerialNumber>

    /// The signed part (tbsCertList), as encoded.
    let toBeSigned: [UInt8]
    /// The signature algorithm of the outer CertificateList.
    let signatureAlgorithm: Certificate.SignatureAlgorithm?
    /// The signature value's bytes.
    let signature: [UInt8]

    /// The largest CRL accepted; real CA CRLs are kilobytes, a few reach megabytes.
    public static let maximumSize = 16 << 20

    /// Parses a CRL from DER, or from PEM with an `X509 CRL` block.
    public init(bytes: [UInt8]) throws(WebAuthnVerificationError) {
        guard bytes.count <= Self.maximumSize else {
            throw WebAuthnVerificationError(.metadataCRLInvalid, "The CRL is larger than 16 MiB.")
        }
        var der = bytes
        if bytes.first != 0x30 {
            guard let document = try? PEMDocument(pemString: String(decoding: bytes, as: UTF8.self)),
                document.discriminator == "X509 CRL"
            else {
                throw WebAuthnVerificationError(
                    .metadataCRLInvalid, "The CRL is neither DER nor an X509 CRL PEM block.")
            }
            der = document.derBytes
        }
        do {
            self = try Self.parse(der)
        } catch let error as WebAuthnVerificationError {
            throw error
        } catch {
            throw WebAuthnVerificationError(
                .metadataCRLInvalid, "The CRL is not a valid RFC 5280 CertificateList.", underlying: error)
        }
    }

    private init(
        issuer: DistinguishedName, thisUpdate: Date, nextUpdate: Date?,
        revoked: Set<Certificate.SerialNumber>,
        toBeSigned: [UInt8], signatureAlgorithm: Certificate.SignatureAlgorithm?, signature: [UInt8]
    ) {
        self.issuer = issuer
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
        self.revokedSerialNumbers = revoked
        self.toBeSigned = toBeSigned
        self.signatureAlgorithm = signatureAlgorithm
        self.signature = signature
    }

    private static func parse(_ der: [UInt8]) throws -> CertificateRevocationList {
        let root = try DER.parse(der)
        return try DER.sequence(root, identifier: .sequence) { nodes in
            guard let tbsNode = nodes.next() else {
                throw ASN1Error.invalidASN1Object(reason: "no tbsCertList")
            }
            let algorithm = try Self.algorithm(&nodes)
            let signature = try ASN1BitString(derEncoded: &nodes)
            let parts = try DER.sequence(tbsNode, identifier: .sequence) { fields in
                // version INTEGER OPTIONAL (v2 = 1)
                _ = try DER.decodeDefault(&fields, identifier: .integer, defaultValue: 0) {
                    try Int(derEncoded: $0)
                }
                _ = try Self.algorithm(&fields)
                guard let issuerNode = fields.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "no issuer")
                }
                let issuer = try DistinguishedName(derEncoded: issuerNode)
                let thisUpdate = try Self.time(&fields)
                var nextUpdate: Date?
                var revoked = Set<Certificate.SerialNumber>()
                var pending = fields.next()
                if let node = pending, node.identifier == .utcTime || node.identifier == .generalizedTime {
                    nextUpdate = try Self.date(node)
                    pending = fields.next()
                }
                if let node = pending, node.identifier == .sequence {
                    try DER.sequence(node, identifier: .sequence) { entries in
                        while let entry = entries.next() {
                            try DER.sequence(entry, identifier: .sequence) { entryFields in
                                let serial = try ArraySlice<UInt8>(derEncoded: &entryFields)
                                revoked.insert(Certificate.SerialNumber(bytes: serial))
                                // revocationDate and crlEntryExtensions are not needed here.
                                while entryFields.next() != nil {}
                            }
                        }
                    }
                    pending = fields.next()
                }
                // crlExtensions [0] may follow; nothing else may.
                if let node = pending,
                    node.identifier != ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
                {
                    throw ASN1Error.invalidASN1Object(reason: "unexpected field in tbsCertList")
                }
                return (issuer, thisUpdate, nextUpdate, revoked)
            }
            return CertificateRevocationList(
                issuer: parts.0, thisUpdate: parts.1, nextUpdate: parts.2, revoked: parts.3,
                toBeSigned: Array(tbsNode.encodedBytes), signatureAlgorithm: algorithm,
                signature: Array(signature.bytes))
        }
    }

    /// Reads an AlgorithmIdentifier and maps its OID to the algorithms swift-certificates verifies.
    private static func algorithm(_ nodes: inout ASN1NodeCollection.Iterator) throws -> Certificate
        .SignatureAlgorithm?
    {
        guard let node = nodes.next() else {
            throw ASN1Error.invalidASN1Object(reason: "no AlgorithmIdentifier")
        }
        let oid = try DER.sequence(node, identifier: .sequence) { fields in
            let oid = try ASN1ObjectIdentifier(derEncoded: &fields)
            while fields.next() != nil {}
            return oid
        }
        let known: [(ASN1ObjectIdentifier, Certificate.SignatureAlgorithm)] = [
            ([1, 2, 840, 10045, 4, 3, 2], .ecdsaWithSHA256), ([1, 2, 840, 10045, 4, 3, 3], .ecdsaWithSHA384),
            ([1, 2, 840, 10045, 4, 3, 4], .ecdsaWithSHA512),
            ([1, 2, 840, 113549, 1, 1, 11], .sha256WithRSAEncryption),
            ([1, 2, 840, 113549, 1, 1, 12], .sha384WithRSAEncryption),
            ([1, 2, 840, 113549, 1, 1, 13], .sha512WithRSAEncryption),
        ]
        return known.first { $0.0 == oid }?.1
    }

    private static func time(_ nodes: inout ASN1NodeCollection.Iterator) throws -> Date {
        guard let node = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "no Time") }
        return try date(node)
    }

    private static func date(_ node: ASN1Node) throws -> Date {
        var parts = DateComponents()
        if node.identifier == .utcTime {
            let t = try UTCTime(derEncoded: node)
            parts = DateComponents(
                year: t.year, month: t.month, day: t.day, hour: t.hours, minute: t.minutes, second: t.seconds)
        } else {
            let t = try GeneralizedTime(derEncoded: node)
            parts = DateComponents(
                year: t.year, month: t.month, day: t.day, hour: t.hours, minute: t.minutes, second: t.seconds)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        guard let date = calendar.date(from: parts) else {
            throw ASN1Error.invalidASN1Object(reason: "bad time")
        }
        return date
    }

    /// Whether `issuer` signed this list: its subject is the list's issuer and its key verifies
    /// the signature.
    public func isSigned(by issuer: Certificate) -> Bool {
        guard issuer.subject == self.issuer, let signatureAlgorithm else { return false }
        return issuer.publicKey.isValidSignature(
            signature, for: toBeSigned, signatureAlgorithm: signatureAlgorithm)
    }
}

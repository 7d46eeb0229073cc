import SwiftASN1
import X509

extension Certificate {
    /// The OID of the CRL distribution points extension (RFC 5280 §4.2.1.13).
    static let crlDistributionPointsOID: ASN1ObjectIdentifier = [2, 5, 29, 31]
    /// The most distribution point URLs read from one certificate; real ones name one or two.
    static let maximumCRLDistributionPoints = 8

    /// The http and https URLs of the certificate's CRL distribution points (RFC 5280
    /// §4.2.1.13: the `uniformResourceIdentifier` names of each point's `fullName`), in the
    /// certificate's order, at most eight; empty when it names none or the extension is
    /// malformed. LDAP and other schemes are left out: only HTTP is fetched.
    public var crlDistributionPointURLs: [String] {
        guard let value = extensions[oid: Self.crlDistributionPointsOID]?.value,
            let names = try? Self.distributionPointNames(DER.parse(value))
        else { return [] }
        var urls: [String] = []
        for name in names {
            guard case .uniformResourceIdentifier(let text) = name else { continue }
            let lowered = text.lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), !urls.contains(text) else {
                continue
            }
            urls.append(text)
            if urls.count == Self.maximumCRLDistributionPoints { break }
        }
        return urls
    }

    /// CRLDistributionPoints ::= SEQUENCE OF DistributionPoint; DistributionPoint ::= SEQUENCE {
    /// distributionPoint [0] DistributionPointName OPTIONAL, reasons [1], cRLIssuer [2] };
    /// DistributionPointName ::= CHOICE { fullName [0] GeneralNames, nameRelativeToCRLIssuer [1] }.
    /// The choice is tagged explicitly (a CHOICE cannot be tagged implicitly), its fullName
    /// implicitly: [0] { [0] { GeneralName ... } }.
    private static func distributionPointNames(_ root: ASN1Node) throws -> [GeneralName] {
        let pointTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        let fullNameTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        var names: [GeneralName] = []
        try DER.sequence(root, identifier: .sequence) { points in
            while let point = points.next() {
                try DER.sequence(point, identifier: .sequence) { fields in
                    while let field = fields.next() {
                        guard field.identifier == pointTag, case .constructed(let choice) = field.content
                        else {
                            continue
                        }
                        for name in choice where name.identifier == fullNameTag {
                            guard case .constructed(let generalNames) = name.content else { continue }
                            for node in generalNames { names.append(try GeneralName(derEncoded: node)) }
                        }
                    }
                }
            }
        }
        return names
    }
}

import _SecurityKeyInternals
import CTAP2
import FoundationEssentials
import X509

/// The payload of a metadata BLOB (FIDO MDS3 §3.1.6 "Metadata BLOB Payload").
public struct MetadataBLOBPayload: Sendable, Hashable, Decodable {
    /// The legal terms of use.
    public var legalHeader: String?
    /// The BLOB's serial number; it must grow with every published BLOB.
    public var no: Int
    /// When the next BLOB is due, as `YYYY-MM-DD`.
    public var nextUpdate: String
    /// One entry per authenticator model.
    public var entries: [MetadataBLOBPayloadEntry]

    /// Decodes a payload from its JSON.
    public init(json: [UInt8]) throws(WebAuthnVerificationError) {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(json))
        } catch {
            throw WebAuthnVerificationError(
                .metadataMalformed, "The metadata BLOB payload is not MDS3 JSON.", underlying: error)
        }
    }

    /// `nextUpdate` as the start of that day, UTC; nil when it is not a date.
    public var nextUpdateDate: Date? { MetadataDate.parse(nextUpdate) }

    /// The entry for a FIDO2 model's AAGUID.
    public func entry(aaguid: AAGUID) -> MetadataBLOBPayloadEntry? {
        guard aaguid != .zero else { return nil }
        return entries.first { $0.aaguid.flatMap(AAGUID.init(uuidString:)) == aaguid }
    }

    /// The entry listing this attestation certificate key identifier (hex, case-insensitive).
    public func entry(attestationCertificateKeyIdentifier identifier: String) -> MetadataBLOBPayloadEntry? {
        let wanted = identifier.lowercased()
        return entries.first {
            ($0.attestationCertificateKeyIdentifiers ?? []).contains { $0.lowercased() == wanted }
        }
    }

    /// The entry for an attestation certificate: by the SHA-1 of its public key (the
    /// identifier U2F models are listed by).
    public func entry(attestationCertificate: Certificate) -> MetadataBLOBPayloadEntry? {
        guard let identifier = MetadataKeyIdentifier.of(attestationCertificate) else { return nil }
        return entry(attestationCertificateKeyIdentifier: identifier)
    }
}

/// One authenticator model in the metadata (FIDO MDS3 §3.1.1 "Metadata BLOB Payload Entry").
public struct MetadataBLOBPayloadEntry: Sendable, Hashable, Decodable {
    /// The UAF model identifier.
    public var aaid: String?
    /// The FIDO2 model identifier, as a UUID string.
    public var aaguid: String?
    /// The U2F (and some FIDO2) models' attestation certificate key identifiers, hex.
    public var attestationCertificateKeyIdentifiers: [String]?
    /// The model's metadata statement.
    public var metadataStatement: MetadataStatement?
    /// The model's status history.
    public var statusReports: [StatusReport]
    /// When the status last changed, `YYYY-MM-DD`.
    public var timeOfLastStatusChange: String?

    private enum CodingKeys: String, CodingKey {
        case aaid, aaguid, attestationCertificateKeyIdentifiers, metadataStatement, statusReports
        case timeOfLastStatusChange
    }

    /// Decodes an entry; a missing statusReports list is read as empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        aaid = try c.decodeIfPresent(String.self, forKey: .aaid)
        aaguid = try c.decodeIfPresent(String.self, forKey: .aaguid)
        attestationCertificateKeyIdentifiers = try c.decodeIfPresent(
            [String].self, forKey: .attestationCertificateKeyIdentifiers)
        metadataStatement = try c.decodeIfPresent(MetadataStatement.self, forKey: .metadataStatement)
        statusReports = try c.decodeIfPresent([StatusReport].self, forKey: .statusReports) ?? []
        timeOfLastStatusChange = try c.decodeIfPresent(String.self, forKey: .timeOfLastStatusChange)
    }

    /// The model's name, from its metadata statement.
    public var description: String? { metadataStatement?.description }

    /// The status reports, latest effective date last (reports without a date first, in order).
    public var statusHistory: [StatusReport] {
        statusReports.enumerated().sorted {
            let a = $0.element.effectiveDate ?? "", b = $1.element.effectiveDate ?? ""
            return a == b ? $0.offset < $1.offset : a < b
        }.map(\.element)
    }

    /// The status reports that concern an authenticator running firmware `version` (getInfo's
    /// firmwareVersion), in ``statusHistory`` order; every report when the version is unknown.
    /// A report names the firmware it relates to (FIDO MDS3 §3.1.3): a certification (and a
    /// self-assertion) covers that version and later ones; UPDATE_AVAILABLE names the fixed
    /// version, so it concerns older firmware only; a problem report (a compromise, a bypass,
    /// a revocation) concerns its version and older ones, and later ones too until a later
    /// report (an update or a certification) names a version no newer than `version`.
    public func statusHistory(forFirmware version: UInt64?) -> [StatusReport] {
        let history = statusHistory
        guard let version else { return history }
        return history.enumerated().filter { index, report in
            guard let named = report.authenticatorVersion else { return true }
            if report.status == .updateAvailable { return version < named }
            if !AuthenticatorStatus.refusedByDefault.contains(report.status) { return version >= named }
            if version <= named { return true }
            let fixed = history[(index + 1)...].contains { later in
                guard let at = later.authenticatorVersion else { return false }
                let clears = later.status == .updateAvailable || later.status.isCertification
                return clears && at > named && at <= version
            }
            return !fixed
        }.map(\.element)
    }

    /// The latest certification status (FIDO_CERTIFIED_Lx, FIDO_CERTIFIED, NOT_FIDO_CERTIFIED, ...),
    /// preferring a levelled one over the plain FIDO_CERTIFIED of the same date.
    public var certification: StatusReport? { certification(forFirmware: nil) }

    /// The latest certification status that concerns firmware `version` (all when nil).
    public func certification(forFirmware version: UInt64?) -> StatusReport? {
        let certifications = statusHistory(forFirmware: version).filter { $0.status.isCertification }
        guard let last = certifications.last else { return nil }
        let sameDay = certifications.filter { $0.effectiveDate == last.effectiveDate }
        return sameDay.last { $0.status != .fidoCertified } ?? last
    }

    /// The latest status report of any kind.
    public var latestStatus: StatusReport? { statusHistory.last }

    /// The latest status report that concerns firmware `version` (any when nil).
    public func latestStatus(forFirmware version: UInt64?) -> StatusReport? {
        statusHistory(forFirmware: version).last
    }

    /// The model's attestation roots, decoded; entries that are not certificates are skipped.
    public var attestationRoots: [Certificate] {
        (metadataStatement?.attestationRootCertificates ?? []).compactMap { text in
            Base64.decode(text, alphabet: .standard, padding: .required).flatMap { try? Certificate(derEncoded: $0) }
        }
    }
}

/// What the vendor states about a model (FIDO Metadata Statement §4), reduced to the fields a
/// relying party and the CLI use.
public struct MetadataStatement: Sendable, Hashable, Decodable {
    /// The model's name.
    public var description: String?
    /// The FIDO2 model identifier.
    public var aaguid: String?
    /// The firmware version the statement describes.
    public var authenticatorVersion: UInt64?
    /// "fido2", "u2f" or "uaf".
    public var protocolFamily: String?
    /// The statement schema version.
    public var schema: Int?
    /// The attestation types the model uses ("basic_full", "attca", ...).
    public var attestationTypes: [String]?
    /// The attestation trust anchors, base64 DER.
    public var attestationRootCertificates: [String]?
    /// The identifiers of the attestation keys of U2F models, hex.
    public var attestationCertificateKeyIdentifiers: [String]?
}

/// One status report (FIDO MDS3 §3.1.3 "StatusReport").
public struct StatusReport: Sendable, Hashable, Decodable {
    /// The status word.
    public var status: AuthenticatorStatus
    /// From when it applies, `YYYY-MM-DD`.
    public var effectiveDate: String?
    /// The firmware version it applies to (and later ones).
    public var authenticatorVersion: UInt64?
    /// A certificate the status concerns (a compromised attestation key's), base64 DER.
    public var certificate: String?
    /// Where more is said.
    public var url: String?
    /// The certified product's name.
    public var certificationDescriptor: String?
    /// The certificate number.
    public var certificateNumber: String?
    /// The certification policy version.
    public var certificationPolicyVersion: String?
    /// The certification requirements version.
    public var certificationRequirementsVersion: String?
}

/// The `YYYY-MM-DD` dates of the metadata, read as UTC midnight.
enum MetadataDate {
    static func parse(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]),
            let d = Int(parts[2]), (1...12).contains(m), (1...31).contains(d)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar.date(from: DateComponents(year: y, month: m, day: d))
    }
}

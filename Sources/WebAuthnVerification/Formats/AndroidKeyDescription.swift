import SwiftASN1

/// The Android key attestation extension's KeyDescription (Android "Key and ID attestation"
/// schema; WebAuthn §8.4): only the fields the android-key verification procedure reads.
public struct AndroidKeyDescription: Hashable, Sendable {
    /// The extension's OID, 1.3.6.1.4.1.11129.2.1.17.
    public static let extensionOID: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]

    /// KM_ORIGIN_GENERATED: the key was made in the keystore.
    public static let originGenerated = 0
    /// KM_PURPOSE_SIGN.
    public static let purposeSign = 2

    /// The authorization list tags read here (Android AuthorizationList).
    enum Tag {
        static let purpose: UInt = 1
        static let allApplications: UInt = 600
        static let origin: UInt = 702
    }

    /// The fields of one AuthorizationList that the procedure reads.
    public struct AuthorizationList: Hashable, Sendable {
        /// purpose [1]: what the key may be used for.
        public var purposes: Set<Int> = []
        /// allApplications [600] is present: the key is usable by every application.
        public var allApplications = false
        /// origin [702]: where the key was made.
        public var origin: Int?
    }

    /// attestationVersion.
    public var attestationVersion: Int
    /// attestationSecurityLevel (0 software, 1 TEE, 2 StrongBox).
    public var attestationSecurityLevel: Int
    /// attestationChallenge: the client data hash the key was made for.
    public var attestationChallenge: [UInt8]
    /// softwareEnforced.
    public var softwareEnforced: AuthorizationList
    /// teeEnforced (hardwareEnforced).
    public var teeEnforced: AuthorizationList

    /// Parses the DER of a KeyDescription (the extension's value), bounded by swift-asn1's
    /// depth and length checks; hostile input fails with a typed error.
    public init(derEncoded bytes: [UInt8]) throws(WebAuthnVerificationError) {
        do {
            let root = try DER.parse(bytes)
            guard root.identifier == .sequence, case .constructed(let fields) = root.content else {
                throw Self.malformed("is not a SEQUENCE")
            }
            let items = Array(fields)
            guard items.count >= 8 else { throw Self.malformed("has \(items.count) fields, not 8") }
            attestationVersion = try Self.integer(items[0])
            attestationSecurityLevel = try Self.integer(items[1])
            guard items[4].identifier == .octetString, case .primitive(let challenge) = items[4].content else {
                throw Self.malformed("has no attestationChallenge OCTET STRING")
            }
            attestationChallenge = Array(challenge)
            softwareEnforced = try Self.authorizationList(items[6])
            teeEnforced = try Self.authorizationList(items[7])
        } catch let error as WebAuthnVerificationError {
            throw error
        } catch {
            throw WebAuthnVerificationError(
                .malformedInput, "The Android key description is not valid DER.", underlying: error)
        }
    }

    private static func malformed(_ what: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.malformedInput, "The Android key description \(what).")
    }

    /// An INTEGER or ENUMERATED that fits in 32 bits.
    private static func integer(_ node: ASN1Node) throws(WebAuthnVerificationError) -> Int {
        guard node.identifier == .integer || node.identifier == .enumerated,
            case .primitive(let bytes) = node.content, !bytes.isEmpty, bytes.count <= 4
        else { throw malformed("has an integer field that is not a small INTEGER") }
        var value = Int(Int8(bitPattern: bytes[bytes.startIndex]))
        for byte in bytes.dropFirst() { value = value << 8 | Int(byte) }
        return value
    }

    private static func authorizationList(_ node: ASN1Node) throws(WebAuthnVerificationError) -> AuthorizationList {
        guard node.identifier == .sequence, case .constructed(let entries) = node.content else {
            throw malformed("has an authorization list that is not a SEQUENCE")
        }
        var list = AuthorizationList()
        for entry in entries where entry.identifier.tagClass == .contextSpecific {
            // Every field is EXPLICIT: one inner element.
            guard case .constructed(let inner) = entry.content, let value = inner.first(where: { _ in true })
            else { throw malformed("has an authorization entry that is not explicitly tagged") }
            switch entry.identifier.tagNumber {
            case Tag.purpose:
                guard value.identifier == .set, case .constructed(let purposes) = value.content else {
                    throw malformed("has a purpose that is not a SET OF INTEGER")
                }
                for p in purposes { list.purposes.insert(try integer(p)) }
            case Tag.allApplications:
                list.allApplications = true
            case Tag.origin:
                list.origin = try integer(value)
            default:
                continue
            }
        }
        return list
    }
}

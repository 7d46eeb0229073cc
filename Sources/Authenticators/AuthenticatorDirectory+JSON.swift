import _SecurityKeyInternals
import CBOR
import CTAP2

extension AuthenticatorDirectory.Listing {
    /// The listed key as a JSON document (`securitykey list --json`, Docs/CLI.md): the
    /// descriptor's members, then AAGUID, `model` name, versions and whether it is U2F-only
    /// (null when it did not answer getInfo), and the reason it did not answer, where it did not.
    public func json(model: String?) -> JSONValue {
        .members(
            descriptor.jsonMembers.map { ($0.0, $0.1) } + [
                ("aaguid", info.map { .string($0.aaguid.description.lowercased()) } ?? .null),
                ("model", model.map(JSONValue.string) ?? .null),
                ("versions", info.map { .array($0.versions.map { .string($0.rawValue) }) } ?? .null),
                ("u2fOnly", info.map { .bool($0.isU2FOnly) } ?? .null),
                ("error", problem.map { .string($0.message) }),
            ])
    }

    /// The listed key in one line, for people: URI, transport, USB IDs, product, `model` name,
    /// AAGUID and versions, or why it did not answer getInfo.
    public func summary(model: String?) -> String {
        var line = "\(descriptor.uri)  [\(descriptor.transport)]"
        if let vid = descriptor.vendorID, let pid = descriptor.productID {
            line += "  \(Hex.encode(vid)):\(Hex.encode(pid))"
        }
        if let product = descriptor.product { line += "  \(product)" }
        if let info {
            if let model { line += "  \(model)" }
            line += "  AAGUID \(info.aaguid.description.lowercased())"
            line += "  \(info.versions.map(\.rawValue).joined(separator: ","))"
            if info.isU2FOnly { line += "  (U2F only)" }
        } else if let problem {
            line += "  (\(problem.message))"
        }
        return line
    }
}

extension PINStatus {
    /// The PIN state of the key at `device` as `securitykey pin status --json` prints it
    /// (Docs/CLI.md); `status` is nil on a key without PIN support.
    public static func json(_ status: PINStatus?, device: String, info: AuthenticatorInfo) -> JSONValue {
        .members([
            ("device", .string(device)),
            ("pinSupported", .bool(info.options.isSupported(.clientPIN))),
            ("pinSet", .bool(info.options.isEnabled(.clientPIN))),
            ("pinRetries", status?.retries.map { .integer(Int64($0)) } ?? .null),
            ("powerCycleRequired", status?.powerCycleRequired.map(JSONValue.bool)),
            ("pinBlocked", .bool(status?.isBlocked ?? false)),
            ("uvRetries", status?.uvRetries.map { .integer(Int64($0)) }),
            ("minPINLength", .integer(Int64(info.minPINLength ?? 4))),
            ("forcePINChange", .bool(info.forcePINChange ?? false)),
            ("maxPINLength", info.maxPINLength.map { .integer(Int64(clamping: $0)) } ?? .null),
            ("pinComplexityPolicy", info.pinComplexityPolicy.map(JSONValue.bool) ?? .null),
            ("uvCountSinceLastPinEntry", info.uvCountSinceLastPINEntry.map { .integer(Int64(clamping: $0)) } ?? .null),
        ])
    }
}

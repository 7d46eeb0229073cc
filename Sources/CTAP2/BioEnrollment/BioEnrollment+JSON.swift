import _SecurityKeyInternals
import CBOR

extension FingerprintTemplate {
    /// The friendly name, nil when the key stores none or an empty one.
    public var shownName: String? { friendlyName.flatMap { $0.isEmpty ? nil : $0 } }

    /// The template as a JSON document (`securitykey bio list --json`): its ID in base64url and
    /// its name (null when it has none).
    public var json: JSONValue {
        .members([("id", .string(Base64URL.encode(id))), ("name", shownName.map(JSONValue.string) ?? .null)])
    }
}

extension BioEnrollment.Sample {
    /// The sample, the `number`th of an enrollment, as a JSON document (`bio enroll --json`):
    /// its status by name and code, and the samples still needed.
    public func json(number: Int) -> JSONValue {
        .members([
            ("sample", .integer(Int64(number))), ("status", .string(status.name)),
            ("statusCode", .unsigned(status.rawValue)), ("remaining", .unsigned(remainingSamples)),
        ])
    }
}

extension BioEnrollment.SensorInfo {
    /// The sensor of the key at `device` as a JSON document (`bio info --json`): its modality
    /// (fingerprint when the key does not say), kind, samples per enrollment and longest name
    /// (null when not reported), and whether a finger is `enrolled`.
    public func json(device: String, enrolled: Bool) -> JSONValue {
        .members([
            ("device", .string(device)),
            ("modality", .string(modality?.description ?? BioModality.fingerprint.description)),
            ("fingerprintKind", fingerprintKind.map { .string($0.description) } ?? .null),
            ("samplesRequired", maxCaptureSamplesRequiredForEnroll.map { .unsigned($0) } ?? .null),
            ("maxNameLength", maxTemplateFriendlyName.map { .unsigned($0) } ?? .null),
            ("enrolled", .bool(enrolled)),
        ])
    }
}

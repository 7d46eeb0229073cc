import CTAP2

/// What a fleet's keys must satisfy (`securitykey fleet --policy FILE`): each rule is optional,
/// and a key passes when it breaks none. A key that could not be inspected never passes.
///
/// Decoded from JSON whose member names are the property names; an unknown member is refused,
/// so that a misspelt rule is never silently ignored.
public struct FleetPolicy: Sendable, Hashable, Decodable {
    /// AAGUIDs allowed (UUID text, any case); nil allows any.
    public var allowedAAGUIDs: [String]?
    /// Model names allowed, as the metadata names them; nil allows any.
    public var allowedModels: [String]?
    /// The lowest firmwareVersion getInfo may report; a key that reports none fails.
    public var minimumFirmware: UInt64?
    /// Whether a PIN must be set.
    public var pinRequired: Bool?
    /// The lowest minPINLength the key may enforce.
    public var minimumPINLength: Int?
    /// Metadata statuses (`REVOKED`, `ATTESTATION_KEY_COMPROMISE` ...) refused when they are a
    /// key's latest status.
    public var refusedStatuses: [String]?
    /// The lowest FIDO certification level the key's model must hold for its firmware:
    /// `L1`, `L1plus`, `L2`, `L2plus`, `L3` or `L3plus` (or the whole status word,
    /// `FIDO_CERTIFIED_L2`).
    public var minimumCertificationLevel: String?
    /// Whether alwaysUv must be on (true) or off (false).
    public var alwaysUV: Bool?
    /// Whether the key must pass the touch-free health check (default true).
    public var healthRequired: Bool?
    /// Whether the key must not demand a PIN change.
    public var forbidForcePINChange: Bool?

    /// A policy; every rule left nil is not checked.
    public init(
        allowedAAGUIDs: [String]? = nil, allowedModels: [String]? = nil, minimumFirmware: UInt64? = nil,
        pinRequired: Bool? = nil, minimumPINLength: Int? = nil, refusedStatuses: [String]? = nil,
        alwaysUV: Bool? = nil, healthRequired: Bool? = nil, forbidForcePINChange: Bool? = nil,
        minimumCertificationLevel: String? = nil
    ) {
        self.minimumCertificationLevel = minimumCertificationLevel
        self.allowedAAGUIDs = allowedAAGUIDs
        self.allowedModels = allowedModels
        self.minimumFirmware = minimumFirmware
        self.pinRequired = pinRequired
        self.minimumPINLength = minimumPINLength
        self.refusedStatuses = refusedStatuses
        self.alwaysUV = alwaysUV
        self.healthRequired = healthRequired
        self.forbidForcePINChange = forbidForcePINChange
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case allowedAAGUIDs, allowedModels, minimumFirmware, pinRequired, minimumPINLength, refusedStatuses
        case alwaysUV = "alwaysUv"
        case healthRequired, forbidForcePINChange, minimumCertificationLevel
    }

    /// The certification levels in ascending order (FIDO Authenticator Certification Levels).
    public static let certificationLevels = ["L1", "L1plus", "L2", "L2plus", "L3", "L3plus"]

    /// The rank of a level (`L2`) or status word (`FIDO_CERTIFIED_L2`) among
    /// ``certificationLevels``; nil for anything else (a level-less FIDO_CERTIFIED included).
    public static func certificationRank(_ text: String) -> Int? {
        let level = text.hasPrefix("FIDO_CERTIFIED_") ? String(text.dropFirst("FIDO_CERTIFIED_".count)) : text
        return certificationLevels.firstIndex(of: level)
    }

    /// A key any name can stand for, to see every member the file has.
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes a policy, refusing members it does not know.
    public init(from decoder: any Decoder) throws {
        let all = try decoder.container(keyedBy: AnyKey.self)
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = all.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [AnyKey(stringValue: unknown)],
                    debugDescription:
                        "Unknown policy rule \"\(unknown)\"; the rules are \(CodingKeys.allCases.map(\.rawValue).joined(separator: ", "))."
                ))
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allowedAAGUIDs = try c.decodeIfPresent([String].self, forKey: .allowedAAGUIDs)
        allowedModels = try c.decodeIfPresent([String].self, forKey: .allowedModels)
        minimumFirmware = try c.decodeIfPresent(UInt64.self, forKey: .minimumFirmware)
        pinRequired = try c.decodeIfPresent(Bool.self, forKey: .pinRequired)
        minimumPINLength = try c.decodeIfPresent(Int.self, forKey: .minimumPINLength)
        refusedStatuses = try c.decodeIfPresent([String].self, forKey: .refusedStatuses)
        alwaysUV = try c.decodeIfPresent(Bool.self, forKey: .alwaysUV)
        healthRequired = try c.decodeIfPresent(Bool.self, forKey: .healthRequired)
        forbidForcePINChange = try c.decodeIfPresent(Bool.self, forKey: .forbidForcePINChange)
        minimumCertificationLevel = try c.decodeIfPresent(String.self, forKey: .minimumCertificationLevel)
        if let level = minimumCertificationLevel, Self.certificationRank(level) == nil {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [CodingKeys.minimumCertificationLevel],
                    debugDescription:
                        "\"\(level)\" is not a certification level; the levels are \(Self.certificationLevels.joined(separator: ", "))."
                ))
        }
        for text in allowedAAGUIDs ?? [] where AAGUID(uuidString: text) == nil {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [CodingKeys.allowedAAGUIDs], debugDescription: "\"\(text)\" is not a UUID."))
        }
    }

    /// What the metadata (MDS) says of a key, for the rules that need it; the device layer does
    /// not read metadata itself.
    public struct Metadata: Sendable, Hashable {
        /// The model name.
        public var model: String?
        /// The latest status report's status (`FIDO_CERTIFIED_L1`, `REVOKED` ...) that
        /// concerns the key's firmware.
        public var latestStatus: String?
        /// The latest certification status word that concerns the key's firmware.
        public var certification: String?

        /// Creates metadata facts.
        public init(model: String? = nil, latestStatus: String? = nil, certification: String? = nil) {
            self.model = model
            self.latestStatus = latestStatus
            self.certification = certification
        }
    }

    /// A rule a key breaks: the policy member's name and one sentence.
    public struct Violation: Sendable, Hashable {
        /// The policy member broken (`pinRequired`, `allowedAAGUIDs` ...), `inspection` for a
        /// key that could not be inspected, `attestation` for one not proven genuine.
        public var rule: String
        /// One sentence for people.
        public var message: String

        /// A violation of `rule`, explained by `message`.
        public init(rule: String, message: String) {
            self.rule = rule
            self.message = message
        }

        init(_ rule: CodingKeys, _ message: String) { self.init(rule: rule.rawValue, message: message) }
    }

    /// The rules `report` breaks, one sentence each; empty when it complies.
    public func violations(of report: FleetKeyReport, metadata: Metadata? = nil) -> [String] {
        ruleViolations(of: report, metadata: metadata).map(\.message)
    }

    /// The rules `report` breaks, each with its name; empty when it complies.
    public func ruleViolations(of report: FleetKeyReport, metadata: Metadata? = nil) -> [Violation] {
        guard let info = report.info, report.problem == nil else {
            return [
                Violation(rule: "inspection", message: "The key could not be inspected: \(report.problem?.message ?? "no getInfo").")
            ]
        }
        var reasons: [Violation] = []
        let aaguid = info.aaguid.description.lowercased()
        if let allowed = allowedAAGUIDs, !allowed.contains(where: { $0.lowercased() == aaguid }) {
            reasons.append(Violation(.allowedAAGUIDs, "AAGUID \(aaguid) is not allowed."))
        }
        if let allowed = allowedModels {
            if let model = metadata?.model {
                if !allowed.contains(model) { reasons.append(Violation(.allowedModels, "Model \"\(model)\" is not allowed.")) }
            } else {
                reasons.append(Violation(.allowedModels, "The model is unknown (no metadata for AAGUID \(aaguid))."))
            }
        }
        if let minimumFirmware {
            if let firmware = info.firmwareVersion {
                if firmware < minimumFirmware {
                    reasons.append(Violation(.minimumFirmware, "Firmware \(firmware) is older than \(minimumFirmware)."))
                }
            } else {
                reasons.append(Violation(.minimumFirmware, "The key reports no firmware version (at least \(minimumFirmware) is required)."))
            }
        }
        if pinRequired == true, info.options[.clientPIN] != true {
            reasons.append(Violation(.pinRequired, "No PIN is set."))
        }
        if let minimumPINLength {
            let enforced = report.pinStatus?.minPINLength ?? Int(clamping: info.minPINLength ?? 4)
            if enforced < minimumPINLength {
                reasons.append(Violation(.minimumPINLength, "The key accepts PINs of \(enforced) characters; at least \(minimumPINLength) are required."))
            }
        }
        if let alwaysUV, info.isEnabled(.alwaysUV) != alwaysUV {
            reasons.append(Violation(.alwaysUV, alwaysUV ? "alwaysUv is off." : "alwaysUv is on."))
        }
        if forbidForcePINChange == true, info.forcePINChange == true {
            reasons.append(Violation(.forbidForcePINChange, "The key demands a PIN change."))
        }
        if let refused = refusedStatuses, let status = metadata?.latestStatus, refused.contains(status) {
            reasons.append(Violation(.refusedStatuses, "The metadata status is \(status)."))
        }
        if let minimum = minimumCertificationLevel, let required = Self.certificationRank(minimum) {
            if let held = metadata?.certification {
                if (Self.certificationRank(held) ?? -1) < required {
                    reasons.append(Violation(.minimumCertificationLevel, "The model's certification is \(held); at least \(Self.certificationLevels[required]) is required."))
                }
            } else {
                reasons.append(Violation(.minimumCertificationLevel, "No FIDO certification is known for the model (at least \(Self.certificationLevels[required]) is required)."))
            }
        }
        if healthRequired ?? true, !report.health.isHealthy {
            reasons.append(Violation(.healthRequired, "Health check failed: \(report.health.failure?.message ?? "no answer")."))
        }
        return reasons
    }
}

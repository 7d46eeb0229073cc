import _SecurityKeyInternals
import CBOR

/// The feedback on one fingerprint sample (CTAP 2.1 §6.7, lastEnrollSampleStatus table).
///
/// Values this library does not name keep their number, so nothing a key reports is lost.
public struct FingerprintSampleStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status number as the key sends it.
    public var rawValue: UInt64
    /// A status by number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// CTAP2_ENROLL_FEEDBACK_FP_GOOD (0x00): the sample was good.
    public static let good = FingerprintSampleStatus(rawValue: 0x00)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_HIGH (0x01): the finger was too high.
    public static let tooHigh = FingerprintSampleStatus(rawValue: 0x01)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_LOW (0x02): the finger was too low.
    public static let tooLow = FingerprintSampleStatus(rawValue: 0x02)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_LEFT (0x03): the finger was too far left.
    public static let tooLeft = FingerprintSampleStatus(rawValue: 0x03)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_RIGHT (0x04): the finger was too far right.
    public static let tooRight = FingerprintSampleStatus(rawValue: 0x04)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_FAST (0x05): the finger moved too fast.
    public static let tooFast = FingerprintSampleStatus(rawValue: 0x05)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_SLOW (0x06): the finger moved too slowly.
    public static let tooSlow = FingerprintSampleStatus(rawValue: 0x06)
    /// CTAP2_ENROLL_FEEDBACK_FP_POOR_QUALITY (0x07): the sample was of poor quality.
    public static let poorQuality = FingerprintSampleStatus(rawValue: 0x07)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_SKEWED (0x08): the finger was at an angle.
    public static let tooSkewed = FingerprintSampleStatus(rawValue: 0x08)
    /// CTAP2_ENROLL_FEEDBACK_FP_TOO_SHORT (0x09): the finger touched too briefly.
    public static let tooShort = FingerprintSampleStatus(rawValue: 0x09)
    /// CTAP2_ENROLL_FEEDBACK_FP_MERGE_FAILURE (0x0A): the sample could not be merged.
    public static let mergeFailure = FingerprintSampleStatus(rawValue: 0x0A)
    /// CTAP2_ENROLL_FEEDBACK_FP_EXISTS (0x0B): the finger is already enrolled.
    public static let exists = FingerprintSampleStatus(rawValue: 0x0B)
    /// CTAP2_ENROLL_FEEDBACK_NO_USER_ACTIVITY (0x0D): no finger was presented.
    public static let noUserActivity = FingerprintSampleStatus(rawValue: 0x0D)
    /// CTAP2_ENROLL_FEEDBACK_NO_USER_PRESENCE_TRANSITION (0x0E): the finger was not lifted
    /// between samples.
    public static let noUserPresenceTransition = FingerprintSampleStatus(rawValue: 0x0E)

    /// Every named status, in number order (0x0C is unused in CTAP 2.1).
    public static let named: [FingerprintSampleStatus] = [
        .good, .tooHigh, .tooLow, .tooLeft, .tooRight, .tooFast, .tooSlow, .poorQuality, .tooSkewed, .tooShort,
        .mergeFailure, .exists, .noUserActivity, .noUserPresenceTransition,
    ]

    /// Whether the sample counted towards the enrollment.
    public var isGood: Bool { self == .good }

    /// A stable kebab-case name (`too-high`), or `status-0xNN` for an unnamed value.
    public var name: String {
        switch self {
        case .good: "good"
        case .tooHigh: "too-high"
        case .tooLow: "too-low"
        case .tooLeft: "too-left"
        case .tooRight: "too-right"
        case .tooFast: "too-fast"
        case .tooSlow: "too-slow"
        case .poorQuality: "poor-quality"
        case .tooSkewed: "too-skewed"
        case .tooShort: "too-short"
        case .mergeFailure: "merge-failure"
        case .exists: "exists"
        case .noUserActivity: "no-user-activity"
        case .noUserPresenceTransition: "no-user-presence-transition"
        default: "status-0x" + (rawValue < 0x10 ? "0" : "") + String(rawValue, radix: 16)
        }
    }

    /// One sentence of advice for the user.
    public var advice: String {
        switch self {
        case .good: "Good sample."
        case .tooHigh: "The finger was too high; place it lower."
        case .tooLow: "The finger was too low; place it higher."
        case .tooLeft: "The finger was too far left; move it right."
        case .tooRight: "The finger was too far right; move it left."
        case .tooFast: "The finger moved too fast; go slower."
        case .tooSlow: "The finger moved too slowly; go faster."
        case .poorQuality: "The sample was of poor quality; try again."
        case .tooSkewed: "The finger was at an angle; place it straight."
        case .tooShort: "The touch was too short; hold the finger longer."
        case .mergeFailure: "The sample did not match the previous ones; try again."
        case .exists: "This finger is already enrolled."
        case .noUserActivity: "No finger was detected."
        case .noUserPresenceTransition: "Lift the finger between samples."
        default: "The key reported sample status \(rawValue)."
        }
    }

    public var description: String { name }
}

/// How the sensor reads a finger (CTAP 2.1 §6.7, fingerprintKind).
public struct FingerprintKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The kind number as the key sends it.
    public var rawValue: UInt64
    /// A kind by number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// touch (0x01): the finger rests on the sensor.
    public static let touch = FingerprintKind(rawValue: 0x01)
    /// swipe (0x02): the finger is swiped across the sensor.
    public static let swipe = FingerprintKind(rawValue: 0x02)

    public var description: String {
        switch self {
        case .touch: "touch"
        case .swipe: "swipe"
        default: "kind-\(rawValue)"
        }
    }
}

/// An enrolled fingerprint as the key lists it (CTAP 2.1 §6.7, templateInfo).
public struct FingerprintTemplate: Hashable, Sendable {
    /// The template ID.
    public var id: [UInt8]
    /// Its friendly name, where it has one.
    public var friendlyName: String?

    /// Creates a template description.
    public init(id: [UInt8], friendlyName: String?) {
        self.id = id
        self.friendlyName = friendlyName
    }

    /// Whether `id` can be a template ID: 1 to ``BioEnrollmentRequest/maxTemplateIDLength``
    /// bytes (CTAP 2.1 §6.7).
    public static func isValidID(_ id: [UInt8]) -> Bool {
        !id.isEmpty && id.count <= BioEnrollmentRequest.maxTemplateIDLength
    }

    /// The template ID `text` spells in base64url (as `bio list` prints them), or nil when it is
    /// not base64url of a valid ID.
    public static func id(base64URL text: some StringProtocol) -> [UInt8]? {
        guard let id = Base64URL.decode(text), isValidID(id) else { return nil }
        return id
    }
}

/// The authenticatorBioEnrollment response (CTAP 2.1 §6.7, response table): each subcommand
/// fills its own members; cancel, setFriendlyName and removeEnrollment answer with an empty body.
public struct BioEnrollmentResponse: CTAP2Response, Hashable {
    /// The CBOR keys of the response.
    public enum Key {
        /// modality (0x01).
        public static let modality: CBORValue = 0x01
        /// fingerprintKind (0x02).
        public static let fingerprintKind: CBORValue = 0x02
        /// maxCaptureSamplesRequiredForEnroll (0x03).
        public static let maxCaptureSamplesRequiredForEnroll: CBORValue = 0x03
        /// templateId (0x04).
        public static let templateID: CBORValue = 0x04
        /// lastEnrollSampleStatus (0x05).
        public static let lastEnrollSampleStatus: CBORValue = 0x05
        /// remainingSamples (0x06).
        public static let remainingSamples: CBORValue = 0x06
        /// templateInfos (0x07).
        public static let templateInfos: CBORValue = 0x07
        /// maxTemplateFriendlyName (0x08).
        public static let maxTemplateFriendlyName: CBORValue = 0x08
    }

    /// The CBOR keys of one templateInfo.
    public enum TemplateInfoKey {
        /// templateId (0x01).
        public static let templateID: CBORValue = 0x01
        /// templateFriendlyName (0x02).
        public static let templateFriendlyName: CBORValue = 0x02
    }

    /// Bounds on what a key may claim; far above shipped sensors (5–10 fingers, 5–16 samples,
    /// 15–64-byte names), low enough that a hostile key cannot make a caller loop or allocate.
    public enum Limit {
        /// The most templates an enumeration accepts.
        public static let templates = 256
        /// The most samples a key may ask for.
        public static let samples: UInt64 = 255
        /// The longest friendly name accepted, in bytes.
        public static let friendlyName = 1024
    }

    /// The modality (getModality, getFingerprintSensorInfo).
    public var modality: BioModality?
    /// How the sensor reads a finger (getFingerprintSensorInfo).
    public var fingerprintKind: FingerprintKind?
    /// Good samples needed for an enrollment (getFingerprintSensorInfo).
    public var maxCaptureSamplesRequiredForEnroll: UInt64?
    /// The new template's ID (enrollBegin).
    public var templateID: [UInt8]?
    /// The feedback on the sample just taken (enrollBegin, enrollCaptureNextSample).
    public var lastEnrollSampleStatus: FingerprintSampleStatus?
    /// Good samples still needed (enrollBegin, enrollCaptureNextSample).
    public var remainingSamples: UInt64?
    /// The enrolled templates (enumerateEnrollments).
    public var templateInfos: [FingerprintTemplate]?
    /// The longest friendly name the key stores, in bytes (getFingerprintSensorInfo).
    public var maxTemplateFriendlyName: UInt64?

    /// Parses the body of a successful reply; an empty body gives an empty response.
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        if bytes.isEmpty {
            self.init()
            return
        }
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "bioEnrollment response"))
    }

    /// Parses a decoded response map: every member is type-checked, template IDs and names
    /// and counts are bounded by ``Limit``.
    public init(map: CBORMap) throws(CTAP2Error) {
        let context = "bioEnrollment response"
        let r = FieldReader(map, context)
        modality = try r.uint(Key.modality, "modality").map(BioModality.init(rawValue:))
        fingerprintKind = try r.uint(Key.fingerprintKind, "fingerprintKind").map(FingerprintKind.init(rawValue:))
        maxCaptureSamplesRequiredForEnroll = try r.uint(
            Key.maxCaptureSamplesRequiredForEnroll, "maxCaptureSamplesRequiredForEnroll")
        if let samples = maxCaptureSamplesRequiredForEnroll, samples > Limit.samples {
            throw CTAP2Error.malformed("The key claims to need \(samples) samples per enrollment.")
        }
        templateID = try r.bytes(Key.templateID, "templateId")
        if let templateID { try Self.checkTemplateID(templateID, context) }
        lastEnrollSampleStatus = try r.uint(Key.lastEnrollSampleStatus, "lastEnrollSampleStatus").map(
            FingerprintSampleStatus.init(rawValue:))
        remainingSamples = try r.uint(Key.remainingSamples, "remainingSamples")
        if let remaining = remainingSamples, remaining > Limit.samples {
            throw CTAP2Error.malformed("The key claims \(remaining) samples remain.")
        }
        if let items = try r.array(Key.templateInfos, "templateInfos") {
            guard items.count <= Limit.templates else {
                throw CTAP2Error.malformed("The key lists \(items.count) fingerprints, more than \(Limit.templates).")
            }
            var templates: [FingerprintTemplate] = []
            templates.reserveCapacity(items.count)
            for item in items {
                guard let m = item.mapValue else {
                    throw CTAP2Error.malformed("A templateInfo in the \(context) is not a map.")
                }
                let t = FieldReader(m, "templateInfo of the \(context)")
                guard let id = try t.bytes(TemplateInfoKey.templateID, "templateId") else {
                    throw t.missing("templateId")
                }
                try Self.checkTemplateID(id, context)
                let name = try t.text(TemplateInfoKey.templateFriendlyName, "templateFriendlyName")
                if let name, name.utf8.count > Limit.friendlyName {
                    throw CTAP2Error.malformed("A fingerprint's friendly name is \(name.utf8.count) bytes long.")
                }
                templates.append(FingerprintTemplate(id: id, friendlyName: name))
            }
            templateInfos = templates
        }
        maxTemplateFriendlyName = try r.uint(Key.maxTemplateFriendlyName, "maxTemplateFriendlyName")
    }

    private init() {}

    private static func checkTemplateID(_ id: [UInt8], _ context: String) throws(CTAP2Error) {
        guard FingerprintTemplate.isValidID(id) else {
            throw CTAP2Error.malformed(
                "A templateId in the \(context) is \(id.count) bytes, not 1 to \(BioEnrollmentRequest.maxTemplateIDLength)."
            )
        }
    }
}

import CBOR
import Transport

extension CTAPCommand {
    /// authenticatorBioEnrollment (§6.7).
    public static let bioEnrollment = CTAPCommand(rawValue: 0x09)
    /// authenticatorBioEnrollment as FIDO_2_1_PRE keys number it (vendor command 0x40).
    public static let bioEnrollmentPreview = CTAPCommand(rawValue: 0x40)
}

extension CTAPStatus {
    /// CTAP2_ERR_FP_DATABASE_FULL: no room for another fingerprint template.
    public static let fingerprintDatabaseFull = CTAPStatus(rawValue: 0x17)
}

/// The feedback the simulated sensor gives on one enrollment sample (CTAP 2.1 §6.7,
/// lastEnrollSampleStatus); any byte can be scripted, the named ones by their CLI names.
public struct FingerprintSampleFeedback: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status byte as sent.
    public var rawValue: UInt8
    /// A status by number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// FP_GOOD (0x00): the sample counts.
    public static let good = FingerprintSampleFeedback(rawValue: 0x00)

    /// The names `virtual serve --bio-samples` takes, by status byte (0x0C is unused).
    public static let names: [(String, UInt8)] = [
        ("good", 0x00), ("too-high", 0x01), ("too-low", 0x02), ("too-left", 0x03), ("too-right", 0x04),
        ("too-fast", 0x05), ("too-slow", 0x06), ("poor-quality", 0x07), ("too-skewed", 0x08), ("too-short", 0x09),
        ("merge-failure", 0x0A), ("exists", 0x0B), ("no-user-activity", 0x0D), ("no-user-presence-transition", 0x0E),
    ]

    /// The status with this name, if any.
    public init?(name: String) {
        guard let entry = Self.names.first(where: { $0.0 == name }) else { return nil }
        self.init(rawValue: entry.1)
    }

    public var description: String {
        Self.names.first(where: { $0.1 == rawValue })?.0 ?? "0x" + String(rawValue, radix: 16)
    }
}

/// One scripted finger placement during enrollment.
public enum ScriptedFingerprintSample: Sendable, Hashable, CustomStringConvertible {
    /// A finger is placed and the sensor answers this feedback (only good ones count).
    case feedback(FingerprintSampleFeedback)
    /// No finger comes: the request waits out its timeout and fails with
    /// CTAP2_ERR_USER_ACTION_TIMEOUT.
    case noFinger

    /// Parses a comma-separated script: feedback names (`good,too-high,...`) and `timeout`.
    public static func parse(_ text: String) throws(VirtualKeyError) -> [ScriptedFingerprintSample] {
        var out: [ScriptedFingerprintSample] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(part.filter { !$0.isWhitespace })
            if name == "timeout" {
                out.append(.noFinger)
            } else if let feedback = FingerprintSampleFeedback(name: name) {
                out.append(.feedback(feedback))
            } else {
                let known = FingerprintSampleFeedback.names.map(\.0).joined(separator: ", ")
                throw VirtualKeyError(
                    .invalidConfiguration, "\"\(name)\" is not a fingerprint sample; use \(known) or timeout.")
            }
        }
        return out
    }

    public var description: String {
        switch self {
        case .feedback(let f): f.description
        case .noFinger: "timeout"
        }
    }
}

extension VirtualKey {
    /// A simulated fingerprint sensor (CTAP 2.1 §6.7): templates are enrolled with
    /// authenticatorBioEnrollment (0x09, or 0x40 on a FIDO_2_1_PRE key) from scripted samples,
    /// kept in the state, and matched by built-in user verification according to
    /// ``UserVerificationPolicy``. getInfo's `uv` and `bioEnroll` (or `userVerificationMgmtPreview`)
    /// are true exactly when a finger is enrolled.
    public struct FingerprintSensor: Sendable, Hashable {
        /// Good samples an enrollment needs (maxCaptureSamplesRequiredForEnroll).
        public var samplesRequired: Int
        /// How many templates fit; enrollBegin answers CTAP2_ERR_FP_DATABASE_FULL past it.
        public var maxTemplates: Int
        /// The longest friendly name, in bytes (maxTemplateFriendlyName).
        public var maxFriendlyNameLength: Int
        /// How long a capture waits for a finger when the request gives no timeoutMilliseconds.
        public var captureTimeout: Duration
        /// The samples the user presents, in order, across enrollments; good ones once it runs out.
        public var samples: [ScriptedFingerprintSample]

        /// A touch sensor needing four good samples, room for five fingers and 32-byte names.
        public init(
            samplesRequired: Int = 4, maxTemplates: Int = 5, maxFriendlyNameLength: Int = 32,
            captureTimeout: Duration = .seconds(10), samples: [ScriptedFingerprintSample] = []
        ) {
            self.samplesRequired = samplesRequired
            self.maxTemplates = maxTemplates
            self.maxFriendlyNameLength = maxFriendlyNameLength
            self.captureTimeout = captureTimeout
            self.samples = samples
        }

        func validate() throws(VirtualKeyError) {
            guard (1...50).contains(samplesRequired), (1...100).contains(maxTemplates),
                (1...255).contains(maxFriendlyNameLength), captureTimeout > .zero
            else {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "The fingerprint sensor needs 1–50 samples, room for 1–100 fingers, 1–255-byte names and a positive timeout."
                )
            }
        }
    }

    /// authenticatorBioEnrollment parameters (CTAP 2.1 §6.7).
    enum BioEnrollmentParameter {
        static let modality = 0x01
        static let subCommand = 0x02
        static let subCommandParams = 0x03
        static let pinUvAuthProtocol = 0x04
        static let pinUvAuthParam = 0x05
        static let getModality = 0x06
    }

    /// Members of bio enrollment's subCommandParams and of a templateInfo.
    enum BioEnrollmentSubParameter {
        static let templateID = 0x01
        static let templateFriendlyName = 0x02
        static let timeoutMilliseconds = 0x03
    }

    /// authenticatorBioEnrollment response members (CTAP 2.1 §6.7 "Response").
    enum BioEnrollmentResponseMember {
        static let modality = 0x01
        static let fingerprintKind = 0x02
        static let maxCaptureSamplesRequiredForEnroll = 0x03
        static let templateID = 0x04
        static let lastEnrollSampleStatus = 0x05
        static let remainingSamples = 0x06
        static let templateInfos = 0x07
        static let maxTemplateFriendlyName = 0x08
    }

    /// Fingerprint subcommands (CTAP 2.1 §6.7).
    enum BioSubcommand {
        static let enrollBegin: UInt64 = 0x01
        static let enrollCaptureNextSample: UInt64 = 0x02
        static let cancelCurrentEnrollment: UInt64 = 0x03
        static let enumerateEnrollments: UInt64 = 0x04
        static let setFriendlyName: UInt64 = 0x05
        static let removeEnrollment: UInt64 = 0x06
        static let getFingerprintSensorInfo: UInt64 = 0x07
    }

    /// The fingerprint modality, the touch kind, and getInfo's uvModality for an internal
    /// fingerprint sensor (FIDO Registry USER_VERIFY_FINGERPRINT_INTERNAL).
    static let fingerprintModality = 0x01
    static let touchSensor = 0x01
    static let fingerprintUVModality = 0x02
    static let getInfoPreferredPlatformUVAttempts = 0x11
    static let getInfoUVModality = 0x12

    /// The enrolled fingerprints, as ID and friendly name (for tests and tools).
    public var fingerprintEnrollments: [(id: [UInt8], name: String?)] {
        state.fingerprints.map { ($0.templateID, $0.friendlyName) }
    }

    /// Replaces the scripted samples still to come (the configured script is dropped).
    public func setFingerprintSamples(_ samples: [ScriptedFingerprintSample]) {
        bioSession.script = samples
        bioSession.consumed = 0
    }

    /// Whether built-in user verification is configured now: the `uv` option of a key without
    /// a sensor, or a fingerprint sensor with a finger enrolled (CTAP 2.1 §6.4 `uv`).
    var hasBuiltInUserVerification: Bool {
        configuration.fingerprintSensor == nil
            ? configuration.hasBuiltInUserVerification : !state.fingerprints.isEmpty
    }

    /// Whether the key has a built-in verification method at all, configured or not (getUVRetries works).
    var hasUserVerificationSensor: Bool {
        configuration.fingerprintSensor != nil || configuration.hasBuiltInUserVerification
    }

    /// Whether the sensor is offered as the FIDO_2_1_PRE preview (`userVerificationMgmtPreview`, 0x40).
    var bioEnrollmentIsPreview: Bool { !configuration.isCTAP21 && configuration.versions.contains("FIDO_2_1_PRE") }

    /// getInfo's bio members: `bioEnroll` (or the preview option) and `uv` follow the enrollments;
    /// uvModality names a fingerprint sensor.
    func addFingerprintSensorInfo(options: inout CBORMap, info: inout CBORMap) {
        guard configuration.fingerprintSensor != nil else { return }
        let enrolled = !state.fingerprints.isEmpty
        options[bioEnrollmentIsPreview ? "userVerificationMgmtPreview" : "bioEnroll"] = .boolean(enrolled)
        options["uv"] = .boolean(enrolled)
        info[Self.getInfoUVModality] = .int(Self.fingerprintUVModality)
        info[Self.getInfoPreferredPlatformUVAttempts] = .int(1)
    }

    /// Forgets every fingerprint and the enrollment in progress (authenticatorReset).
    func eraseFingerprints() {
        state.fingerprints = []
        bioSession.pending = nil
    }

    /// authenticatorBioEnrollment (CTAP 2.1 §6.7), or its FIDO_2_1_PRE form (command 0x40,
    /// tokens without permissions).
    func bioEnrollment(
        _ raw: ArraySlice<UInt8>, command: CTAPCommand, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap? {
        typealias P = BioEnrollmentParameter
        typealias R = BioEnrollmentResponseMember
        guard let sensor = configuration.fingerprintSensor,
            command == (bioEnrollmentIsPreview ? .bioEnrollmentPreview : .bioEnrollment)
        else {
            throw .rejected(.invalidCommand, "Command \(command) is not supported.")
        }
        let preview = command == .bioEnrollmentPreview
        let p = try CTAPParameters(request: raw, context: "bioEnrollment")
        if try p.boolean(P.getModality) == true {
            return [.int(R.modality): .int(Self.fingerprintModality)]
        }
        guard let modality = try p.unsigned(P.modality, required: true),
            let sub = try p.unsigned(P.subCommand, required: true)
        else { throw .rejected(.missingParameter, "bioEnrollment lacks its modality or subCommand.") }
        guard modality == UInt64(Self.fingerprintModality) else {
            throw .rejected(.unsupportedOption, "This key's sensor reads fingerprints only.")
        }
        let params = try p.nested(P.subCommandParams, "subCommandParams")
        switch sub {
        case BioSubcommand.getFingerprintSensorInfo:
            return [
                .int(R.modality): .int(Self.fingerprintModality), .int(R.fingerprintKind): .int(Self.touchSensor),
                .int(R.maxCaptureSamplesRequiredForEnroll): .int(sensor.samplesRequired),
                .int(R.maxTemplateFriendlyName): .int(sensor.maxFriendlyNameLength),
            ]
        case BioSubcommand.cancelCurrentEnrollment:
            bioSession.pending = nil
            return nil
        case BioSubcommand.enrollBegin...BioSubcommand.removeEnrollment:
            break
        default:
            throw .rejected(.invalidSubcommand, "bioEnrollment subcommand \(sub) is not known.")
        }
        // Every other subcommand is authenticated over modality ‖ subCommand ‖ CBOR(params).
        guard let param = try p.bytes(P.pinUvAuthParam) else {
            throw .rejected(.puatRequired, "bioEnrollment subcommand \(sub) needs a pinUvAuthParam.")
        }
        guard let pinProtocol = try p.unsigned(P.pinUvAuthProtocol) else {
            throw .rejected(.missingParameter, "pinUvAuthParam came without pinUvAuthProtocol.")
        }
        var message: [UInt8] = [UInt8(Self.fingerprintModality), UInt8(sub)]
        if let params { message += CBOREncoder.encode(.map(params.map)) }
        // FIDO_2_1_PRE had no permissions: any token of this power-up will do.
        try verifyPinUvAuthParam(
            param, protocol: pinProtocol, message: message, permission: preview ? [] : .bioEnrollment, rpID: nil,
            bindsRP: false)

        let timeout = try params?.unsigned(BioEnrollmentSubParameter.timeoutMilliseconds).map {
            Duration.milliseconds(Int64(clamping: min($0, 600_000)))
        }
        switch sub {
        case BioSubcommand.enrollBegin:
            guard state.fingerprints.count < sensor.maxTemplates else {
                throw .rejected(.fingerprintDatabaseFull, "No room for another fingerprint.")
            }
            var id: [UInt8]
            repeat { id = randomBytes(2) } while state.fingerprints.contains { $0.templateID == id }
            bioSession.pending = PendingFingerprintEnrollment(templateID: id, remaining: sensor.samplesRequired)
            var response = try await captureSample(sensor, timeout: timeout, keepalive: keepalive)
            response[.int(R.templateID)] = .byteString(id)
            return response
        case BioSubcommand.enrollCaptureNextSample:
            guard let id = try params?.bytes(BioEnrollmentSubParameter.templateID) else {
                throw .rejected(.missingParameter, "enrollCaptureNextSample lacks its templateId.")
            }
            guard bioSession.pending?.templateID == id else {
                throw .rejected(.invalidParameter, "No enrollment of this template is in progress.")
            }
            return try await captureSample(sensor, timeout: timeout, keepalive: keepalive)
        case BioSubcommand.enumerateEnrollments:
            guard !state.fingerprints.isEmpty else {
                throw .rejected(.invalidOption, "No fingerprint is enrolled.")
            }
            return [
                .int(R.templateInfos): .array(
                    state.fingerprints.map { f in
                        .map([
                            .int(BioEnrollmentSubParameter.templateID): .byteString(f.templateID),
                            .int(BioEnrollmentSubParameter.templateFriendlyName): .textString(f.friendlyName ?? ""),
                        ])
                    })
            ]
        case BioSubcommand.setFriendlyName:
            guard let id = try params?.bytes(BioEnrollmentSubParameter.templateID),
                let name = try params?.text(BioEnrollmentSubParameter.templateFriendlyName)
            else { throw .rejected(.missingParameter, "setFriendlyName lacks its templateId or name.") }
            guard name.utf8.count <= sensor.maxFriendlyNameLength else {
                throw .rejected(.invalidParameter, "The name is longer than maxTemplateFriendlyName.")
            }
            guard let index = state.fingerprints.firstIndex(where: { $0.templateID == id }) else {
                throw .rejected(.invalidOption, "No fingerprint has this template ID.")
            }
            state.fingerprints[index].friendlyName = name
            try persist()
            return nil
        default:  // removeEnrollment
            guard let id = try params?.bytes(BioEnrollmentSubParameter.templateID) else {
                throw .rejected(.missingParameter, "removeEnrollment lacks its templateId.")
            }
            guard let index = state.fingerprints.firstIndex(where: { $0.templateID == id }) else {
                throw .rejected(.invalidOption, "No fingerprint has this template ID.")
            }
            state.fingerprints.remove(at: index)
            try persist()
            return nil
        }
    }

    /// Takes the next scripted sample for the enrollment in progress and answers
    /// lastEnrollSampleStatus and remainingSamples; the last good sample stores the template.
    private func captureSample(
        _ sensor: FingerprintSensor, timeout: Duration?, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap {
        keepalive(.userPresenceNeeded)
        let next: ScriptedFingerprintSample
        let script = bioSession.script ?? sensor.samples
        if bioSession.consumed < script.count {
            next = script[bioSession.consumed]
            bioSession.consumed += 1
        } else {
            next = .feedback(.good)
        }
        let feedback: FingerprintSampleFeedback
        switch next {
        case .feedback(let f): feedback = f
        case .noFinger:
            try await waitForAbsentFinger(timeout ?? sensor.captureTimeout, keepalive: keepalive)
            throw .rejected(.userActionTimeout, "No finger was placed on the sensor in time.")
        }
        guard var pending = bioSession.pending else {
            throw .rejected(.invalidParameter, "No enrollment is in progress.")
        }
        if feedback == .good { pending.remaining -= 1 }
        if pending.remaining == 0 {
            state.fingerprints.append(FingerprintTemplateRecord(templateID: pending.templateID, friendlyName: nil))
            bioSession.pending = nil
            try persist()
            logger.debug("fingerprint enrolled")
        } else {
            bioSession.pending = pending
        }
        return [
            .int(BioEnrollmentResponseMember.lastEnrollSampleStatus): .int(Int(feedback.rawValue)),
            .int(BioEnrollmentResponseMember.remainingSamples): .int(pending.remaining),
        ]
    }

    /// Waits `timeout` for a finger that never comes, reporting keepalives and honouring a
    /// cancel (CTAP2_ERR_KEEPALIVE_CANCEL).
    private func waitForAbsentFinger(
        _ timeout: Duration, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) {
        let clock = ContinuousClock()
        let end = clock.now + timeout
        while clock.now < end {
            keepalive(.userPresenceNeeded)
            do {
                try await Task.sleep(for: min(configuration.keepaliveInterval, end - clock.now))
            } catch {
                throw .rejected(.keepaliveCancel, "The request was cancelled while waiting for a finger.")
            }
        }
    }
}

/// What the simulated sensor keeps between requests: the enrollment in progress and how far
/// the sample script has run. Lost at power-up, as a real sensor's would be.
struct BioSensorSession: Sendable {
    /// The enrollment in progress.
    var pending: PendingFingerprintEnrollment?
    /// A script set at run time, replacing the configured one.
    var script: [ScriptedFingerprintSample]?
    /// How many scripted samples were used.
    var consumed = 0
}

/// A template being enrolled and the good samples it still needs.
struct PendingFingerprintEnrollment: Sendable {
    var templateID: [UInt8]
    var remaining: Int
}

/// A stored fingerprint template (nothing biometric: the simulation matches by policy).
struct FingerprintTemplateRecord: Sendable, Equatable {
    var templateID: [UInt8]
    var friendlyName: String?
}

extension VirtualKey.Configuration {
    /// This configuration with a simulated fingerprint sensor: `bioEnroll` (or, on a
    /// FIDO_2_1_PRE key, `userVerificationMgmtPreview`) and `uv` then follow the enrollments.
    public func withFingerprintSensor(_ sensor: VirtualKey.FingerprintSensor = .init()) -> Self {
        var copy = self
        copy.fingerprintSensor = sensor
        copy.options["uv"] = nil
        return copy
    }
}

extension CTAPParameters {
    /// A Boolean member under an integer key.
    func boolean(_ key: Int) throws(VirtualKeyError) -> Bool? {
        guard let v = map[.int(key)] else { return nil }
        guard let b = v.boolValue else { throw .rejected(.cborUnexpectedType, "\(context) member \(key) is not a Boolean.") }
        return b
    }
}

extension VirtualKeyState {
    enum FingerprintField {
        static let fingerprints = "fingerprints"
        static let id = "id"
        static let name = "name"
    }

    /// Adds the enrolled fingerprints to the state map (absent when none).
    func encodeFingerprints(into map: inout CBORMap) {
        guard !fingerprints.isEmpty else { return }
        map[FingerprintField.fingerprints] = .array(
            fingerprints.map { f in
                var m: CBORMap = [.textString(FingerprintField.id): .byteString(f.templateID)]
                if let name = f.friendlyName { m[.textString(FingerprintField.name)] = .textString(name) }
                return .map(m)
            })
    }

    /// Reads the enrolled fingerprints; files without them load with none.
    mutating func decodeFingerprints(_ map: CBORMap) throws(VirtualKeyError) {
        guard let v = map[FingerprintField.fingerprints] else { return }
        let damaged = VirtualKeyError(.stateFileCorrupt, "The state file's fingerprints field is damaged.")
        guard let list = v.arrayValue, list.count <= 100 else { throw damaged }
        fingerprints = []
        for item in list {
            guard let m = item.mapValue, let id = m[FingerprintField.id]?.bytesValue, (1...255).contains(id.count)
            else { throw damaged }
            var name: String?
            if let n = m[FingerprintField.name] {
                guard let text = n.stringValue else { throw damaged }
                name = text
            }
            fingerprints.append(FingerprintTemplateRecord(templateID: id, friendlyName: name))
        }
    }
}

extension VirtualKey {
    /// Whether an enrollment was begun and neither finished nor cancelled (for tests).
    public var fingerprintEnrollmentInProgress: Bool { bioSession.pending != nil }
}

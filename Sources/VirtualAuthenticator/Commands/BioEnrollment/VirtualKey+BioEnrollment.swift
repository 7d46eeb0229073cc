import _SecurityKeyInternals
import CBOR
import Transport

extension CTAPCommand {
    /// authenticatorBioEnrollment (§6.7).
    public static let bioEnrollment = CTAPCommand(rawValue: 0x09)
    /// authenticatorBioEnrollment as FIDO_2_1_PRE keys number it (vendor command 0x40).
    public static let bioEnrollmentPreview = CTAPCommand(rawValue: 0x40)
}


extension VirtualKey.CommandHandler {
    /// authenticatorBioEnrollment, offered when the key has a fingerprint sensor. Its token
    /// permission, be, comes from the PIN with `bioEnroll` or a sensor, from built-in UV with
    /// `uvBioEnroll`.
    static let bioEnrollment = VirtualKey.CommandHandler(
        .bioEnrollment, name: "bioEnrollment", isOffered: { $0.fingerprintSensor != nil },
        grants: { configuration, usingUV in
            let granted =
                usingUV
                ? configuration.options["uvBioEnroll"] == true
                : configuration.options["bioEnroll"] != nil || configuration.fingerprintSensor != nil
            return granted ? .bioEnrollment : []
        }
    ) { (key, parameters, command, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.bioEnrollment(parameters, command: command, keepalive: keepalive)
    }
    /// The FIDO_2_1_PRE bio enrollment, offered when the key has a fingerprint sensor.
    static let bioEnrollmentPreview = VirtualKey.CommandHandler(
        .bioEnrollmentPreview, name: "bioEnrollmentPreview", isOffered: { $0.fingerprintSensor != nil }
    ) { (key, parameters, command, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.bioEnrollment(parameters, command: command, keepalive: keepalive)
    }
}

extension CTAPStatus {
    /// CTAP2_ERR_FP_DATABASE_FULL: no room for another fingerprint template.
    public static let fingerprintDatabaseFull = CTAPStatus(rawValue: 0x17)
}

extension VirtualKey {
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
        info[Self.getInfoPreferredPlatformUVAttempts] = .int(configuration.ctap22.preferredPlatformUVAttempts)
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
            repeat { id = SystemRandom.bytes(2) } while state.fingerprints.contains { $0.templateID == id }
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

extension CTAPParameters {
    /// A Boolean member under an integer key.
    func boolean(_ key: Int) throws(VirtualKeyError) -> Bool? {
        guard let v = map[.int(key)] else { return nil }
        guard let b = v.boolValue else { throw .rejected(.cborUnexpectedType, "\(context) member \(key) is not a Boolean.") }
        return b
    }
}

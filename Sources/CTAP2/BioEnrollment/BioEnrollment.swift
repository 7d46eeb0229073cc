import CBOR
import Logging
import Transport

extension CTAP2Error.Code {
    /// The key holds no fingerprint template with the ID given (bio enrollment answered
    /// CTAP2_ERR_INVALID_OPTION to setFriendlyName or removeEnrollment, CTAP 2.1 §6.7.6–7).
    public static let templateNotFound = CTAP2Error.Code(rawValue: "template-not-found")
    /// The key has no room for another fingerprint (CTAP2_ERR_FP_DATABASE_FULL).
    public static let fingerprintDatabaseFull = CTAP2Error.Code(rawValue: "fingerprint-database-full")
}

/// The platform side of authenticatorBioEnrollment (CTAP 2.1 §6.7) for the fingerprint
/// modality: the sensor's description, enrollment one sample at a time, and the enrolled
/// templates listed, renamed and removed.
///
/// Keys that list only `userVerificationMgmtPreview` (FIDO_2_1_PRE) get the preview command
/// 0x40 with the same subcommands. The token, needed for everything but the sensor
/// description and cancelling, stays the caller's: this type never wipes it, and never logs it.
public struct BioEnrollment: Sendable {
    /// What getFingerprintSensorInfo reports.
    public struct SensorInfo: Hashable, Sendable {
        /// The modality (fingerprint).
        public var modality: BioModality?
        /// Touch or swipe, where reported.
        public var fingerprintKind: FingerprintKind?
        /// Good samples an enrollment needs, where reported.
        public var maxCaptureSamplesRequiredForEnroll: UInt64?
        /// The longest friendly name, in bytes, where reported.
        public var maxTemplateFriendlyName: UInt64?
    }

    /// The outcome of one capture: the feedback on the sample and how many good ones remain.
    public struct Sample: Hashable, Sendable {
        /// The feedback on the sample.
        public var status: FingerprintSampleStatus
        /// Good samples still needed; 0 completes the enrollment.
        public var remainingSamples: UInt64

        /// Creates a sample outcome.
        public init(status: FingerprintSampleStatus, remainingSamples: UInt64) {
            self.status = status
            self.remainingSamples = remainingSamples
        }
    }

    /// The session commands go through.
    public let session: CTAP2Session
    /// The getInfo response the command choice is based on.
    public let info: AuthenticatorInfo
    /// The token with the be permission, or nil for the unauthenticated subcommands only.
    public let token: PINUVAuthToken?
    /// The command byte used: 0x09, or 0x40 for the preview.
    public let command: CTAP2Command
    private let logger: Logger

    /// Uses `token` with the key described by `info`; fails when the key offers no bio
    /// enrollment.
    public init(
        session: CTAP2Session, info: AuthenticatorInfo, token: PINUVAuthToken?,
        logger: Logger = Logger(label: "securitykey.ctap2.bio")
    ) throws(CTAP2Error) {
        guard let command = BioEnrollmentRequest.command(for: info) else {
            throw CTAP2Error(.unsupportedOption, "The key does not offer fingerprint enrollment (bioEnroll).")
        }
        self.session = session
        self.info = info
        self.token = token
        self.command = command
        self.logger = logger
    }

    // MARK: Unauthenticated

    /// getModality: the key's user verification modality.
    public func modality(deadline: Deadline? = nil) async throws(CTAP2Error) -> BioModality {
        guard let modality = try await send(.getModality(command: command), deadline).modality else {
            throw CTAP2Error.malformed("The getModality response lacks its modality.")
        }
        return modality
    }

    /// getFingerprintSensorInfo: the sensor's kind and limits. A key that reports another
    /// modality than fingerprint is refused.
    public func sensorInfo(deadline: Deadline? = nil) async throws(CTAP2Error) -> SensorInfo {
        let response = try await send(.getFingerprintSensorInfo(command: command), deadline)
        if let modality = response.modality, modality != .fingerprint {
            throw CTAP2Error(.unsupportedOption, "The key's sensor is a \(modality) sensor, not a fingerprint sensor.")
        }
        return SensorInfo(
            modality: response.modality, fingerprintKind: response.fingerprintKind,
            maxCaptureSamplesRequiredForEnroll: response.maxCaptureSamplesRequiredForEnroll,
            maxTemplateFriendlyName: response.maxTemplateFriendlyName)
    }

    /// cancelCurrentEnrollment: abandons the enrollment in progress, if any.
    public func cancelEnrollment(deadline: Deadline? = nil) async throws(CTAP2Error) {
        _ = try await send(.cancelCurrentEnrollment(command: command), deadline)
    }

    // MARK: Enrolling

    /// enrollBegin: starts a template and captures its first sample; `timeout` bounds the
    /// key's wait for the finger. `keepalive` hears the key wait for the finger.
    public func beginEnrollment(
        timeout: Duration? = nil, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> (templateID: [UInt8], sample: Sample) {
        let request = try BioEnrollmentRequest.enrollBegin(
            timeoutMilliseconds: timeout.map { UInt64($0.wholeMilliseconds) }, token: try requireToken(),
            command: command)
        let response = try await send(request, deadline, keepalive: keepalive)
        guard let id = response.templateID else {
            throw CTAP2Error.malformed("The enrollBegin response lacks its templateId.")
        }
        return (id, try sample(response, "enrollBegin"))
    }

    /// enrollCaptureNextSample: one more sample for `templateID`.
    public func captureNextSample(
        templateID: [UInt8], timeout: Duration? = nil, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> Sample {
        let request = try BioEnrollmentRequest.enrollCaptureNextSample(
            templateID: templateID, timeoutMilliseconds: timeout.map { UInt64($0.wholeMilliseconds) },
            token: try requireToken(), command: command)
        return try sample(try await send(request, deadline, keepalive: keepalive), "enrollCaptureNextSample")
    }

    // MARK: Templates

    /// enumerateEnrollments: the enrolled templates; none gives an empty list (the key answers
    /// CTAP2_ERR_INVALID_OPTION then, §6.7.5).
    public func enrollments(deadline: Deadline? = nil) async throws(CTAP2Error) -> [FingerprintTemplate] {
        let request = try BioEnrollmentRequest.enumerateEnrollments(token: try requireToken(), command: command)
        do throws(CTAP2Error) {
            guard let templates = try await send(request, deadline).templateInfos else {
                throw CTAP2Error.malformed("The enumerateEnrollments response lacks its templateInfos.")
            }
            return templates
        } catch where error.status == .invalidOption {
            return []
        }
    }

    /// setFriendlyName: names the template `templateID`. A name longer than the key's
    /// maxTemplateFriendlyName (when it was read into `maxLength`) is refused before the key is asked.
    public func setFriendlyName(
        templateID: [UInt8], name: String, maxLength: UInt64? = nil, deadline: Deadline? = nil
    ) async throws(CTAP2Error) {
        if let maxLength, UInt64(name.utf8.count) > maxLength {
            throw CTAP2Error.invalidRequest(
                "The key stores fingerprint names of at most \(maxLength) bytes; \"\(name)\" has \(name.utf8.count).")
        }
        let request = try BioEnrollmentRequest.setFriendlyName(
            templateID: templateID, name: name, token: try requireToken(), command: command)
        try await sendNamingTemplate(request, deadline)
    }

    /// removeEnrollment: deletes the template `templateID`.
    public func removeEnrollment(templateID: [UInt8], deadline: Deadline? = nil) async throws(CTAP2Error) {
        let request = try BioEnrollmentRequest.removeEnrollment(
            templateID: templateID, token: try requireToken(), command: command)
        try await sendNamingTemplate(request, deadline)
    }

    // MARK: Internals

    private func requireToken() throws(CTAP2Error) -> PINUVAuthToken {
        guard let token else {
            throw CTAP2Error(
                .pinRequired, "Fingerprint enrollment needs a PIN/UV token with the bio enrollment permission.")
        }
        return token
    }

    private func sample(_ response: BioEnrollmentResponse, _ what: String) throws(CTAP2Error) -> Sample {
        guard let status = response.lastEnrollSampleStatus, let remaining = response.remainingSamples else {
            throw CTAP2Error.malformed("The \(what) response lacks lastEnrollSampleStatus or remainingSamples.")
        }
        return Sample(status: status, remainingSamples: remaining)
    }

    /// Sends a request naming a template; INVALID_OPTION means the key has no such template.
    private func sendNamingTemplate(_ request: BioEnrollmentRequest, _ deadline: Deadline?) async throws(CTAP2Error)
    {
        do throws(CTAP2Error) {
            _ = try await send(request, deadline)
        } catch where error.status == .invalidOption {
            throw CTAP2Error(
                .templateNotFound, "The key holds no fingerprint with this template ID.", underlying: error)
        }
    }

    private func send(
        _ request: BioEnrollmentRequest, _ deadline: Deadline?,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> BioEnrollmentResponse {
        let name = request.subCommand.map(\.description) ?? "getModality"
        logger.debug("bioEnrollment", metadata: ["subCommand": "\(name)"])
        do throws(CTAP2Error) {
            return try await session.send(request, deadline: deadline, keepalive: keepalive)
        } catch where error.status == .fingerprintDatabaseFull {
            throw CTAP2Error(
                .fingerprintDatabaseFull, "The key has no room for another fingerprint; delete one first.",
                status: error.status)
        } catch {
            logger.debug("bioEnrollment failed", metadata: ["subCommand": "\(name)", "code": "\(error.code)"])
            throw error
        }
    }
}

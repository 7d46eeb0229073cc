import _SecurityKeyInternals
import CBOR
import CTAP2
import Synchronization
import Transport

/// What a fingerprint enrollment reports as it goes.
public enum FingerprintEnrollmentEvent: Hashable, Sendable {
    /// The key waits for the finger, for sample `number` (from 1).
    case waitingForSample(number: Int)
    /// Sample `number` was taken: its feedback and how many good samples remain.
    case sampleCaptured(number: Int, sample: BioEnrollment.Sample)
}

/// A fingerprint enrollment that finished: the new template, and each sample's feedback in
/// the order the key gave it.
public struct FingerprintEnrollment: Hashable, Sendable {
    /// One sample of the enrollment.
    public struct Sample: Hashable, Sendable {
        /// Its number, from 1.
        public var number: Int
        /// The key's feedback on it, and how many good samples remained after it.
        public var sample: BioEnrollment.Sample
    }

    /// The enrolled template.
    public var template: FingerprintTemplate
    /// Every sample taken, good and bad.
    public var samples: [Sample]

    /// The enrollment on the key at `device` as a JSON document (`bio enroll --json`): {device,
    /// id (base64url), name (or null), samples: [{sample, status, statusCode, remaining}]}.
    public func json(device: String) -> JSONValue {
        .members([
            ("device", .string(device)), ("id", .string(Base64URL.encode(template.id))),
            ("name", template.shownName.map(JSONValue.string) ?? .null),
            ("samples", .array(samples.map { $0.sample.json(number: $0.number) })),
        ])
    }
}

/// Lets a caller abandon a fingerprint enrollment in a way the key hears of: the capture in
/// progress is cancelled (CTAPHID_CANCEL) and cancelCurrentEnrollment is sent.
///
/// Cancelling the enrolling task instead also ends the enrollment, but a cancelled task can
/// send nothing more, so the key is only told by the transport's cancel; the next enrollment
/// then starts afresh on the key anyway.
public final class FingerprintEnrollmentCancellation: Sendable {
    private let cancelled = Atomic<Bool>(false)

    /// A cancellation not yet requested.
    public init() {}

    /// Asks the enrollment to stop; it returns with ``AuthenticatorError/Code/cancelled``.
    public func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Whether ``cancel()`` ran.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Returns once ``cancel()`` ran; throws CancellationError when the waiting task is cancelled.
    func wait() async throws {
        while !isCancelled { try await Task.sleep(for: .milliseconds(50)) }
    }
}

/// Fingerprint enrollment (CTAP 2.1 §6.7) through the device layer.
///
/// Everything but the sensor description needs a token with the be permission. Per §6.5.5.7.3
/// built-in UV may issue one only where the key lists `uvBioEnroll`; otherwise (and always for
/// a key with nothing enrolled yet) the PIN is asked for. Each method runs its whole sequence
/// with one token, wipes it, and reads getInfo again where the enrollment state changed
/// (`bioEnroll` and `uv` follow whether a finger is enrolled).
extension Authenticator {
    /// Whether the key offers fingerprint enrollment (full or FIDO_2_1_PRE preview).
    public var supportsBioEnrollment: Bool { BioEnrollmentRequest.command(for: info) != nil }

    /// The most samples an enrollment takes, good and bad, before the key is deemed to loop.
    public static let maxEnrollmentSamples = 64

    /// The least time to give an enrollment (5 minutes): each of its samples waits for the
    /// user to lift and place the finger again.
    public static let enrollmentTime: Duration = .seconds(300)

    /// The fingerprint sensor's kind and limits (no PIN needed).
    public func fingerprintSensorInfo(deadline: Deadline) async throws(AuthenticatorError) -> BioEnrollment.SensorInfo {
        let bio = try bioEnrollment(token: nil)
        do { return try await bio.sensorInfo(deadline: deadline) } catch { throw AuthenticatorError(error, deviceURI: uri) }
    }

    /// Runs `body` with a ``BioEnrollment`` holding a fresh be token, then wipes the token,
    /// whatever `body` did.
    @discardableResult
    public func withBioEnrollment<T: Sendable>(
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline,
        _ body: @Sendable (BioEnrollment) async throws(CTAP2Error) -> T
    ) async throws(AuthenticatorError) -> T {
        _ = try bioEnrollment(token: nil)
        // One ceremony: the key is held from the token to the last command (Authenticator+Ceremony.swift).
        return try await withCeremony { () throws(AuthenticatorError) -> T in
            let token = try await bioEnrollmentToken(interaction: interaction, deadline: deadline)
            defer { token.wipe() }
            let bio = try bioEnrollment(token: token)
            do throws(CTAP2Error) {
                return try await body(bio)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
    }

    /// The enrolled fingerprints.
    public func fingerprints(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> [FingerprintTemplate]
    {
        try await withBioEnrollment(interaction: interaction, deadline: deadline) { (bio) throws(CTAP2Error) in
            try await bio.enrollments(deadline: deadline)
        }
    }

    /// Enrolls a finger: enrollBegin, then enrollCaptureNextSample until no good sample remains,
    /// reporting each wait and each sample's feedback through `progress`; names the new template
    /// `name` where given, and returns it with every sample's feedback. Give it a deadline of at
    /// least ``enrollmentTime``. `sampleTimeout` bounds the key's wait for each sample.
    ///
    /// `cancellation` abandons the enrollment and tells the key (cancelCurrentEnrollment); so
    /// does any failure after enrollBegin. A key that keeps asking for samples past
    /// ``maxEnrollmentSamples`` is refused.
    public func enrollFingerprint(
        name: String? = nil, sampleTimeout: Duration? = nil, cancellation: FingerprintEnrollmentCancellation? = nil,
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline,
        progress: @escaping @Sendable (FingerprintEnrollmentEvent) -> Void = { _ in }
    ) async throws(AuthenticatorError) -> FingerprintEnrollment {
        let sensor = try await fingerprintSensorInfo(deadline: deadline)
        if let name, let limit = sensor.maxTemplateFriendlyName, UInt64(name.utf8.count) > limit {
            throw AuthenticatorError(
                CTAP2Error.invalidRequest(
                    "The key stores fingerprint names of at most \(limit) bytes; \"\(name)\" has \(name.utf8.count)."),
                deviceURI: uri)
        }
        // The key's keepalives while it waits for the finger are not touch requests: `progress`
        // already told the user what to do.
        let keepalive: @Sendable (KeepaliveStatus) -> Void = { _ in }
        let enrollment = try await withBioEnrollment(interaction: interaction, deadline: deadline) {
            (bio) throws(CTAP2Error) -> FingerprintEnrollment in
            var templateID: [UInt8]?
            var samples: [FingerprintEnrollment.Sample] = []
            do throws(CTAP2Error) {
                progress(.waitingForSample(number: 1))
                let first = try await Self.capture(cancellation) { () throws(CTAP2Error) in
                    try await bio.beginEnrollment(timeout: sampleTimeout, deadline: deadline, keepalive: keepalive)
                }
                templateID = first.templateID
                samples.append(FingerprintEnrollment.Sample(number: 1, sample: first.sample))
                progress(.sampleCaptured(number: 1, sample: first.sample))
                var remaining = first.sample.remainingSamples
                var number = 1
                while remaining > 0 {
                    number += 1
                    guard number <= Self.maxEnrollmentSamples else {
                        throw CTAP2Error.malformed(
                            "The key still wants samples after \(Self.maxEnrollmentSamples); the enrollment was abandoned.")
                    }
                    progress(.waitingForSample(number: number))
                    let sample = try await Self.capture(cancellation) { () throws(CTAP2Error) in
                        try await bio.captureNextSample(
                            templateID: first.templateID, timeout: sampleTimeout, deadline: deadline,
                            keepalive: keepalive)
                    }
                    samples.append(FingerprintEnrollment.Sample(number: number, sample: sample))
                    progress(.sampleCaptured(number: number, sample: sample))
                    remaining = sample.remainingSamples
                }
            } catch {
                // The key keeps an enrollment in progress until told; a cancelled task cannot tell it.
                if templateID != nil || error.code == .cancelled, !Task.isCancelled {
                    try? await bio.cancelEnrollment(deadline: .after(.seconds(5)))
                }
                throw error
            }
            guard let id = templateID else { throw CTAP2Error.malformed("The enrollment produced no template ID.") }
            if let name {
                try await bio.setFriendlyName(
                    templateID: id, name: name, maxLength: sensor.maxTemplateFriendlyName, deadline: deadline)
            }
            return FingerprintEnrollment(template: FingerprintTemplate(id: id, friendlyName: name), samples: samples)
        }
        try await refreshInfo(deadline: deadline)
        return enrollment
    }

    /// Names the enrolled fingerprint `id`.
    public func renameFingerprint(id: [UInt8], name: String, interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError)
    {
        let limit = try await fingerprintSensorInfo(deadline: deadline).maxTemplateFriendlyName
        try await withBioEnrollment(interaction: interaction, deadline: deadline) { (bio) throws(CTAP2Error) in
            try await bio.setFriendlyName(templateID: id, name: name, maxLength: limit, deadline: deadline)
        }
    }

    /// Deletes the enrolled fingerprint `id`.
    public func deleteFingerprint(id: [UInt8], interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError)
    {
        try await withBioEnrollment(interaction: interaction, deadline: deadline) { (bio) throws(CTAP2Error) in
            try await bio.removeEnrollment(templateID: id, deadline: deadline)
        }
        try await refreshInfo(deadline: deadline)
    }

    // MARK: Internals

    func bioEnrollment(token: PINUVAuthToken?) throws(AuthenticatorError) -> BioEnrollment {
        guard supportsBioEnrollment else {
            throw AuthenticatorError(
                .notSupported, "The security key has no fingerprint sensor to enroll (no bioEnroll).", deviceURI: uri)
        }
        do { return try BioEnrollment(session: session, info: info, token: token, logger: logger) } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// A be token: built-in UV where the key allows it for enrollment (`uvBioEnroll`) and a
    /// finger is enrolled, else the PIN.
    func bioEnrollmentToken(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> PINUVAuthToken
    {
        if info.options.isEnabled(.userVerification) && info.options.isEnabled(.uvBioEnroll)
            && info.options.isEnabled(.pinUVAuthToken)
        {
            if case .token(let token) = try await verifyUser(
                permissions: [.bioEnrollment], rpID: nil, interaction: interaction, deadline: deadline)
            {
                return token
            }
        }
        guard info.options.isEnabled(.clientPIN) else {
            throw AuthenticatorError(
                .pinNotSet, "Fingerprint enrollment needs the key's PIN: set one first (securitykey pin set).",
                deviceURI: uri)
        }
        return try await pinToken(permissions: [.bioEnrollment], rpID: nil, interaction: interaction, deadline: deadline)
    }

    /// Runs one capture request, abandoning it (the transport cancels it on the key) when
    /// `cancellation` fires first.
    private static func capture<T: Sendable>(
        _ cancellation: FingerprintEnrollmentCancellation?,
        _ request: @escaping @Sendable () async throws(CTAP2Error) -> T
    ) async throws(CTAP2Error) -> T {
        guard let cancellation else { return try await request() }
        if cancellation.isCancelled { throw CTAP2Error.cancelled("The fingerprint enrollment was cancelled.") }
        let outcome = await withTaskGroup(of: Result<T, CTAP2Error>?.self) { group in
            group.addTask { () async -> Result<T, CTAP2Error>? in
                do throws(CTAP2Error) { return .success(try await request()) } catch { return .failure(error) }
            }
            group.addTask { () async -> Result<T, CTAP2Error>? in
                // Nil when the capture finished first and this waiter was cancelled.
                do { try await cancellation.wait() } catch { return nil }
                return .failure(CTAP2Error.cancelled("The fingerprint enrollment was cancelled."))
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return Result<T, CTAP2Error>.failure(CTAP2Error.cancelled("The fingerprint enrollment was cancelled."))
        }
        return try outcome.get()
    }
}

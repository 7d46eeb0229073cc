// The simulated fingerprint sensor as the program serving a key configures it: its limits, the
// samples the user presents (`virtual serve --bio-samples`) and the accessors tools and tests
// use. None of it reads bytes from a host: authenticatorBioEnrollment itself is in
// VirtualKey+BioEnrollment.swift, a `virtual-key` fuzz target file (Docs/Fuzzing.md).

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

    /// The enrolled fingerprints, as ID and friendly name (for tests and tools).
    public var fingerprintEnrollments: [(id: [UInt8], name: String?)] {
        state.fingerprints.map { ($0.templateID, $0.friendlyName) }
    }

    /// Replaces the scripted samples still to come (the configured script is dropped).
    public func setFingerprintSamples(_ samples: [ScriptedFingerprintSample]) {
        bioSession.script = samples
        bioSession.consumed = 0
    }

    /// Whether an enrollment was begun and neither finished nor cancelled (for tests).
    public var fingerprintEnrollmentInProgress: Bool { bioSession.pending != nil }
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

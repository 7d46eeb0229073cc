import _SecurityKeyInternals
import Logging

/// What a program serving virtual keys was asked for, as the user wrote it (the flags of
/// `securitykey virtual serve`): ``validate()`` checks the choices against each other, and
/// ``settings()``, ``transport(environment:processID:)`` and ``userPresence()`` parse them into
/// the values ``VirtualKeyServer`` takes. Every refusal is a ``VirtualKeyError`` with code
/// ``VirtualKeyError/Code/invalidConfiguration`` and one sentence naming the flag.
public struct VirtualKeyOptions: Sendable, Hashable {
    /// Serve the key as a card to vpcd (PC/SC).
    public var pcsc = false
    /// Serve the key as CTAPHID over UDP.
    public var udp = false
    /// Serve the key as a USB HID device through /dev/uhid.
    public var uhid = false
    /// `HOST:PORT`: where vpcd listens (pcsc) or where to listen (udp).
    public var address: String?
    /// The USB serial number of the uhid device.
    public var serial: String?
    /// The state file.
    public var state: String?
    /// How the simulated user answers touch requests (``UserPresencePolicy/init(name:)``).
    public var presence = "auto"
    /// A PIN the key starts with.
    public var pin: String?
    /// The AAGUID of a new key, as a UUID.
    public var aaguid: String?
    /// Attestation of new credentials: packed, self or none.
    public var attestation = "packed"
    /// Where the attestation root certificate is written.
    public var attestationRoot: String?
    /// A PEM P-256 private key to attest with instead of the state's (with
    /// ``attestationCertificate``).
    public var attestationKey: String?
    /// A PEM file of the certificates that go with ``attestationKey``: the attestation
    /// certificate first, then the CAs above it.
    public var attestationCertificate: String?
    /// The profile's name (``VirtualKeySettings/Profile``).
    public var profile: String?
    /// Start with enterprise attestation enabled.
    public var enterpriseAttestation = false
    /// RP IDs that get an enterprise attestation for enterpriseAttestation 1.
    public var enterpriseAttestationRPs: [String] = []
    /// Start with alwaysUv on.
    public var alwaysUV = false
    /// The extensions, comma-separated, replacing the profile's.
    public var extensions: String?
    /// The longest credBlob stored.
    public var maxCredBlobLength = 32
    /// A simulated fingerprint sensor.
    public var bio = false
    /// The fingerprint samples the user presents (``ScriptedFingerprintSample/parse(_:)``).
    public var bioSamples: String?
    /// Good samples an enrollment needs.
    public var bioSamplesRequired: Int?
    /// A key that speaks only CTAP1/U2F.
    public var ctap1Only = false
    /// maxSerializedLargeBlobArray.
    public var maxLargeBlob: Int?
    /// The COSE algorithms, comma-separated names or numbers.
    public var algorithms: String?
    /// How many keys one process serves (udp).
    public var count = 1
    /// Milliseconds every CTAP2 and U2F command takes at least.
    public var latency: Int?
    /// The file tokens and shared secrets are appended to (leak tests only).
    public var secretsLog: String?
    /// Tests only: the ``VirtualKeyFault`` the servers show, by name (`--fault`).
    public var fault: String?
    /// The CTAP 2.2 choices (the ctap22 profile only).
    public var ctap22 = CTAP22()

    /// The CTAP 2.2 getInfo members and behaviours a ctap22 key can be given.
    public struct CTAP22: Sendable, Hashable {
        /// Enforce a PIN complexity policy (pinComplexityPolicy).
        public var pinComplexity = false
        /// pinComplexityPolicyURL.
        public var pinComplexityURL: String?
        /// maxPINLength, 4 to 63.
        public var maxPINLength: Int?
        /// longTouchForReset.
        public var longTouchReset = false
        /// transportsForReset, comma-separated.
        public var resetTransports: String?
        /// preferredPlatformUvAttempts, 1 to 25.
        public var uvAttempts: Int?
        /// How the simulated finger answers built-in user verification: match or mismatch.
        public var fingerprint: String?

        /// Creates the defaults (none of them used).
        public init() {}

        /// Whether any choice but `fingerprint` was made.
        public var isUsed: Bool {
            pinComplexity || pinComplexityURL != nil || maxPINLength != nil || longTouchReset
                || resetTransports != nil || uvAttempts != nil
        }

        /// The built-in verification answer `fingerprint` names (match when not given).
        public var userVerification: UserVerificationPolicy { fingerprint == "mismatch" ? .mismatch : .match }

        /// Checks each value's range.
        public func validate() throws(VirtualKeyError) {
            if pinComplexityURL != nil, !pinComplexity { throw refusal("--pin-complexity-url needs --pin-complexity.") }
            if let maxPINLength, !(4...63).contains(maxPINLength) { throw refusal("--max-pin-length takes 4 to 63.") }
            if let uvAttempts, !(1...25).contains(uvAttempts) { throw refusal("--uv-attempts takes 1 to 25.") }
            if let fingerprint, !["match", "mismatch"].contains(fingerprint) {
                throw refusal("--fingerprint takes match or mismatch.")
            }
        }

        /// Sets the CTAP 2.2 features of `settings`.
        public func apply(to settings: inout VirtualKeySettings) {
            settings.ctap22.pinComplexityPolicy = pinComplexity
            settings.ctap22.pinComplexityPolicyURL = pinComplexityURL
            if let maxPINLength { settings.ctap22.maxPINLength = maxPINLength }
            settings.ctap22.longTouchForReset = longTouchReset
            settings.ctap22.transportsForReset = resetTransports.map {
                $0.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }
            }
            if let uvAttempts { settings.ctap22.preferredPlatformUVAttempts = uvAttempts }
        }
    }

    /// The most keys one process serves.
    public static let maximumCount = VirtualKeyServer.maximumCount
    /// The longest latency: a minute, past which hosts give up anyway.
    public static let maximumLatency = 60_000

    /// Creates the defaults: nothing chosen yet.
    public init() {}

    /// The profile chosen: ctap22 unless `profile` names another (ctap20 for a U2F-only key).
    public var chosenProfile: VirtualKeySettings.Profile {
        profile.flatMap(VirtualKeySettings.Profile.init(rawValue:)) ?? (ctap1Only ? .ctap20 : .ctap22)
    }

    /// Whether the key gets a fingerprint sensor.
    public var wantsBio: Bool { bio || bioSamples != nil || bioSamplesRequired != nil }

    /// Checks the choices against each other, in the order the CLI documents them.
    public func validate() throws(VirtualKeyError) {
        guard [pcsc, udp, uhid].filter({ $0 }).count == 1 else {
            throw refusal("Choose exactly one of --pcsc, --udp and --uhid.")
        }
        if uhid, address != nil { throw refusal("--uhid takes no address.") }
        if !uhid, serial != nil { throw refusal("--serial goes with --uhid.") }
        if secretsLog != nil, count > 1 { throw refusal("--secrets-log goes with one key; leave out --count.") }
        _ = try userPresence()
        try validateMany()
        if let profile, VirtualKeySettings.Profile(rawValue: profile) == nil {
            throw refusal("--profile takes ctap22, ctap21, ctap21-pre or ctap20, not \"\(profile)\".")
        }
        let profile = chosenProfile
        if wantsBio, profile == .ctap20 {
            throw refusal("--bio, --bio-samples and --bio-samples-required need --profile ctap22, ctap21 or ctap21-pre.")
        }
        if ctap22.fingerprint != nil, !wantsBio { throw refusal("--fingerprint needs --bio.") }
        if ctap22.isUsed, profile != .ctap22 {
            throw refusal(
                "--pin-complexity, --max-pin-length, --long-touch-reset, --reset-transports and --uv-attempts need --profile ctap22.")
        }
        if let bioSamplesRequired, !(1...50).contains(bioSamplesRequired) {
            throw refusal("--bio-samples-required takes 1 to 50.")
        }
        if let bioSamples {
            do { _ = try ScriptedFingerprintSample.parse(bioSamples) } catch {
                throw refusal("--bio-samples: \(error.message)")
            }
        }
        if ctap1Only, self.profile != nil || pin != nil || wantsBio {
            throw refusal("--ctap1-only makes a U2F key: it takes no --profile, no --pin and no --bio.")
        }
        let isCTAP21 = profile == .ctap21 || profile == .ctap22
        if !isCTAP21, enterpriseAttestation || alwaysUV || !enterpriseAttestationRPs.isEmpty {
            throw refusal(
                "--enterprise-attestation, --enterprise-attestation-rp and --always-uv need --profile ctap22 or ctap21.")
        }
        if (attestationKey == nil) != (attestationCertificate == nil) {
            throw refusal("--attestation-key and --attestation-certificate go together.")
        }
        if attestationKey != nil, attestation != "packed" {
            throw refusal("--attestation-key and --attestation-certificate need --attestation packed.")
        }
        if let maxLargeBlob {
            guard isCTAP21 else { throw refusal("--max-large-blob needs --profile ctap22 or ctap21.") }
            guard (1024...(1 << 20)).contains(maxLargeBlob) else {
                throw refusal("--max-large-blob takes 1024 to 1048576 bytes.")
            }
        }
        if let fault, !VirtualKeyFault.all.map(\.rawValue).contains(fault) {
            throw refusal("--fault takes silent-after-select or silent-after-init, not \"\(fault)\".")
        }
    }

    /// Checks `count` and `latency` against each other and the other choices.
    func validateMany() throws(VirtualKeyError) {
        if let latency, latency < 0 || latency > Self.maximumLatency {
            throw refusal("--latency takes 0 to \(Self.maximumLatency) ms.")
        }
        guard count >= 1, count <= Self.maximumCount else { throw refusal("--count takes 1 to \(Self.maximumCount).") }
        guard count > 1 else { return }
        guard udp else { throw refusal("--count goes with --udp.") }
        // Each key has its own identity; options naming one key's would be ambiguous.
        if state != nil || aaguid != nil || attestationRoot != nil || attestationKey != nil {
            throw refusal(
                "--state, --aaguid, --attestation-root and --attestation-key name one key; not with --count.")
        }
        if let parsed = try? Self.parseManyAddress(address), parsed.port != 0,
            Int(parsed.port) + count - 1 > Int(UInt16.max)
        {
            throw refusal("--count \(count) from port \(parsed.port) runs past port 65535.")
        }
    }

    /// The simulated user's answer to touch requests.
    public func userPresence() throws(VirtualKeyError) -> UserPresencePolicy {
        guard let policy = UserPresencePolicy(name: presence) else {
            throw refusal("--presence takes auto, delay:MS (0 to 600000), deny or never, not \"\(presence)\".")
        }
        return policy
    }

    /// Where to serve: uhid with its serial number (default: one naming `processID`), udp at the
    /// address (for several keys, HOST:0 allowed; default 127.0.0.1:8111), or pcsc to vpcd (the
    /// address, else SECURITYKEY_VPCD_HOST and SECURITYKEY_VPCD_PORT from `environment`, else
    /// 127.0.0.1:35963).
    public func transport(environment: [String: String], processID: Int32) throws(VirtualKeyError)
        -> VirtualKeyTransport
    {
        if uhid {
            let serialNumber = serial ?? "SKVIRTUAL-\(processID)"
            guard VirtualKeyTransport.isValidSerialNumber(serialNumber) else {
                throw refusal("--serial takes up to 63 ASCII characters, no newline or '='.")
            }
            return .uhid(serialNumber: serialNumber)
        }
        if udp {
            let target: (host: String, port: UInt16) =
                count > 1 ? try Self.parseManyAddress(address) : try address.map(Self.parseAddress) ?? ("127.0.0.1", 8111)
            return .udp(host: target.host, port: target.port)
        }
        let target: (host: String, port: UInt16) =
            try address.map(Self.parseAddress)
            ?? (environment["SECURITYKEY_VPCD_HOST"] ?? "127.0.0.1", environment["SECURITYKEY_VPCD_PORT"].flatMap { UInt16($0) } ?? 35963)
        return .pcsc(vpcdHost: target.host, vpcdPort: target.port)
    }

    /// The key the choices describe.
    public func settings() throws(VirtualKeyError) -> VirtualKeySettings {
        var settings = VirtualKeySettings()
        settings.profile = chosenProfile
        ctap22.apply(to: &settings)
        settings.ctap1Only = ctap1Only
        settings.alwaysUV = alwaysUV
        settings.enterpriseAttestation = enterpriseAttestation
        settings.enterpriseAttestationRPIDs = enterpriseAttestationRPs
        settings.maxLargeBlobArray = maxLargeBlob
        if let algorithms { settings.algorithms = try Self.parseAlgorithms(algorithms) }
        if let aaguid {
            guard let bytes = Hex.decodeUUID(aaguid) else {
                throw refusal("--aaguid takes a UUID such as 01234567-89ab-cdef-0123-456789abcdef.")
            }
            settings.aaguid = bytes
        }
        switch attestation {
        case "packed": settings.attestation = .packed
        case "self": settings.attestation = .selfAttestation
        case "none": settings.attestation = .none
        default: throw refusal("--attestation takes packed, self or none.")
        }
        if let attestationKey, let attestationCertificate {
            settings.attestationIdentity = try VirtualKey.ImportedAttestationIdentity(
                privateKeyPEM: try Self.readPEM(attestationKey, "--attestation-key"),
                certificatesPEM: try Self.readPEM(attestationCertificate, "--attestation-certificate"))
        }
        settings.pin = pin
        settings.extensions = extensions.map { $0.split(separator: ",").map { $0.trimmingWhitespace(newlines: false) } }
        settings.maxCredBlobLength = maxCredBlobLength
        if wantsBio {
            var sensor = VirtualKey.FingerprintSensor()
            if let bioSamplesRequired { sensor.samplesRequired = bioSamplesRequired }
            if let bioSamples { sensor.samples = try ScriptedFingerprintSample.parse(bioSamples) }
            settings.fingerprintSensor = sensor
        }
        return settings
    }

    /// A comma-separated list of algorithm names or COSE numbers, each implemented, none twice.
    public static func parseAlgorithms(_ text: String) throws(VirtualKeyError) -> [COSEAlgorithm] {
        var list: [COSEAlgorithm] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(item).trimmingWhitespace(newlines: false)
            guard let algorithm = COSEAlgorithm(name: name), COSEAlgorithm.implemented.contains(algorithm) else {
                throw refusal(
                    "--algorithms takes \(COSEAlgorithm.implemented.map(\.name).joined(separator: ", ")) or their COSE numbers, not \"\(name)\".")
            }
            guard !list.contains(algorithm) else { throw refusal("--algorithms names \(name) twice.") }
            list.append(algorithm)
        }
        return list
    }

    /// The text of the PEM file at `path` (at most 1 MiB), given with `flag`.
    static func readPEM(_ path: String, _ flag: String) throws(VirtualKeyError) -> String {
        guard let bytes = FileIO.read(path: path, upTo: (1 << 20) + 1) else {
            throw refusal("\(flag): cannot read \(path).")
        }
        guard bytes.count <= 1 << 20 else { throw refusal("\(flag): \(path) is larger than 1 MiB.") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `HOST:PORT` with a non-empty host and a port from 1 to 65535.
    public static func parseAddress(_ text: String) throws(VirtualKeyError) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else {
            throw refusal("\"\(text)\" is not HOST:PORT.")
        }
        let host = String(text[..<colon])
        guard !host.isEmpty else { throw refusal("\"\(text)\" names no host.") }
        return (host, port)
    }

    /// Where several keys listen: HOST:PORT as for one key, or HOST:0 for any free port each
    /// (default 127.0.0.1:8111).
    public static func parseManyAddress(_ text: String?) throws(VirtualKeyError) -> (host: String, port: UInt16) {
        guard let text else { return ("127.0.0.1", 8111) }
        if text.hasSuffix(":0"), text.count > 2 { return (String(text.dropLast(2)), 0) }
        return try parseAddress(text)
    }
}

extension VirtualKeyOptions {
    /// Refuses a `secretsLog` unless `environment` holds SECURITYKEY_ALLOW_SECRETS_LOG=1: anyone
    /// who reads the file can use the key's PIN-gated commands while a token lives, so it is
    /// never on by default, and only when the caller says it knows.
    public func checkSecretsLog(environment: [String: String]) throws(VirtualKeyError) {
        if secretsLog != nil, environment["SECURITYKEY_ALLOW_SECRETS_LOG"] != "1" {
            throw refusal(
                "--secrets-log writes the key's tokens and shared secrets to a file, for leak tests only; set SECURITYKEY_ALLOW_SECRETS_LOG=1 to confirm."
            )
        }
    }

    /// The server the choices describe: `count` keys made from `settings` (see ``settings()``)
    /// served over `transport` (see ``transport(environment:processID:)``), with the state
    /// file, simulated user, latency and fault chosen, each key's built-in verification
    /// answering as `ctap22.fingerprint` says, and the first key's secrets appended to
    /// `secretsLog`. Throws what ``VirtualKeyServer/init(settings:transport:count:stateFile:userPresence:latency:fault:logger:)``
    /// and ``VirtualKeySecretsLog/init(path:)`` throw.
    public func server(
        transport: VirtualKeyTransport, settings: VirtualKeySettings, logger: Logger = Logger(label: "securitykey.virtual")
    ) async throws -> VirtualKeyServer {
        let server = try VirtualKeyServer(
            settings: settings, transport: transport, count: count, stateFile: state,
            userPresence: try userPresence(), latency: latency.map { .milliseconds($0) },
            fault: fault.map(VirtualKeyFault.init(rawValue:)), logger: logger)
        for key in server.keys { await key.setUserVerification(ctap22.userVerification) }
        if let secretsLog, let key = server.keys.first {
            await key.recordSecrets(to: try VirtualKeySecretsLog(path: secretsLog))
        }
        return server
    }
}

/// A refused choice.
private func refusal(_ message: String) -> VirtualKeyError {
    VirtualKeyError(.invalidConfiguration, message)
}

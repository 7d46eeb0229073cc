import CBOR

/// A user verification modality of authenticatorBioEnrollment (CTAP 2.1 §6.7, "modality").
public struct BioModality: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The modality number.
    public var rawValue: UInt64
    /// Creates a modality from its number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// fingerprint (0x01), the only modality CTAP 2.1 defines.
    public static let fingerprint = BioModality(rawValue: 0x01)

    public var description: String {
        self == .fingerprint ? "fingerprint" : "modality(0x\(String(rawValue, radix: 16)))"
    }
}

/// An authenticatorBioEnrollment subcommand of the fingerprint modality (CTAP 2.1 §6.7,
/// subcommand table).
public struct BioEnrollmentSubcommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The subcommand number.
    public var rawValue: UInt8
    /// Creates a subcommand from its number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// enrollBegin (0x01, §6.7.2).
    public static let enrollBegin = BioEnrollmentSubcommand(rawValue: 0x01)
    /// enrollCaptureNextSample (0x02, §6.7.3).
    public static let enrollCaptureNextSample = BioEnrollmentSubcommand(rawValue: 0x02)
    /// cancelCurrentEnrollment (0x03, §6.7.4; unauthenticated).
    public static let cancelCurrentEnrollment = BioEnrollmentSubcommand(rawValue: 0x03)
    /// enumerateEnrollments (0x04, §6.7.5).
    public static let enumerateEnrollments = BioEnrollmentSubcommand(rawValue: 0x04)
    /// setFriendlyName (0x05, §6.7.6).
    public static let setFriendlyName = BioEnrollmentSubcommand(rawValue: 0x05)
    /// removeEnrollment (0x06, §6.7.7).
    public static let removeEnrollment = BioEnrollmentSubcommand(rawValue: 0x06)
    /// getFingerprintSensorInfo (0x07, §6.7.1; unauthenticated).
    public static let getFingerprintSensorInfo = BioEnrollmentSubcommand(rawValue: 0x07)

    public var description: String {
        switch self {
        case .enrollBegin: "enrollBegin"
        case .enrollCaptureNextSample: "enrollCaptureNextSample"
        case .cancelCurrentEnrollment: "cancelCurrentEnrollment"
        case .enumerateEnrollments: "enumerateEnrollments"
        case .setFriendlyName: "setFriendlyName"
        case .removeEnrollment: "removeEnrollment"
        case .getFingerprintSensorInfo: "getFingerprintSensorInfo"
        default: "subCommand(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// The parameters of authenticatorBioEnrollment (CTAP 2.1 §6.7, parameter table).
///
/// The factories compute the pinUvAuthParam over modality ‖ subCommand ‖ CBOR(subCommandParams)
/// (§6.7) with a token that must carry the be permission; getFingerprintSensorInfo,
/// cancelCurrentEnrollment and getModality go unauthenticated.
public struct BioEnrollmentRequest: CTAP2Request, Hashable {
    /// The CBOR keys of the request.
    public enum Key {
        /// modality (0x01).
        public static let modality: CBORValue = 0x01
        /// subCommand (0x02).
        public static let subCommand: CBORValue = 0x02
        /// subCommandParams (0x03).
        public static let subCommandParams: CBORValue = 0x03
        /// pinUvAuthProtocol (0x04).
        public static let pinUVAuthProtocol: CBORValue = 0x04
        /// pinUvAuthParam (0x05).
        public static let pinUVAuthParam: CBORValue = 0x05
        /// getModality (0x06).
        public static let getModality: CBORValue = 0x06
    }

    /// The CBOR keys inside subCommandParams.
    public enum ParameterKey {
        /// templateId (0x01).
        public static let templateID: CBORValue = 0x01
        /// templateFriendlyName (0x02).
        public static let templateFriendlyName: CBORValue = 0x02
        /// timeoutMilliseconds (0x03).
        public static let timeoutMilliseconds: CBORValue = 0x03
    }

    /// The longest template ID this library sends or accepts, in bytes. The spec sets no
    /// limit; shipped keys use one or two bytes.
    public static let maxTemplateIDLength = 255

    /// authenticatorBioEnrollment (0x09), or the FIDO_2_1_PRE preview command (0x40).
    public var command: CTAP2Command
    /// The modality, absent for getModality.
    public var modality: BioModality?
    /// The subcommand, absent for getModality.
    public var subCommand: BioEnrollmentSubcommand?
    /// The subcommand's parameters.
    public var subCommandParams: CBORMap?
    /// The PIN/UV auth protocol version of the token.
    public var pinUVAuthProtocol: UInt64?
    /// The pinUvAuthParam.
    public var pinUVAuthParam: [UInt8]?
    /// Whether the request asks only for the modality.
    public var getModality: Bool

    /// Creates a request from its members as they are sent; no check is made.
    public init(
        command: CTAP2Command = .bioEnrollment, modality: BioModality? = .fingerprint,
        subCommand: BioEnrollmentSubcommand?, subCommandParams: CBORMap? = nil, pinUVAuthProtocol: UInt64? = nil,
        pinUVAuthParam: [UInt8]? = nil, getModality: Bool = false
    ) {
        self.command = command
        self.modality = modality
        self.subCommand = subCommand
        self.subCommandParams = subCommandParams
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.pinUVAuthParam = pinUVAuthParam
        self.getModality = getModality
    }

    /// A fingerprint request authenticated with `token`: pinUvAuthParam over modality ‖
    /// subCommand ‖ CBOR(subCommandParams) (§6.7).
    public init(
        command: CTAP2Command = .bioEnrollment, subCommand: BioEnrollmentSubcommand,
        subCommandParams: CBORMap? = nil, token: PINUVAuthToken
    ) throws(CTAP2Error) {
        self.init(command: command, subCommand: subCommand, subCommandParams: subCommandParams)
        try authorize(with: token)
    }

    /// The command a key answers: 0x09 when getInfo lists `bioEnroll` (true or false), else
    /// 0x40 when a FIDO_2_1_PRE key lists `userVerificationMgmtPreview`, else nil.
    public static func command(for info: AuthenticatorInfo) -> CTAP2Command? {
        if info.options.isSupported(.bioEnroll) { return .bioEnrollment }
        if info.versions.contains(.fido2_1Pre) && info.options.isSupported(.userVerificationManagementPreview) {
            return .bioEnrollmentPreview
        }
        return nil
    }

    // MARK: Subcommands

    /// getModality: which modality the key's sensor has (unauthenticated, §6.7 "getModality").
    public static func getModality(command: CTAP2Command = .bioEnrollment) -> BioEnrollmentRequest {
        BioEnrollmentRequest(command: command, modality: nil, subCommand: nil, getModality: true)
    }

    /// getFingerprintSensorInfo: the sensor's kind and limits (unauthenticated, §6.7.1).
    public static func getFingerprintSensorInfo(command: CTAP2Command = .bioEnrollment) -> BioEnrollmentRequest {
        BioEnrollmentRequest(command: command, subCommand: .getFingerprintSensorInfo)
    }

    /// enrollBegin: starts a new template and captures its first sample, waiting at most
    /// `timeoutMilliseconds` for the finger where given (§6.7.2).
    public static func enrollBegin(
        timeoutMilliseconds: UInt64? = nil, token: PINUVAuthToken, command: CTAP2Command = .bioEnrollment
    ) throws(CTAP2Error) -> BioEnrollmentRequest {
        var params: CBORMap?
        if let timeoutMilliseconds { params = [ParameterKey.timeoutMilliseconds: .unsigned(timeoutMilliseconds)] }
        return try BioEnrollmentRequest(
            command: command, subCommand: .enrollBegin, subCommandParams: params, token: token)
    }

    /// enrollCaptureNextSample: one more sample for the template `templateID` (§6.7.3).
    public static func enrollCaptureNextSample(
        templateID: [UInt8], timeoutMilliseconds: UInt64? = nil, token: PINUVAuthToken,
        command: CTAP2Command = .bioEnrollment
    ) throws(CTAP2Error) -> BioEnrollmentRequest {
        try checkTemplateID(templateID)
        var params: CBORMap = [ParameterKey.templateID: .byteString(templateID)]
        if let timeoutMilliseconds { params[ParameterKey.timeoutMilliseconds] = .unsigned(timeoutMilliseconds) }
        return try BioEnrollmentRequest(
            command: command, subCommand: .enrollCaptureNextSample, subCommandParams: params, token: token)
    }

    /// cancelCurrentEnrollment: abandons the enrollment in progress (unauthenticated, §6.7.4).
    public static func cancelCurrentEnrollment(command: CTAP2Command = .bioEnrollment) -> BioEnrollmentRequest {
        BioEnrollmentRequest(command: command, subCommand: .cancelCurrentEnrollment)
    }

    /// enumerateEnrollments: every enrolled template's ID and friendly name (§6.7.5).
    public static func enumerateEnrollments(token: PINUVAuthToken, command: CTAP2Command = .bioEnrollment)
        throws(CTAP2Error) -> BioEnrollmentRequest
    {
        try BioEnrollmentRequest(command: command, subCommand: .enumerateEnrollments, token: token)
    }

    /// setFriendlyName: names the template `templateID` (§6.7.6). The name must not be empty.
    public static func setFriendlyName(
        templateID: [UInt8], name: String, token: PINUVAuthToken, command: CTAP2Command = .bioEnrollment
    ) throws(CTAP2Error) -> BioEnrollmentRequest {
        try checkTemplateID(templateID)
        guard !name.isEmpty else { throw .invalidRequest("A fingerprint's friendly name cannot be empty.") }
        return try BioEnrollmentRequest(
            command: command, subCommand: .setFriendlyName,
            subCommandParams: [
                ParameterKey.templateID: .byteString(templateID), ParameterKey.templateFriendlyName: .textString(name),
            ], token: token)
    }

    /// removeEnrollment: deletes the template `templateID` (§6.7.7).
    public static func removeEnrollment(
        templateID: [UInt8], token: PINUVAuthToken, command: CTAP2Command = .bioEnrollment
    ) throws(CTAP2Error) -> BioEnrollmentRequest {
        try checkTemplateID(templateID)
        return try BioEnrollmentRequest(
            command: command, subCommand: .removeEnrollment,
            subCommandParams: [ParameterKey.templateID: .byteString(templateID)], token: token)
    }

    private static func checkTemplateID(_ id: [UInt8]) throws(CTAP2Error) {
        guard FingerprintTemplate.isValidID(id) else {
            throw .invalidRequest(
                "A fingerprint template ID has 1 to \(maxTemplateIDLength) bytes, not \(id.count).")
        }
    }

    // MARK: CTAP2Request

    /// The request's parameter map; absent members are omitted.
    public var parameters: CBORMap? {
        var m = CBORMap()
        if let modality { m[Key.modality] = .unsigned(modality.rawValue) }
        if let subCommand { m[Key.subCommand] = .unsigned(UInt64(subCommand.rawValue)) }
        if let subCommandParams { m[Key.subCommandParams] = .map(subCommandParams) }
        if let pinUVAuthProtocol { m[Key.pinUVAuthProtocol] = .unsigned(pinUVAuthProtocol) }
        if let pinUVAuthParam { m[Key.pinUVAuthParam] = .byteString(pinUVAuthParam) }
        if getModality { m[Key.getModality] = .boolean(true) }
        return m
    }

    /// Refuses a command byte other than the two bio enrollment commands.
    public func validate() throws(CTAP2Error) {
        guard command == .bioEnrollment || command == .bioEnrollmentPreview else {
            throw .invalidRequest("\(command) is not a bio enrollment command.")
        }
    }

    /// The decoded reply.
    public typealias Response = BioEnrollmentResponse
}

extension CTAP2Command {
    /// authenticatorBioEnrollment (§6.7).
    public static let bioEnrollment = CTAP2Command(0x09, name: "authenticatorBioEnrollment")
    /// The pre-standard (FIDO_2_1_PRE) authenticatorBioEnrollment.
    public static let bioEnrollmentPreview = CTAP2Command(
        0x40, name: "authenticatorBioEnrollment (preview)")
}

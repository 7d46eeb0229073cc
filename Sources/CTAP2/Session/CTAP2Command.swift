/// A CTAP2 command byte (CTAP 2.1 §6 "Authenticator API", command table in §6).
///
/// Each command's byte and name are declared in its own folder, beside its request type
/// (`extension CTAP2Command { public static let … }`); a command read off the wire
/// (``init(rawValue:)``) takes its name from ``known``.
public struct CTAP2Command: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The command byte.
    public let rawValue: UInt8
    /// The specification's name (`authenticatorMakeCredential`), if the command is known.
    public let name: String?

    /// A command declared by its folder: its byte and the specification's name.
    public init(_ rawValue: UInt8, name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    /// Creates a command from its byte, named when it is one of ``known``.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
        self.name = Self.names[Int(rawValue)]
    }

    /// The commands this library sends, so that a byte read off the wire (a capture, a log)
    /// gets its name. Each is declared in its command's folder.
    public static let known: [CTAP2Command] = [
        .makeCredential, .getAssertion, .getInfo, .clientPIN, .reset, .getNextAssertion, .bioEnrollment,
        .credentialManagement, .selection, .largeBlobs, .config, .bioEnrollmentPreview,
        .credentialManagementPreview,
    ]

    /// ``known``'s names indexed by command byte.
    private static let names: [String?] = {
        var names = [String?](repeating: nil, count: 256)
        for command in known { names[Int(command.rawValue)] = command.name }
        return names
    }()

    /// Commands are the same when their bytes are.
    public static func == (lhs: CTAP2Command, rhs: CTAP2Command) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    public var description: String { name ?? "command(0x\(String(rawValue, radix: 16)))" }
}
